// SPDX-License-Identifier: Apache-2.0
//! The kdump scenario: apply installs kdump-tools from the Debian mirror, config puts
//! `crashkernel=256M` on the boot configuration (instead of kdump-tools' own
//! `crashkernel=384M-:128M`), a real reboot reserves the memory and kdump-tools loads
//! a crash kernel (its first boot also builds the kdump initrd: ~70 s), which
//! post-interrupt-check proves; uninstall, a reboot, and nothing is reserved any more.

use std::time::Duration;

use crate::vm::Vm;

/// Shared by every boot.
const DEFINES: &str = r#"
saved=/var/lib/vmtest
tracked="/etc /boot/grub/grub.cfg /var/lib/skyhook-packages"
reserved() { cat /sys/kernel/kexec_crash_size; }
# the crashkernel= arguments of grub.cfg's entries, distinct
grub_crashkernel() { grep -o 'crashkernel=[^ ]*' /boot/grub/grub.cfg | sort -u | paste -sd' '; }
"#;

/// Boot 1: everything the agent runs before the interrupt.
const INSTALL: &str = r#"
mkdir -p $saved
snapshot $tracked > $saved/snapshot
expect_eq "memory reserved before" "$(reserved)" 0

crash --lifecycle --until-interrupt
expect_eq "kdump-tools" "$(dpkg_status kdump-tools)" installed
expect_eq "the kdump-tools service" "$(systemctl is-enabled kdump-tools)" enabled
expect_eq "crashkernel= in grub.cfg" "$(grub_crashkernel)" crashkernel=256M
! grep -q crashkernel= /proc/cmdline || fail "crashkernel= on the command line before the reboot"
record early-check crash post-interrupt
expect_eq "post-interrupt-check before the reboot" "$(cat early-check.code)" 1
"#;

/// Boot 2: the reserved memory and the crash kernel, then uninstall.
const AFTER_REBOOT: &str = r#"
keep /proc/cmdline
on_cmdline crashkernel=256M || fail "crashkernel=256M is not on /proc/cmdline"
expect_eq "memory reserved" "$(reserved)" 268435456
expect_eq "crash kernel loaded" "$(cat /sys/kernel/kexec_crash_loaded)" 1
expect_eq "the kdump-tools service" "$(systemctl is-active kdump-tools)" active
crash post-interrupt
expect_untouched "config again, same configMap" "$tracked" crash config

crash uninstall
expect_eq "kdump-tools" "$(dpkg_status kdump-tools)" not-installed
expect_eq "crashkernel= in grub.cfg" "$(grub_crashkernel)" ""
expect_gone /etc/default/grub.d/kdump-tools.cfg /etc/default/kdump-tools /var/lib/skyhook-packages/kdump/crash
expect_eq "memory reserved until the next boot" "$(reserved)" 268435456
"#;

/// Boot 3: after uninstall and a reboot.
const AFTER_UNINSTALL: &str = r#"
keep /proc/cmdline
! grep -q crashkernel= /proc/cmdline || fail "crashkernel= is still on /proc/cmdline"
expect_eq "memory reserved" "$(reserved)" 0
expect_eq "crash kernel loaded" "$(cat /sys/kernel/kexec_crash_loaded)" 0
crash uninstall-check
expect_same_snapshot "after uninstall and a reboot" $saved/snapshot $tracked
"#;

#[test]
#[ignore = "VM tier: needs root, the Debian mirror and minutes; cargo test -p skyhook-pkg --test vm -- --ignored"]
fn kdump() {
    let mut vm = Vm::new("kdump");
    vm.timeout(Duration::from_secs(600)); // apt, initrd builds and a ~70 s boot under TCG
    vm.define(DEFINES).package("crash", "kdump", &[("crashkernel", "256M")]);

    let install = vm.boot("install", INSTALL);
    install.expect_running();
    install
        .script
        .success()
        .expect_step("apply", 0)
        .expect_step("apply-check", 0)
        .expect_step("config", 0)
        .expect_step("config-check", 0)
        .expect_output("[interrupt] stopping here; the package said its change needs: {type: reboot}");
    install
        .record("early-check")
        .expect_step("post-interrupt-check", 1)
        .expect_output("the running kernel was not booted with crashkernel=256M");

    let after = vm.boot("after-reboot", AFTER_REBOOT);
    after.expect_running();
    after
        .script
        .success()
        .expect_step("post-interrupt-check", 0)
        .expect_step("uninstall", 0)
        .expect_step("uninstall-check", 0)
        .expect_output("256 MiB of memory stay reserved for a crash kernel until the next reboot");
    assert!(
        after
            .file("cmdline")
            .split_whitespace()
            .any(|t| t == "crashkernel=256M"),
        "{}",
        after.file("cmdline")
    );

    let back = vm.boot("after-uninstall", AFTER_UNINSTALL);
    back.expect_running();
    back.script.success().expect_step("uninstall-check", 0);
    assert!(
        !back.file("cmdline").contains("crashkernel="),
        "{}",
        back.file("cmdline")
    );
}

// SPDX-License-Identifier: Apache-2.0
//! nvidia-setup's other combinations on one machine, three boots: aks-h100 with the
//! real modprobe, systemd-modules-load, pam_limits and systemd's service limits, and
//! bcm's headers link: bcm-h100 on x86_64 ([`nvidia_setup_aks_bcm`]), bcm-gb200 on
//! arm64 ([`nvidia_setup_aks_bcm_arm64`], where aks-h100 runs too: the package has
//! no architecture rule for it, and an arm64 host with an H100 runs the same steps).
//!
//! containerd and kubelet are stand-in services (`sleep infinity` under those unit
//! names: what the step changes is their limits, which systemd gives any process);
//! the InfiniBand modules are the guest kernel's own (`ib_umad`, `rdma_ucm`: Debian's
//! cloud kernel builds them). bcm's headers are a directory the script makes under
//! the name the headers package uses (Debian's own would pull in a compiler).
//!
//! 1. bcm: apply links `/usr/src/linux-<release>` to the running kernel's headers,
//!    post-interrupt-check passes, uninstall takes the link away. aks: the lifecycle
//!    to the interrupt loads both modules, writes the modules-load.d file, the
//!    limits.d file and the two drop-ins, and asks for a restart of containerd and
//!    kubelet; the script restarts them as the agent would, and post-interrupt-check
//!    reads their unlimited locked memory from `/proc/<pid>/limits`.
//! 2. After a reboot: systemd loaded the modules at boot, the services start with
//!    the limit, a login session has it (root too); post-interrupt-check passes;
//!    uninstall removes the files and restarts nothing (the services keep their
//!    limit until restarted, as the README says); the script restarts them.
//! 3. After another reboot: the modules are not loaded, the services and sessions
//!    have the distribution's limits again, uninstall-check passes, `/etc` is as
//!    before boot 1.

use std::time::Duration;

use crate::arch::Arch;
use crate::vm::Vm;

/// Shared by every boot.
const DEFINES: &str = r#"
services="containerd.service kubelet.service"
files="/etc/modules-load.d/ib-umad.conf /etc/security/limits.d/zz-skyhook-aks-tuning.conf
  /etc/systemd/system/containerd.service.d/zz-skyhook-aks-tuning.conf
  /etc/systemd/system/kubelet.service.d/zz-skyhook-aks-tuning.conf"
saved=/var/lib/vmtest
# memlock UNIT: "soft hard" locked memory of the unit's main process.
memlock() {
    local pid
    pid=$(systemctl show -p MainPID --value "$1")
    [ "$pid" -gt 0 ] || fail "$1 is not running"
    awk 'index($0, "Max locked memory") == 1 { print $(NF-2), $(NF-1) }' "/proc/$pid/limits"
}
# loaded MODULE: whether the module is loaded.
loaded() { [ -d "/sys/module/$1" ]; }
# session_memlock USER: a login session's "soft hard" locked memory.
session_memlock() { su -l -s /bin/sh "$1" -c 'ulimit -Sl; ulimit -Hl' | paste -sd' '; }
"#;

/// bcm's headers link made, checked and taken away (any architecture).
const BCM: &str = r#"
release=$(uname -r)
mkdir -p /usr/src/linux-headers-$release
echo CONFIG_64BIT=y > /usr/src/linux-headers-$release/.config
bcm apply
expect_eq "the headers link" "$(readlink /usr/src/linux-$release)" "linux-headers-$release"
expect_eq "the configuration through the link" "$(cat /usr/src/linux-$release/.config)" CONFIG_64BIT=y
bcm post-interrupt-check
bcm uninstall
expect_gone /usr/src/linux-$release
rm -r /usr/src/linux-headers-$release
"#;

/// Boot 1 after bcm's: aks up to and through its interrupt.
const INSTALL: &str = r#"
for s in $services; do
    printf '[Service]\nType=simple\nExecStart=/bin/sleep infinity\n[Install]\nWantedBy=multi-user.target\n' \
        > /etc/systemd/system/$s
done
systemctl daemon-reload
systemctl enable --now $services
mkdir -p $saved
memlock kubelet.service > $saved/memlock
session_memlock nobody > $saved/session
snapshot /etc > $saved/etc
! loaded ib_umad || fail "ib_umad loaded before apply"

aks --lifecycle --until-interrupt
loaded ib_umad || fail "ib_umad is not loaded"
loaded rdma_ucm || fail "rdma_ucm is not loaded"
expect_exists $files
expect_eq "kubelet's memlock before its restart" "$(memlock kubelet.service)" "$(cat $saved/memlock)"
record early-check aks post-interrupt-check
expect_eq "post-interrupt-check before the restart" "$(cat early-check.code)" 1
systemctl restart $services
for s in $services; do expect_eq "$s's memlock" "$(memlock $s)" "unlimited unlimited"; done
aks post-interrupt
"#;

/// Boot 2: what the boot gives; then uninstall.
const AFTER_REBOOT: &str = r#"
loaded ib_umad || fail "systemd did not load ib_umad at boot"
loaded rdma_ucm || fail "systemd did not load rdma_ucm at boot"
for s in $services; do expect_eq "$s's memlock" "$(memlock $s)" "unlimited unlimited"; done
expect_eq "a login session's memlock" "$(session_memlock nobody)" "unlimited unlimited"
expect_eq "root's login session's memlock" "$(session_memlock root)" "unlimited unlimited"
aks post-interrupt
aks uninstall
expect_gone $files
expect_eq "kubelet's memlock until its restart" "$(memlock kubelet.service)" "unlimited unlimited"
systemctl restart $services
expect_eq "kubelet's memlock after its restart" "$(memlock kubelet.service)" "$(cat $saved/memlock)"
"#;

/// Boot 3: the node after uninstall and a reboot.
const AFTER_UNINSTALL: &str = r#"
! loaded ib_umad || fail "ib_umad loaded at boot after uninstall"
expect_eq "kubelet's memlock" "$(memlock kubelet.service)" "$(cat $saved/memlock)"
expect_eq "a login session's memlock" "$(session_memlock nobody)" "$(cat $saved/session)"
aks uninstall-check
expect_same_snapshot "/etc after uninstall" $saved/etc /etc
"#;

#[test]
#[ignore = "VM tier: needs root, the Debian mirror and minutes; cargo test -p skyhook-pkg --test vm -- --ignored"]
fn nvidia_setup_aks_bcm() {
    scenario(Vm::new("nvidia-setup-aks-bcm"), "h100");
}

/// The arm64 guest, with bcm-gb200. `.ci/run vm_arm64`.
#[test]
#[ignore = "VM tier: needs root, the Debian mirror and minutes; cargo test -p skyhook-pkg --test vm -- --ignored"]
fn nvidia_setup_aks_bcm_arm64() {
    scenario(Vm::new_on("nvidia-setup-aks-bcm-arm64", Arch::Arm64), "gb200");
}

/// The three boots, with bcm's `accelerator` set to `bcm_accelerator`.
fn scenario(mut vm: Vm, bcm_accelerator: &str) {
    vm.timeout(Duration::from_secs(600)); // the tuning engine's pam and systemd work under TCG
    vm.define(DEFINES)
        .package("aks", "nvidia-setup", &[("service", "aks"), ("accelerator", "h100")])
        .package(
            "bcm",
            "nvidia-setup",
            &[("service", "bcm"), ("accelerator", bcm_accelerator)],
        );

    let install = vm.boot("install", &format!("{BCM}{INSTALL}"));
    install.expect_running();
    install
        .script
        .success()
        .expect_step("apply", 0)
        .expect_step("post-interrupt-check", 0)
        .expect_output("the package said its change needs: {type: service");

    let after = vm.boot("after-reboot", AFTER_REBOOT);
    after.expect_running();
    after
        .script
        .success()
        .expect_step("post-interrupt-check", 0)
        .expect_step("uninstall", 0)
        .expect_step("uninstall-check", 0);

    let uninstalled = vm.boot("after-uninstall", AFTER_UNINSTALL);
    uninstalled.expect_running();
    uninstalled.script.success().expect_step("uninstall-check", 0);
}

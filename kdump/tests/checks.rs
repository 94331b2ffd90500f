// SPDX-License-Identifier: Apache-2.0
//! The checks: whole-token comparisons (256M is not 1256M), every missing piece after
//! the reboot reported with what to look at, and every leftover after uninstall.

mod common;

use common::*;
use skyhook_testkit::Node;

const MIB: u64 = 1 << 20;

fn configured(distro: Distro, value: &str) -> Node {
    let node = node(distro);
    node.run("apply").expect_code(0);
    node.configmap("crashkernel", value);
    node.run("config").expect_code(0);
    node
}

fn edit(node: &Node, path: &str, from: &str, to: &str) {
    let text = node.read(path).unwrap();
    assert!(text.contains(from), "{path} lacks {from}");
    node.file(path, text.replace(from, to));
}

#[test]
fn config_check_compares_whole_tokens() {
    // Debian-like: the generated grub.cfg, then the drop-in.
    let node = configured(UBUNTU, "256M");
    edit(&node, "/boot/grub/grub.cfg", "crashkernel=256M", "crashkernel=1256M");
    node.run("config-check")
        .expect_code(1)
        .expect_output("boot entry 1 in /boot/grub/grub.cfg has crashkernel=1256M; expected exactly crashkernel=256M");
    let node = configured(UBUNTU, "256M");
    edit(
        &node,
        "/etc/default/grub.d/kdump-tools.cfg",
        "crashkernel=256M",
        "crashkernel=256M1",
    );
    node.run("config-check")
        .expect_code(1)
        .expect_output("/etc/default/grub.d/kdump-tools.cfg has crashkernel=256M1");

    // The other way round: the configMap asks for 1256M, the node has 256M.
    let node = configured(DEBIAN, "256M");
    node.configmap("crashkernel", "1256M");
    let run = node.run("config-check");
    run.expect_code(1).expect_output("expected exactly crashkernel=1256M");

    // RHEL-like: every grubby entry.
    let node = configured(RHEL, "256M");
    edit(
        &node,
        "/boot/loader/entries/0a1b-0-rescue.conf",
        "crashkernel=256M",
        "crashkernel=1256M",
    );
    node.run("config-check")
        .expect_code(1)
        .expect_output("boot entry of /boot/vmlinuz-0-rescue-0a1b in `grubby --info=ALL` has crashkernel=1256M");
}

#[test]
fn config_check_finds_a_second_crashkernel_from_elsewhere() {
    let node = configured(UBUNTU, "256M");
    edit(
        &node,
        "/etc/default/grub",
        "GRUB_CMDLINE_LINUX=\"\"",
        "GRUB_CMDLINE_LINUX=\"crashkernel=512M\"",
    );
    node.run("config")
        .expect_code(0)
        .expect_output("interrupt needed: none");
    // The stale generated grub.cfg still looks right; regenerate as an admin would.
    node.run_stand_in("update-grub", &[]).expect_code(0);
    node.run("config-check")
        .expect_code(1)
        .expect_output("has crashkernel=512M crashkernel=256M")
        .expect_output("another crashkernel= comes from the GRUB defaults or another drop-in");
}

#[test]
fn config_check_lists_every_unmet_expectation() {
    let node = configured(ROCKY, "256M");
    node.configmap("kdump.conf", "path /var/crash\n");
    node.run("config").expect_code(0);
    node.run("config-check").expect_code(0);
    edit(&node, "/etc/kdump.conf", "/var/crash", "/srv/crash");
    std::fs::remove_file(node.commands_dir().join("systemd/kdump.enabled")).unwrap();
    node.file(
        "/boot/loader/entries/0a1b-5.14.0-427.el9.x86_64.conf",
        "linux /vmlinuz-x\noptions ro\n",
    );
    node.run("config-check")
        .expect_code(1)
        .expect_output("3 unmet expectation(s)")
        .expect_output("boot entry of /boot/vmlinuz-x in `grubby --info=ALL` has no crashkernel=")
        .expect_output("/etc/kdump.conf is not the configMap's kdump.conf (line 1: expected \"path /var/crash\", found \"path /srv/crash\")")
        .expect_output("the kdump service is not enabled");
}

#[test]
fn post_interrupt_check_passes_after_the_reboot() {
    for distro in ALL {
        let node = configured(distro, "1G-4G:192M,4G-64G:256M,64G-:512M");
        reboot(&node, distro, 512 * MIB);
        node.run("post-interrupt-check").expect_code(0);
    }
}

#[test]
fn post_interrupt_check_says_what_to_look_at_for_each_missing_piece() {
    // Not rebooted: /proc/cmdline without the value.
    let node = configured(UBUNTU, "256M");
    reboot(&node, UBUNTU, 256 * MIB);
    node.file(
        "/proc/cmdline",
        "BOOT_IMAGE=/boot/vmlinuz root=UUID=0b1c ro quiet splash\n",
    );
    node.run("post-interrupt-check")
        .expect_code(1)
        .expect_output("the running kernel was not booted with crashkernel=256M: /proc/cmdline has no crashkernel=")
        .expect_output("Has the node rebooted since config?");

    // Whole tokens on /proc/cmdline too.
    node.file("/proc/cmdline", "BOOT_IMAGE=/boot/vmlinuz ro crashkernel=1256M\n");
    node.run("post-interrupt-check")
        .expect_code(1)
        .expect_output("/proc/cmdline has crashkernel=1256M instead");
    node.file(
        "/proc/cmdline",
        "BOOT_IMAGE=/boot/vmlinuz ro crashkernel=256M crashkernel=512M\n",
    );
    node.run("post-interrupt-check")
        .expect_code(1)
        .expect_output("but a later crashkernel=512M overrides it");

    // Booted with it, but nothing reserved.
    let node = configured(RHEL, "256M");
    reboot(&node, RHEL, 0);
    node.run("post-interrupt-check")
        .expect_code(1)
        .expect_output("no memory is reserved for a crash kernel (/sys/kernel/kexec_crash_size is 0)")
        .expect_output("too little free memory")
        .expect_output("dmesg")
        .expect_output("nothing can be loaded while no memory is reserved");

    // A range list without a range for this node.
    let node = configured(RHEL, "128G-:1G");
    reboot(&node, RHEL, 0);
    node.run("post-interrupt-check")
        .expect_code(1)
        .expect_output("no range of crashkernel=128G-:1G covers this node's memory (64 GiB)");

    // Reserved, but no crash kernel loaded; Secure Boot and lockdown named.
    let node = configured(ROCKY, "256M");
    reboot(&node, ROCKY, 256 * MIB);
    node.file("/sys/kernel/kexec_crash_loaded", "0\n")
        .file(
            "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c",
            [6u8, 0, 0, 0, 1],
        )
        .file("/sys/kernel/security/lockdown", "none [integrity] confidentiality\n");
    node.run("post-interrupt-check")
        .expect_code(1)
        .expect_output("no crash kernel is loaded (/sys/kernel/kexec_crash_loaded is \"0\")")
        .expect_output("`kdumpctl status`")
        .expect_output("Secure Boot is enabled")
        .expect_output("kernel lockdown is \"integrity\"");

    // Debian-like with kdump switched off in its configuration.
    let node = configured(DEBIAN, "256M");
    reboot(&node, DEBIAN, 256 * MIB);
    node.file("/sys/kernel/kexec_crash_loaded", "0\n")
        .file("/etc/default/kdump-tools", "USE_KDUMP=0\n");
    node.run("post-interrupt-check")
        .expect_code(1)
        .expect_output("USE_KDUMP is not 1 in /etc/default/kdump-tools")
        .expect_output("`kdump-config show`");

    // The service is not active.
    let node = configured(AMAZON, "256M");
    reboot(&node, AMAZON, 256 * MIB);
    std::fs::remove_file(node.commands_dir().join("systemd/kdump.active")).unwrap();
    node.run("post-interrupt-check")
        .expect_code(1)
        .expect_output("the kdump service is not active: see `kdumpctl status`");

    // All at once: every piece listed.
    let node = configured(UBUNTU, "256M");
    node.file("/sys/kernel/kexec_crash_size", "0\n")
        .file("/sys/kernel/kexec_crash_loaded", "0\n");
    node.run("post-interrupt-check")
        .expect_code(1)
        .expect_output("4 unmet expectation(s)");
}

#[test]
fn post_interrupt_check_without_the_key_needs_some_crashkernel() {
    let node = node(RHEL);
    preinstall(&node, RHEL);
    node.run("apply").expect_code(0);
    node.run("config").expect_code(0);
    reboot(&node, RHEL, 256 * MIB);
    node.run("post-interrupt-check").expect_code(0);
    node.file("/proc/cmdline", "BOOT_IMAGE=/vmlinuz ro\n");
    node.run("post-interrupt-check")
        .expect_code(1)
        .expect_output("booted without crashkernel= (/proc/cmdline) and the configMap has no crashkernel key");
}

#[test]
fn post_interrupt_check_skips_the_service_where_systemd_does_not_run() {
    let node = configured(DEBIAN, "256M");
    reboot(&node, DEBIAN, 256 * MIB);
    std::fs::remove_file(node.commands_dir().join("systemd/kdump-tools.active")).unwrap();
    node.systemd_running(false);
    node.run("post-interrupt-check")
        .expect_code(0)
        .expect_output("not checked: whether kdump-tools is active: systemd is not running");
}

#[test]
fn apply_check_lists_what_is_missing() {
    let node = node(UBUNTU);
    node.run("apply-check")
        .expect_code(1)
        .expect_output("3 unmet expectation(s)")
        .expect_output("kdump-tools is not installed")
        .expect_output("kexec is not on this host")
        .expect_output("the kdump-tools service is not enabled");
}

#[test]
fn uninstall_check_finds_every_leftover() {
    // Config ran, uninstall did not.
    let node = configured(UBUNTU, "256M");
    node.configmap("kdump.conf", "USE_KDUMP=1\n");
    node.run("config").expect_code(0);
    node.run("uninstall-check")
        .expect_code(1)
        .expect_output("/var/lib/skyhook-packages/kdump/kdump/state.json still exists")
        .expect_output("/etc/default/grub.d/kdump-tools.cfg is still the package's")
        .expect_output("crashkernel=256M is still on the boot configuration: /etc/default/grub.d/kdump-tools.cfg, 1 boot entry in /boot/grub/grub.cfg");

    // Uninstall ran, then things came back.
    let node = configured(ROCKY, "256M");
    node.configmap("kdump.conf", "path /srv/crash\n");
    node.run("config").expect_code(0);
    reboot(&node, ROCKY, 256 * MIB);
    node.run("uninstall").expect_code(0);
    node.run("uninstall-check").expect_code(0);
    node.run_stand_in("dnf", &["-y", "install", "kexec-tools"])
        .expect_code(0);
    std::fs::write(node.commands_dir().join("systemd/kdump.enabled"), "").unwrap();
    std::fs::write(node.commands_dir().join("systemd/kdump.active"), "").unwrap();
    // What config had deployed: the configMap's file with auto_reset_crashkernel pinned.
    node.file("/etc/kdump.conf", "path /srv/crash\nauto_reset_crashkernel no\n");
    node.run_stand_in("grubby", &["--update-kernel=ALL", "--args=crashkernel=256M"])
        .expect_code(0);
    node.run("uninstall-check")
        .expect_code(1)
        .expect_output("6 unmet expectation(s)")
        // grubby's ALL also wrote it to GRUB_CMDLINE_LINUX, as the real grubby does.
        .expect_output(
            "crashkernel=256M is still on the boot configuration: /etc/default/grub (GRUB_CMDLINE_LINUX), \
             2 boot entries in `grubby --info=ALL`",
        )
        .expect_output("/etc/kdump.conf still holds the configMap's kdump.conf")
        .expect_output("kexec-tools is still installed")
        .expect_output("kexec is still on this host")
        .expect_output("kdump is still running")
        .expect_output("kdump is still enabled")
        .expect_output("stay reserved for a crash kernel until the next reboot");
}

// SPDX-License-Identifier: Apache-2.0
//! RHEL 9: kdumpctl resets crashkernel= to the distribution's default at every kernel
//! install unless /etc/kdump.conf says `auto_reset_crashkernel no`.
//! The node's kdumpctl stand-in does what the real one does (skyhook-testkit
//! `boot_tools::KDUMPCTL`); `install_kernel` is `dnf install kernel`.

#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use skyhook_testkit::Node;
use skyhook_testkit::boot_tools::bls_options;
use skyhook_testkit::kdumpctl::{RHEL9_DEFAULT_CRASHKERNEL, install_kernel};

const MIB: u64 = 1024 * 1024;
const NEW_KERNEL: &str = "5.14.0-503.el9.x86_64";
const NEW_ENTRY: &str = "/boot/loader/entries/0a1b-5.14.0-503.el9.x86_64.conf";
const OLD_ENTRY: &str = "/boot/loader/entries/0a1b-5.14.0-427.el9.x86_64.conf";
const PINNED_STOCK: &str = "# This file contains a series of commands to perform (in order) in the kdump\n#\nauto_reset_crashkernel no\npath /var/crash\ncore_collector makedumpfile -l --message-level 7 -d 31\n";

/// A RHEL 9 node whose kexec-tools was installed (stock kdump.conf, entries with the
/// distribution's default, kdump enabled) and where config set crashkernel=512M.
fn configured() -> Node {
    let node = node(RHEL);
    preinstall(&node, RHEL);
    node.run("apply").expect_code(0);
    node.configmap("crashkernel", "512M");
    node.run("config").expect_code(0);
    node
}

#[test]
fn the_stand_in_resets_crashkernel_at_a_kernel_install_as_kdumpctl_does() {
    // Without the package: the stock kdump.conf says yes, the new entry gets the default.
    let node = node(RHEL);
    preinstall(&node, RHEL);
    run_grubby(&node, "--args=crashkernel=2G");
    install_kernel(&node, NEW_KERNEL);
    assert!(bls_options(&node, NEW_ENTRY).contains(RHEL9_DEFAULT_CRASHKERNEL));
    assert!(
        bls_options(&node, OLD_ENTRY).contains("crashkernel=2G"),
        "only the new kernel's entry"
    );
}

#[test]
fn a_kexec_tools_update_resets_every_entry_unless_kdump_conf_says_no() {
    let node = configured();
    let update = ["_reset-crashkernel-after-update"];
    node.run_stand_in("kdumpctl", &update).expect_code(0);
    for entry in [OLD_ENTRY, "/boot/loader/entries/0a1b-0-rescue.conf"] {
        assert!(
            bls_options(&node, entry).contains("crashkernel=512M"),
            "{entry} kept ours"
        );
    }
    node.file("/etc/kdump.conf", RHEL_KDUMP_CONF);
    node.run_stand_in("kdumpctl", &update).expect_code(0);
    for entry in [OLD_ENTRY, "/boot/loader/entries/0a1b-0-rescue.conf"] {
        assert!(
            bls_options(&node, entry).contains(RHEL9_DEFAULT_CRASHKERNEL),
            "the stock kdump.conf lets kdumpctl reset {entry}"
        );
    }
    node.run("config-check")
        .expect_code(1)
        .expect_output("3 unmet expectation(s)");
}

#[test]
fn a_kernel_install_keeps_our_crashkernel() {
    let node = configured();
    assert_eq!(
        node.read("/etc/kdump.conf").as_deref(),
        Some(PINNED_STOCK),
        "only the auto_reset_crashkernel line changed"
    );
    install_kernel(&node, NEW_KERNEL);
    assert!(
        bls_options(&node, NEW_ENTRY).contains("crashkernel=512M"),
        "{}",
        bls_options(&node, NEW_ENTRY)
    );
    node.run("config-check").expect_code(0);
}

#[test]
fn drift_behind_our_back_is_reported_by_the_checks_and_repaired_by_config() {
    let node = configured();
    reboot(&node, RHEL, 512 * MIB);
    node.run("post-interrupt-check").expect_code(0);
    // Someone puts the stock kdump.conf back, then `dnf update kernel`.
    node.file("/etc/kdump.conf", RHEL_KDUMP_CONF);
    install_kernel(&node, NEW_KERNEL);
    let drift = format!(
        "boot entry of /boot/vmlinuz-{NEW_KERNEL} in `grubby --info=ALL` has {RHEL9_DEFAULT_CRASHKERNEL}; \
         expected exactly crashkernel=512M"
    );
    node.run("config-check")
        .expect_code(1)
        .expect_output(&drift)
        .expect_output("/etc/kdump.conf does not say `auto_reset_crashkernel no`");
    // The running kernel still has ours; the next boot would not.
    node.run("post-interrupt-check")
        .expect_code(1)
        .expect_output(&drift)
        .expect_output("the next boot loses it");

    node.run("config")
        .expect_code(0)
        .expect_output("putting crashkernel=512M back")
        .expect_output("interrupt needed: {type: reboot}");
    assert!(bls_options(&node, NEW_ENTRY).contains("crashkernel=512M"));
    assert!(!bls_options(&node, NEW_ENTRY).contains(RHEL9_DEFAULT_CRASHKERNEL));
    assert_eq!(node.read("/etc/kdump.conf").as_deref(), Some(PINNED_STOCK));
    node.run("config-check").expect_code(0);
    node.run("config")
        .expect_code(0)
        .expect_output("interrupt needed: none");
}

#[test]
fn the_configmaps_kdump_conf_gets_the_option_with_a_warning_when_it_said_otherwise() {
    let node = configured();
    let given = "path /srv/crash\nauto_reset_crashkernel yes # as shipped\ncore_collector makedumpfile -l -d 31\n";
    node.configmap("kdump.conf", given);
    node.run("config")
        .expect_code(0)
        .expect_output("configMap key \"kdump.conf\" line 2: auto_reset_crashkernel \"yes\" is overridden")
        .expect_output("kdumpctl resets crashkernel=");
    assert_eq!(
        node.read("/etc/kdump.conf").as_deref(),
        Some("path /srv/crash\nauto_reset_crashkernel no\ncore_collector makedumpfile -l -d 31\n")
    );
    node.run("config-check").expect_code(0);
    install_kernel(&node, NEW_KERNEL);
    assert!(bls_options(&node, NEW_ENTRY).contains("crashkernel=512M"));
}

#[test]
fn removing_crashkernel_puts_the_option_back_and_uninstall_restores_kdump_conf_exactly() {
    let node = configured();
    node.remove_configmap("crashkernel");
    node.run("config").expect_code(0);
    assert_eq!(node.read("/etc/kdump.conf").as_deref(), Some(RHEL_KDUMP_CONF));
    node.run("config-check").expect_code(0);

    node.configmap("crashkernel", "512M");
    node.run("config").expect_code(0);
    install_kernel(&node, NEW_KERNEL);
    node.run("uninstall").expect_code(0);
    assert_eq!(
        node.read("/etc/kdump.conf").as_deref(),
        Some(RHEL_KDUMP_CONF),
        "byte for byte"
    );
    node.run("uninstall-check").expect_code(0);
}

#[test]
fn a_kdump_conf_without_the_option_gets_one_line_appended() {
    let node = node(RHEL);
    preinstall(&node, RHEL);
    let own = "path /var/crash\r\n# site settings\ncore_collector makedumpfile -l -d 31";
    node.file("/etc/kdump.conf", own);
    node.run("apply").expect_code(0);
    node.configmap("crashkernel", "512M");
    node.run("config").expect_code(0);
    assert_eq!(
        node.read("/etc/kdump.conf"),
        Some(format!("{own}\nauto_reset_crashkernel no\n"))
    );
    node.run("uninstall").expect_code(0);
    assert_eq!(node.read("/etc/kdump.conf").as_deref(), Some(own));
}

fn run_grubby(node: &Node, args: &str) {
    node.run_stand_in("grubby", &["--update-kernel=ALL", args])
        .expect_code(0);
}

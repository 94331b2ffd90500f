// SPDX-License-Identifier: Apache-2.0
//! Crash consistency: every mode that changes the node is killed at its mutating
//! system calls (skyhook_testkit::killpoint), run again, and must end exactly where
//! an uninterrupted run ends (packages, `/etc/default/grub`, GRUB's saved entry and
//! configuration, pin file, holds, links, the aks and EKS files, the EFA installer's
//! scratch directory, the instance storage's unit and the array the boot unit
//! builds, record), with its check passing.

mod common;

use common::*;
use skyhook_testkit::killpoint::KillPoints;

/// apply killed at each kill point converges; then, after a whole apply, so does
/// uninstall.
fn apply_then_uninstall_converge(n: &Node) {
    KillPoints::new(n, "apply").check("apply-check").assert_converges();
    run(n, "apply", 0);
    KillPoints::new(n, "uninstall")
        .check("uninstall-check")
        .assert_converges();
}

#[test]
fn the_kernel_install_converges_after_a_kill() {
    let mut n = node();
    n.env("NVIDIA_PIN_KERNEL", "true");
    KillPoints::new(&n, "apply").check("apply-check").assert_converges();
}

#[test]
fn uninstall_of_the_kernel_entry_converges_after_a_kill() {
    let mut n = node();
    n.env("NVIDIA_PIN_KERNEL", "true");
    run(&n, "apply", 0);
    KillPoints::new(&n, "uninstall")
        .check("uninstall-check")
        .assert_converges();
}

#[test]
fn bcms_link_and_its_removal_each_converges_after_a_kill() {
    let n = node();
    n.configmap("service", "bcm");
    reboot_into(&n, TARGET);
    n.file(&format!("/usr/src/linux-headers-{TARGET}/.config"), "CONFIG_X=y\n");
    apply_then_uninstall_converge(&n);
}

#[test]
fn aks_apply_and_uninstall_each_converges_after_a_kill() {
    let n = aks();
    apply_then_uninstall_converge(&n);
}

#[test]
fn the_eks_steps_and_their_removal_each_converges_after_a_kill() {
    let n = eks();
    n.file("/etc/chrony/chrony.conf", CHRONY_CONF);
    apply_then_uninstall_converge(&n);
}

#[test]
fn the_ec2_settings_and_their_removal_each_converges_after_a_kill() {
    let n = eks_ec2();
    n.file("/etc/chrony/chrony.conf", CHRONY_CONF);
    apply_then_uninstall_converge(&n);
}

#[test]
fn the_efa_install_converges_after_a_kill() {
    let n = eks_without_efa("1.48.0");
    n.file("/etc/chrony/chrony.conf", CHRONY_CONF);
    KillPoints::new(&n, "apply").check("apply-check").assert_converges();
}

#[test]
fn the_instance_storage_units_install_and_removal_each_converges_after_a_kill() {
    let n = common::disks::eks_node();
    apply_then_uninstall_converge(&n);
}

#[test]
fn a_boot_building_the_array_converges_after_a_kill() {
    let n = common::disks::eks_node();
    run(&n, "apply", 0);
    assert_eq!(common::disks::reboot(&n), Some(0));
    common::disks::first_boot_again(&n);
    KillPoints::new(&n, "assemble-instance-storage")
        .check("post-interrupt-check")
        .assert_converges();
}

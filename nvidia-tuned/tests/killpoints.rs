// SPDX-License-Identifier: Apache-2.0
//! Crash consistency: config (first deploy with a service, its files and the
//! tuned-main.conf edit; a reconcile to another intent; the oci host steps on a GB300
//! node, on Ubuntu and on Oracle Linux 9 with grubby-bls or GRUB's defaults) and
//! uninstall (also of the host steps) are killed at
//! their mutating system calls (skyhook_testkit::killpoint), rerun, and must end
//! exactly where an uninterrupted run ends, with the check mode passing.

#[path = "../../tuned/tests/common/mod.rs"]
mod common;
mod grub_node;
mod oci_node;

use common::*;
use skyhook_testkit::Node;
use skyhook_testkit::killpoint::KillPoints;

/// A gb200 node on EKS with GRUB (config regenerates it for the eks drop-in).
fn configured_node() -> Node {
    let node = debian(None);
    grub_node::with_grub(&node);
    node.run("apply").expect_code(0);
    node.file("/etc/tuned/tuned-main.conf", "daemon = 1\nreapply_sysctl = 1\n");
    node.configmap("accelerator", "gb200")
        .configmap("intent", "inference")
        .configmap("service", "eks");
    node
}

#[test]
fn config_deploying_a_service_combination_converges_after_a_kill() {
    KillPoints::new(&configured_node(), "config")
        .check("config-check")
        .assert_converges();
}

#[test]
fn config_reconciling_to_another_intent_converges_after_a_kill() {
    let node = configured_node();
    node.run("config").expect_code(0);
    node.configmap("intent", "multiNodeTraining");
    KillPoints::new(&node, "config")
        .check("config-check")
        .assert_converges();
}

/// A node configured for eks that the bash version had configured for rke2 before (its
/// drop-in left, known by upstream's marker line), moved to rke2 with
/// `CONFIGURE_BOOTLOADER=false`: tuned's reconcile takes eks's drop-in back, this
/// package the bash version's, and GRUB is regenerated without either.
#[test]
fn config_taking_grub_drop_ins_back_converges_after_a_kill() {
    let mut node = configured_node();
    node.run("config").expect_code(0);
    node.file(
        "/etc/default/grub.d/99-nvidia-tuned-cmdline.cfg",
        "# Managed by the nvidia-tuned Skyhook package (configure_bootloader.sh). Do not edit.\n",
    );
    node.configmap("service", "rke2");
    node.env("CONFIGURE_BOOTLOADER", "false");
    KillPoints::new(&node, "config")
        .check("config-check")
        .assert_converges();
}

/// A vr200 node on Ubuntu 26.04 with service rke2, an RKE2 agent (both of RKE2's
/// units installed, the agent's running) and GRUB: the GRUB drop-in that appends the
/// kernel arguments (GRUB regenerated) and a stack-limit drop-in for each RKE2 unit,
/// deployed and removed.
fn rke2_vr200_node() -> Node {
    let node = debian(None);
    grub_node::with_grub(&node);
    node.run("apply").expect_code(0);
    runtime_unit(&node, "/usr/local/lib/systemd/system", "rke2-agent.service", true);
    runtime_unit(&node, "/usr/local/lib/systemd/system", "rke2-server.service", false);
    node.file(
        "/etc/os-release",
        "NAME=\"Ubuntu\"\nVERSION_ID=\"26.04\"\nID=ubuntu\nID_LIKE=debian\n",
    );
    node.configmap("accelerator", "vr200").configmap("service", "rke2");
    node
}

#[test]
fn config_deploying_rke2_on_vr200_converges_after_a_kill() {
    KillPoints::new(&rke2_vr200_node(), "config")
        .check("config-check")
        .assert_converges();
}

#[test]
fn uninstall_of_rke2_on_vr200_converges_after_a_kill() {
    let node = rke2_vr200_node();
    node.run("config").expect_code(0);
    for unit in ["rke2-agent", "rke2-server"] {
        let drop_in = format!("/etc/systemd/system/{unit}.service.d/containerd.conf");
        assert!(node.exists(&drop_in), "{drop_in} deployed, for uninstall to take back");
    }
    KillPoints::new(&node, "uninstall")
        .check("uninstall-check")
        .assert_converges();
}

#[test]
fn uninstall_converges_after_a_kill() {
    let node = configured_node();
    node.run("config").expect_code(0);
    KillPoints::new(&node, "uninstall")
        .check("uninstall-check")
        .assert_converges();
}

#[test]
fn config_of_the_oci_host_steps_converges_after_a_kill() {
    let node = oci_node::gb300_oci();
    oci_node::interface(&node, "rdma0v0", true, "mlx5_core");
    KillPoints::new(&node, "config")
        .check("config-check")
        .assert_converges();
}

#[test]
fn uninstall_of_the_oci_host_steps_converges_after_a_kill() {
    let node = oci_node::gb300_oci();
    node.run("config").expect_code(0);
    KillPoints::new(&node, "uninstall")
        .check("uninstall-check")
        .assert_converges();
}

/// The oci host steps' kernel arguments on an Oracle Linux 9 GB300 node: with
/// grubby-bls (each entry's options, `/etc/default/grub`, `/etc/kernel/cmdline`
/// recorded and given back) or with GRUB's defaults and grub2-mkconfig.
#[test]
fn config_of_the_oci_host_steps_on_rhel_converges_after_a_kill() {
    for grubby in [true, false] {
        KillPoints::new(&oci_node::rhel_oci(grubby), "config")
            .check("config-check")
            .assert_converges();
    }
}

#[test]
fn uninstall_of_the_oci_host_steps_on_rhel_converges_after_a_kill() {
    for grubby in [true, false] {
        let node = oci_node::rhel_oci(grubby);
        node.run("config").expect_code(0);
        KillPoints::new(&node, "uninstall")
            .check("uninstall-check")
            .assert_converges();
    }
}

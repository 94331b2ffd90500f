// SPDX-License-Identifier: Apache-2.0
//! Crash consistency: every action mode that changes files is killed at
//! its mutating system calls (skyhook_testkit::killpoint), rerun, and must end
//! exactly where an uninterrupted run ends, with its check passing.

mod common;

use common::bash::*;
use common::v2_0::*;
use common::*;
use skyhook_testkit::killpoint::KillPoints;
use skyhook_testkit::kmod::{self, line};

#[test]
fn config_from_a_fresh_node_converges_after_a_kill() {
    let n = node();
    full_configmap(&n);
    KillPoints::new(&n, "config").check("config-check").assert_converges();
}

#[test]
fn config_reconciling_to_another_configmap_converges_after_a_kill() {
    let n = node();
    full_configmap(&n);
    run(&n, "config", 0);
    n.remove_configmap("service_containerd.conf")
        .configmap("sysctl.conf", "vm.swappiness = 10\nkernel.pid_max = 65536\n")
        .configmap("ulimit.conf", "nofile = 65536\n")
        .configmap("service_kubelet.conf", "[Service]\nLimitNOFILE=65536\n")
        .configmap("grub.conf", "iommu=pt\n");
    KillPoints::new(&n, "config").check("config-check").assert_converges();
}

#[test]
fn uninstall_converges_after_a_kill() {
    let n = node();
    full_configmap(&n);
    run(&n, "config", 0);
    KillPoints::new(&n, "uninstall")
        .check("uninstall-check")
        .assert_converges();
}

#[test]
fn upgrade_from_the_bash_package_converges_after_a_kill() {
    let n = upgrading();
    bash_tuned(&n);
    bash_configmap(&n);
    KillPoints::new(&n, "upgrade").check("upgrade-check").assert_converges();
}

#[test]
fn config_moving_the_files_of_2_0_to_their_new_names_converges_after_a_kill() {
    let n = node();
    configured_by_2_0(&n);
    KillPoints::new(&n, "config").check("config-check").assert_converges();
}

#[test]
fn uninstall_of_a_node_of_2_0_converges_after_a_kill() {
    let n = node();
    configured_by_2_0(&n);
    KillPoints::new(&n, "uninstall")
        .check("uninstall-check")
        .assert_converges();
}

/// A node where `modprobe.conf` keeps out a loaded module nothing uses.
fn modprobe_node() -> Node {
    let n = node();
    kmod::install_rmmod(&n);
    kmod::loaded(&n, &[line("algif_aead", 0, &[]), line("nouveau", 1, &[])]);
    n.configmap(
        "modprobe.conf",
        "install algif_aead /bin/false\nblacklist nouveau\noptions nvidia NVreg_EnableGpuFirmware=0\n",
    );
    n
}

#[test]
fn config_with_modprobe_conf_unloading_a_module_converges_after_a_kill() {
    KillPoints::new(&modprobe_node(), "config")
        .check("config-check")
        .assert_converges();
}

#[test]
fn uninstall_of_modprobe_conf_converges_after_a_kill() {
    let n = modprobe_node();
    run(&n, "config", 0);
    KillPoints::new(&n, "uninstall")
        .check("uninstall-check")
        .assert_converges();
}

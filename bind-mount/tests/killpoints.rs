// SPDX-License-Identifier: Apache-2.0
//! Crash consistency: every action mode that changes the node is killed at its
//! mutating system calls (skyhook_testkit::killpoint), rerun, and must end exactly
//! where an uninterrupted run ends (unit, enablement link, receipt, target), with
//! its check passing.

mod common;

use common::*;
use skyhook_testkit::killpoint::KillPoints;

#[test]
fn apply_on_a_fresh_node_converges_after_a_kill() {
    KillPoints::new(&node(), "apply")
        .check("apply-check")
        .assert_converges();
}

#[test]
fn config_changing_the_target_converges_after_a_kill() {
    let n = node();
    run(&n, "config", 0);
    n.configmap("target", "/mnt/other");
    KillPoints::new(&n, "config").check("config-check").assert_converges();
}

#[test]
fn uninstall_converges_after_a_kill() {
    let n = node();
    run(&n, "apply", 0);
    n.clear_configmaps();
    KillPoints::new(&n, "uninstall")
        .check("uninstall-check")
        .assert_converges();
}

#[test]
fn uninstall_of_a_live_mount_converges_after_a_kill() {
    let n = node();
    run(&n, "apply", 0);
    interrupt(&n, UNIT).expect_code(0);
    KillPoints::new(&n, "uninstall")
        .check("uninstall-check")
        .assert_converges();
}

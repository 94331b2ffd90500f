// SPDX-License-Identifier: Apache-2.0
//! Crash consistency: config (fresh, unloading the module; and taking over the bash
//! package's file) and uninstall are killed at each mutating system call
//! (skyhook_testkit::killpoint), rerun, and must end exactly where an uninterrupted
//! run ends, their check passing.

mod common;

use common::*;
use skyhook_testkit::killpoint::KillPoints;

#[test]
fn config_from_a_fresh_node_converges_after_a_kill() {
    KillPoints::new(&node(), "config")
        .check("config-check")
        .assert_converges();
}

#[test]
fn config_taking_over_the_bash_packages_file_converges_after_a_kill() {
    let n = node();
    n.file(FILE, CONTENT);
    KillPoints::new(&n, "config").check("config-check").assert_converges();
}

#[test]
fn uninstall_converges_after_a_kill() {
    let n = node();
    run(&n, "config", 0);
    KillPoints::new(&n, "uninstall")
        .check("uninstall-check")
        .assert_converges();
}

// SPDX-License-Identifier: Apache-2.0
//! Crash consistency: config (fresh, unloading the module; and taking over the bash
//! package's file) and uninstall are killed at each mutating system call
//! (skyhook_testkit::killpoint), rerun, and must end exactly where an uninterrupted
//! run ends, their check passing.

mod common;

use common::*;
use skyhook_testkit::killpoint::KillPoints;

fn campaign(n: &Node, mode: &str, check: &str) {
    let report = KillPoints::new(n, mode).check(check).run();
    eprintln!("copy-fail {report}");
    report.assert_converged();
}

#[test]
fn config_from_a_fresh_node_converges_after_a_kill() {
    campaign(&node(), "config", "config-check");
}

#[test]
fn config_taking_over_the_bash_packages_file_converges_after_a_kill() {
    let n = node();
    n.file(FILE, CONTENT);
    campaign(&n, "config", "config-check");
}

#[test]
fn uninstall_converges_after_a_kill() {
    let n = node();
    run(&n, "config", 0);
    campaign(&n, "uninstall", "uninstall-check");
}

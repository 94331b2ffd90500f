// SPDX-License-Identifier: Apache-2.0
//! Crash consistency: config (fresh and reconciling to another intent) and
//! uninstall are killed at each mutating system call (skyhook_testkit::killpoint),
//! rerun, and must end exactly where an uninterrupted run ends, their check passing.

mod common;

use common::*;
use skyhook_testkit::killpoint::KillPoints;

fn gb200_inference_with_containerd() -> Node {
    let mut n = cos();
    n.env("USE_CONTAINERD", "true");
    select(&n, "gb200", "inference");
    n
}

#[test]
fn config_from_a_fresh_node_converges_after_a_kill() {
    KillPoints::new(&gb200_inference_with_containerd(), "config")
        .check("config-check")
        .assert_converges();
}

#[test]
fn config_changing_the_intent_and_dropping_containerd_converges_after_a_kill() {
    let mut n = gb200_inference_with_containerd();
    run(&n, "config", 0);
    n.clear_env();
    n.configmap("intent", "multiNodeTraining");
    KillPoints::new(&n, "config").check("config-check").assert_converges();
}

#[test]
fn uninstall_converges_after_a_kill() {
    let n = gb200_inference_with_containerd();
    run(&n, "config", 0);
    KillPoints::new(&n, "uninstall")
        .check("uninstall-check")
        .assert_converges();
}

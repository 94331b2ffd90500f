// SPDX-License-Identifier: Apache-2.0
//! Crash consistency: apply (installing tuned), config (first deploy and a
//! reconcile to another configMap) and uninstall are killed at their mutating system
//! calls (skyhook_testkit::killpoint), rerun, and must end exactly where an
//! uninterrupted run ends, with the check mode passing.

mod common;

use common::*;
use skyhook_testkit::Node;
use skyhook_testkit::killpoint::KillPoints;

fn applied() -> Node {
    let node = debian(None);
    node.run("apply").expect_code(0);
    node
}

#[test]
fn apply_installing_tuned_converges_after_a_kill() {
    KillPoints::new(&debian(None), "apply")
        .check("apply-check")
        .assert_converges();
}

#[test]
fn config_deploying_profiles_converges_after_a_kill() {
    let node = applied();
    readme_configmap(&node);
    KillPoints::new(&node, "config")
        .check("config-check")
        .assert_converges();
}

#[test]
fn config_reconciling_to_another_configmap_converges_after_a_kill() {
    let node = applied();
    readme_configmap(&node);
    node.run("config").expect_code(0);
    node.clear_configmaps().configmap("tuned_profile", "gpu").configmap(
        "gpu",
        "[main]\ninclude=throughput-performance\n\n[sysctl]\nvm.swappiness=5\n",
    );
    KillPoints::new(&node, "config")
        .check("config-check")
        .assert_converges();
}

#[test]
fn uninstall_converges_after_a_kill() {
    let node = applied();
    readme_configmap(&node);
    node.run("config").expect_code(0);
    KillPoints::new(&node, "uninstall")
        .check("uninstall-check")
        .assert_converges();
}

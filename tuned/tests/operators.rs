// SPDX-License-Identifier: Apache-2.0
//! uninstall on both operators: current ones run it with the full configMap and env
//! (then the package's interrupt as uninstall-interrupt), older ones from a stub
//! without configMap or env. Both end with the same node: tuned removed as apply
//! installed it, every deployed profile and script gone.

mod common;

use common::*;
use skyhook_testkit::Tree;

/// apply and config with the README's configMap and `INTERRUPT=true`, then
/// uninstall as `older` says: the root before apply, after uninstall, and the
/// commands uninstall ran.
fn uninstalled(older: bool) -> (Tree, Tree, Vec<String>) {
    let mut node = debian(None);
    node.env("INTERRUPT", "true");
    let before = node.snapshot();
    node.run("apply").expect_code(0);
    readme_configmap(&node);
    node.run("config").expect_code(0);
    if older {
        node.clear_configmaps();
        node.clear_env();
    }
    node.clear_calls();
    node.run("uninstall").expect_code(0);
    node.run("uninstall-check").expect_code(0);
    (before, node.snapshot(), node.calls())
}

#[test]
fn uninstall_gives_the_same_node_with_and_without_its_configmap_and_env() {
    let (before, current, current_calls) = uninstalled(false);
    let (_, older, older_calls) = uninstalled(true);
    current.assert_same(&older);
    assert_eq!(current_calls, older_calls);
    assert!(
        current_calls.iter().any(|c| c.ends_with(" purge -y -q tuned")),
        "{current_calls:?}"
    );
    let left = before.diff(&current);
    assert!(
        left.iter()
            .all(|d| !d.contains("/etc/tuned/custom_profile") && !d.contains("/etc/tuned/scripts")),
        "{left:#?}"
    );
}

// SPDX-License-Identifier: Apache-2.0
//! uninstall on both operators: current ones run it with the full configMap (then
//! the package's interrupt as uninstall-interrupt), older ones from a stub without
//! configMap or env. Both end with the same node: exactly the one before config.

mod common;

use common::*;
use skyhook_testkit::Tree;

/// Configures the full configMap, then uninstalls as `older` says: the root before
/// config, after uninstall, and the commands uninstall ran.
fn uninstalled(older: bool) -> (Tree, Tree, Vec<String>) {
    let n = node();
    let before = n.snapshot();
    full_configmap(&n);
    run(&n, "config", 0);
    if older {
        n.clear_configmaps();
    }
    n.clear_calls();
    run(&n, "uninstall", 0).expect_output("interrupt needed: {type: reboot}");
    run(&n, "uninstall-check", 0);
    (before, n.snapshot(), n.calls())
}

#[test]
fn uninstall_gives_the_same_node_with_and_without_its_configmap() {
    let (before, current, current_calls) = uninstalled(false);
    let (_, older, older_calls) = uninstalled(true);
    before.assert_same(&current);
    before.assert_same(&older);
    assert_eq!(current_calls, older_calls);
    assert_eq!(current_calls, ["systemctl daemon-reload", "update-grub"]);
}

// SPDX-License-Identifier: Apache-2.0
//! uninstall on both operators: current ones run it with the full configMap (then
//! the package's interrupt, a reboot, as uninstall-interrupt), older ones from a
//! stub without configMap or env. Both end with the same node: exactly the one
//! before apply, on every distribution.

mod common;

use common::*;
use skyhook_testkit::Tree;

/// apply, config and the reboot, then uninstall as `older` says: the files before
/// apply, after uninstall, and the commands uninstall ran.
fn uninstalled(distro: Distro, older: bool) -> (Tree, Tree, Vec<String>) {
    let node = node(distro);
    let before = files(&node);
    node.run("apply").expect_code(0);
    node.configmap("crashkernel", "256M")
        .configmap("kdump.conf", "USE_KDUMP=1\n");
    node.run("config").expect_code(0);
    reboot(&node, distro, 256 << 20);
    if older {
        node.clear_configmaps();
    }
    node.clear_calls();
    node.run("uninstall").expect_code(0);
    node.run("uninstall-check").expect_code(0);
    (before, files(&node), node.calls())
}

#[test]
fn uninstall_gives_the_same_node_with_and_without_its_configmap() {
    for distro in ALL {
        let (before, current, current_calls) = uninstalled(distro, false);
        let (_, older, older_calls) = uninstalled(distro, true);
        before.assert_same(&current);
        before.assert_same(&older);
        assert_eq!(current_calls, older_calls, "{}", distro.name);
    }
}

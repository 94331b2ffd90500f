// SPDX-License-Identifier: Apache-2.0
//! uninstall on both operators: current ones run it with the full configMap and env,
//! older ones from a stub without configMap or env. The SCR's uninstall scripts run
//! in both cases (older operators: the copies kept when apply ran), and both end
//! with the same node.

mod common;

use common::*;
use skyhook_testkit::Tree;

const APPLY: &str =
    "#!/bin/sh\nmkdir -p \"$SKYHOOK_HOST_ROOT/etc/motd.d\"\necho hello > \"$SKYHOOK_HOST_ROOT/etc/motd.d/skyhook\"\n";
const UNINSTALL: &str =
    "#!/bin/sh\nrm -f \"$SKYHOOK_HOST_ROOT/etc/motd.d/skyhook\"\nrmdir \"$SKYHOOK_HOST_ROOT/etc/motd.d\"\n";
const UNINSTALL_CHECK: &str = "#!/bin/sh\ntest ! -e \"$SKYHOOK_HOST_ROOT/etc/motd.d/skyhook\"\n";

/// apply with the three scripts, then uninstall as `older` says: the root before
/// apply, after apply, after uninstall.
fn uninstalled(older: bool) -> (Tree, Tree, Tree) {
    let mut n = node();
    let before = n.snapshot();
    n.configmap("apply.sh", APPLY)
        .configmap("uninstall.sh", UNINSTALL)
        .configmap("uninstall_check.sh", UNINSTALL_CHECK);
    n.run("apply").expect_code(0);
    let applied = n.snapshot();
    if older {
        n.clear_configmaps();
        n.clear_env();
    }
    let r = n.run("uninstall");
    r.expect_code(0);
    assert_eq!(r.output().contains("running the copy kept at"), older, "{}", r.output());
    n.run("uninstall-check").expect_code(0);
    (before, applied, n.snapshot())
}

#[test]
fn uninstall_runs_the_scrs_scripts_with_and_without_the_configmap() {
    let (before, applied, current) = uninstalled(false);
    let (_, _, older) = uninstalled(true);
    assert!(applied.0.keys().any(|p| p.ends_with("etc/motd.d/skyhook")), "apply ran");
    current.assert_same(&older);
    // What is left of the run is the parents that apply.sh and the state store
    // created (/etc, /var/lib); the script's file, its directory and the kept copies are gone.
    let left: Vec<String> = before.diff(&current);
    assert_eq!(
        left,
        ["left behind: /etc", "left behind: /var", "left behind: /var/lib"]
    );
}

#[test]
fn the_kept_copy_follows_the_scr() {
    let n = node();
    n.configmap("uninstall.sh", UNINSTALL);
    n.run("apply").expect_code(0);
    let kept = "/var/lib/skyhook-packages/shellscript/shellscript/uninstall.sh";
    assert_eq!(n.read(kept).as_deref(), Some(UNINSTALL));
    n.remove_configmap("uninstall.sh");
    n.run("config").expect_code(0);
    assert!(!n.exists(kept), "the SCR dropped uninstall.sh: so is the copy");
    assert!(!n.exists("/var/lib/skyhook-packages"), "no empty directories left");
}

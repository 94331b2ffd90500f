// SPDX-License-Identifier: Apache-2.0
//! Crash consistency: the package writes nothing on the node itself, so
//! its kill points are its own system calls around an idempotent script (spawning
//! the interpreter, relaying output); killed at each of them
//! (skyhook_testkit::killpoint) and rerun, a stage must end exactly where an
//! uninterrupted run ends, leaving nothing of the package's behind. The one file it
//! does write, the copy of `uninstall.sh` kept for older operators under
//! `/var/lib/skyhook-packages/shellscript/<name>/`, is in the scenario, and every
//! mutating call is a kill point (no stride), so its write is covered.

mod common;

use common::*;
use skyhook_testkit::killpoint::KillPoints;

/// An idempotent config script and its check (the agent runs both every time).
const CONFIG: &str = "#!/bin/sh\nset -e\nmkdir -p \"$SKYHOOK_HOST_ROOT/etc/demo\"\n\
printf 'value=1\\n' > \"$SKYHOOK_HOST_ROOT/etc/demo/settings\"\necho configured\n";
const CONFIG_CHECK: &str = "#!/bin/sh\ngrep -qx value=1 \"$SKYHOOK_HOST_ROOT/etc/demo/settings\"\n";
/// The uninstall script every stage keeps a copy of (see `shellscript::kept`).
const UNINSTALL: &str = "#!/bin/sh\nrm -rf \"$SKYHOOK_HOST_ROOT/etc/demo\"\n";
/// Where config keeps it, for the package named `shellscript`.
const KEPT: &str = "/var/lib/skyhook-packages/shellscript/shellscript/uninstall.sh";

#[test]
fn a_stage_converges_after_a_kill_at_any_call() {
    let n = node();
    n.host_program("mkdir", "/bin/mkdir")
        .host_program("grep", "/bin/grep")
        .configmap("config.sh", CONFIG)
        .configmap("config_check.sh", CONFIG_CHECK)
        .configmap("uninstall.sh", UNINSTALL);
    let report = KillPoints::new(&n, "config")
        .check("config-check")
        .every_call()
        .assert_converges();
    assert_eq!(report.stride, 1, "every mutating call is a kill point: {report}");

    // What every kill point converged to holds the kept copy, byte for byte, owner-only.
    n.run("config").expect_code(0);
    assert_eq!(n.read(KEPT).as_deref(), Some(UNINSTALL), "{KEPT}");
    assert_eq!(n.mode(KEPT), Some(0o600), "{KEPT}");
}

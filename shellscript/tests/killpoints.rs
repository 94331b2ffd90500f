// SPDX-License-Identifier: Apache-2.0
//! Crash consistency (issue 12): the package writes nothing on the node itself, so
//! its kill points are its own system calls around an idempotent script (spawning
//! the interpreter, relaying output); killed at each of them
//! (skyhook_testkit::killpoint) and rerun, a stage must end exactly where an
//! uninterrupted run ends, leaving nothing of the package's behind.

mod common;

use common::*;
use skyhook_testkit::killpoint::KillPoints;

/// An idempotent config script and its check (the agent runs both every time).
const CONFIG: &str = "#!/bin/sh\nset -e\nmkdir -p \"$SKYHOOK_HOST_ROOT/etc/demo\"\n\
printf 'value=1\\n' > \"$SKYHOOK_HOST_ROOT/etc/demo/settings\"\necho configured\n";
const CONFIG_CHECK: &str = "#!/bin/sh\ngrep -qx value=1 \"$SKYHOOK_HOST_ROOT/etc/demo/settings\"\n";

#[test]
fn a_stage_killed_anywhere_converges_on_rerun() {
    let n = node();
    n.host_program("mkdir", "/bin/mkdir")
        .host_program("grep", "/bin/grep")
        .configmap("config.sh", CONFIG)
        .configmap("config_check.sh", CONFIG_CHECK);
    let report = KillPoints::new(&n, "config").check("config-check").at_most(40).run();
    eprintln!("shellscript {report}");
    report.assert_converged();
}

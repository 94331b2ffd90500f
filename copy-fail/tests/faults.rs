// SPDX-License-Identifier: Apache-2.0
//! A full disk or a read-only mount under each directory config writes (a
//! read-only one for uninstall): exit 1 naming the path, the node as it was, the
//! module still loaded (skyhook_testkit::faults).

mod common;

use common::*;
use skyhook_testkit::faults::{self, Fault};

const DIRS: [&str; 2] = ["/etc/modprobe.d", "/var/lib/skyhook-packages"];

#[test]
fn a_failing_directory_fails_the_step_naming_it_and_leaves_the_node_as_it_was() {
    let mut failures = faults::campaign(node, "config", &DIRS, &Fault::ALL, &[]);
    let configured = || {
        let n = node_with(Some(1));
        n.run("config").expect_code(0);
        n
    };
    failures.extend(faults::campaign(
        configured,
        "uninstall",
        &DIRS,
        &[Fault::ReadOnly],
        &[],
    ));
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

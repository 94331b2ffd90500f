// SPDX-License-Identifier: Apache-2.0
//! A full disk (`ENOSPC`) or a read-only mount (`EROFS`) under each directory apply
//! writes, and a read-only one under each directory uninstall changes: the step
//! fails (exit 1) naming the path and the error, and the node is as it was before:
//! no unit, no receipt, no target directory left half made (skyhook_testkit::faults).

mod common;

use common::*;
use skyhook_testkit::faults::{self, Fault};

/// Every directory apply writes files to: the unit directory, the receipts.
const DIRS: [&str; 2] = ["/etc/systemd/system", "/var/lib/skyhook-packages"];

fn prepared() -> Node {
    let n = node();
    std::fs::create_dir_all(n.path("/etc/systemd/system")).unwrap();
    std::fs::create_dir_all(n.path("/var/lib/skyhook-packages")).unwrap();
    n
}

#[test]
fn a_failing_directory_fails_apply_naming_it_and_leaves_the_node_as_it_was() {
    let mut failures = faults::campaign(prepared, "apply", &DIRS, &Fault::ALL, &[]);
    // The target's parent, where apply only makes a directory (a full tmpfs still
    // takes a directory: only a read-only one refuses it).
    failures.extend(faults::campaign(prepared, "apply", &["/mnt"], &[Fault::ReadOnly], &[]));
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn a_failing_directory_fails_uninstall_naming_it_and_leaves_the_node_as_it_was() {
    let failures = faults::campaign(
        || {
            let n = prepared();
            run(&n, "apply", 0);
            n
        },
        "uninstall",
        &DIRS,
        &[Fault::ReadOnly],
        &[],
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

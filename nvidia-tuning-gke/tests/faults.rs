// SPDX-License-Identifier: Apache-2.0
//! A full disk or a read-only mount under each directory config writes (a
//! read-only one for uninstall): exit 1 naming the path, the node as it was, live
//! kernel parameters included (skyhook_testkit::faults).

mod common;

use common::*;
use skyhook_testkit::faults::{self, Fault};

const DIRS: [&str; 2] = ["/etc/systemd/system", "/var/lib/skyhook-packages"];

fn fresh() -> skyhook_testkit::Node {
    let mut n = cos();
    n.env("USE_CONTAINERD", "true");
    select(&n, "gb200", "inference");
    n
}

#[test]
fn a_failing_directory_fails_the_step_naming_it_and_leaves_the_node_as_it_was() {
    let mut failures = faults::campaign(fresh, "config", &DIRS, &Fault::ALL, &[]);
    let configured = || {
        let n = fresh();
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

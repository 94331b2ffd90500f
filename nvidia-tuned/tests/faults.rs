// SPDX-License-Identifier: Apache-2.0
//! A full disk or a read-only mount under each directory config writes (a
//! read-only one for uninstall), for an eks chain with drop-ins: exit 1 naming the
//! path, the node as it was (skyhook_testkit::faults).

#[path = "../../tuned/tests/common/mod.rs"]
mod common;
mod grub_node;

use common::*;
use skyhook_testkit::faults::{self, Fault};

/// What stopping and disabling tuned changes (the stand-in's pid file and wants
/// link): uninstall stops tuned before it removes files, and a command is not undone.
const TUNED_SERVICE: &[&str] = &[
    "/run/tuned",
    "/etc/systemd/system/multi-user.target.wants/tuned.service",
];

const DIRS: [&str; 4] = [
    "/etc/tuned",
    "/etc/systemd/network",
    "/etc/default/grub.d",
    "/var/lib/skyhook-packages",
];

fn fresh() -> skyhook_testkit::Node {
    let node = debian(Some("2.21.0"));
    grub_node::with_grub(&node);
    node.configmap("accelerator", "h100")
        .configmap("intent", "inference")
        .configmap("service", "eks");
    node
}

#[test]
fn a_failing_directory_fails_the_step_naming_it_and_leaves_the_node_as_it_was() {
    let mut failures = faults::campaign(fresh, "config", &DIRS, &Fault::ALL, &[]);
    let configured = || {
        let node = fresh();
        node.run("config").expect_code(0);
        node
    };
    failures.extend(faults::campaign(
        configured,
        "uninstall",
        &DIRS,
        &[Fault::ReadOnly],
        TUNED_SERVICE,
    ));
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

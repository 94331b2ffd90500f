// SPDX-License-Identifier: Apache-2.0
//! The node before install, for the exact-uninstall tests: the directories every node
//! has, and a snapshot of the root without tuned's own state (its active profile,
//! pid and log are tuned's, not this package's).
#![allow(dead_code)]

use skyhook_testkit::{Node, Tree};

/// What tuned itself writes while running: not compared.
pub const TUNED_OWN: [&str; 4] = [
    "etc/tuned/active_profile",
    "etc/tuned/profile_mode",
    "run/tuned",
    "var/log/tuned",
];

/// Makes the directories every node has, then snapshots the root.
pub fn snapshot(node: &Node) -> Tree {
    for dir in [
        "/etc/systemd/system/multi-user.target.wants",
        "/etc/default/grub.d",
        "/usr/lib",
        "/usr/sbin",
        "/var/lib",
        "/var/log",
        "/run",
    ] {
        std::fs::create_dir_all(node.path(dir)).unwrap();
    }
    Tree::of_except(&node.path("/"), &TUNED_OWN)
}

/// Requires the root as `before` was taken (tuned's own state aside).
pub fn assert_as(node: &Node, before: &Tree) {
    before.assert_same(&Tree::of_except(&node.path("/"), &TUNED_OWN));
}

// SPDX-License-Identifier: Apache-2.0
//! A full disk or a read-only mount under each directory config writes (a
//! read-only one for uninstall), on Debian-like and grubby nodes: exit 1 naming the
//! path, the node as it was (skyhook_testkit::faults).

mod common;

use common::*;
use skyhook_testkit::faults::{self, Fault};

fn installed(distro: Distro) -> skyhook_testkit::Node {
    let node = node(distro);
    node.run("apply").expect_code(0);
    node.configmap("crashkernel", "256M");
    node
}

#[test]
fn a_failing_directory_fails_the_step_naming_it_and_leaves_the_node_as_it_was() {
    let mut failures = Vec::new();
    for (distro, dirs) in [
        (
            UBUNTU,
            &["/etc/default/grub.d", "/etc/default", "/var/lib/skyhook-packages"][..],
        ),
        // On grubby nodes the entries are grubby's to write: only our own files here.
        (RHEL, &["/etc", "/var/lib/skyhook-packages"][..]),
    ] {
        failures.extend(faults::campaign(|| installed(distro), "config", dirs, &Fault::ALL, &[]));
        let configured = || {
            let node = installed(distro);
            node.run("config").expect_code(0);
            node
        };
        failures.extend(faults::campaign(configured, "uninstall", dirs, &[Fault::ReadOnly], &[]));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

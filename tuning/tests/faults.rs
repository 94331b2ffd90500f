// SPDX-License-Identifier: Apache-2.0
//! A full disk (`ENOSPC`) or a read-only mount (`EROFS`) under each directory
//! config writes, and a read-only one under each directory uninstall changes: the step fails (exit 1) naming the path and the
//! error, and the node is as it was before: live kernel parameters put back,
//! records unchanged, nothing written elsewhere (skyhook_testkit::faults).

mod common;

use common::*;
use skyhook_testkit::faults::{self, Fault};

/// Every directory config writes to on the full configMap.
const DIRS: [&str; 5] = [
    "/etc/sysctl.d",
    "/etc/security/limits.d",
    "/etc/systemd/system",
    "/etc/default/grub.d",
    "/var/lib/skyhook-packages",
];

#[test]
fn a_failing_directory_fails_config_naming_it_and_leaves_the_node_as_it_was() {
    let failures = faults::campaign(
        || {
            let n = node();
            full_configmap(&n);
            n
        },
        "config",
        &DIRS,
        &Fault::ALL,
        &[],
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn a_failing_directory_fails_uninstall_naming_it_and_leaves_the_node_as_it_was() {
    let failures = faults::campaign(
        || {
            let n = node();
            full_configmap(&n);
            n.run("config").expect_code(0);
            n
        },
        "uninstall",
        &DIRS,
        &[Fault::ReadOnly],
        &[],
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn a_failing_directory_fails_config_and_uninstall_of_modprobe_conf_leaving_the_node_as_it_was() {
    use skyhook_testkit::kmod::{self, line};
    let fresh = || {
        let n = node();
        kmod::install_rmmod(&n);
        kmod::loaded(&n, &[line("algif_aead", 0, &[])]);
        n.configmap("modprobe.conf", "install algif_aead /bin/false\n");
        n
    };
    let dirs = ["/etc/modprobe.d", "/var/lib/skyhook-packages"];
    let mut failures = faults::campaign(fresh, "config", &dirs, &Fault::ALL, &[]);
    let configured = || {
        let n = fresh();
        n.run("config").expect_code(0);
        n
    };
    failures.extend(faults::campaign(
        configured,
        "uninstall",
        &dirs,
        &[Fault::ReadOnly],
        &[],
    ));
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

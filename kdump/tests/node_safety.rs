// SPDX-License-Identifier: Apache-2.0
//! An "original" is never captured through a symbolic link the package did not
//! make: a kdump-tools configuration linked to /etc/shadow is refused, and nothing
//! of the shadow file reaches the node's files, the state or the log.

mod common;

use common::*;

#[test]
fn a_service_configuration_linked_to_the_shadow_file_is_never_captured() {
    let node = node(UBUNTU);
    node.run("apply").expect_code(0);
    let shadow = "root:$6$hash-never-to-be-copied:19000:0:99999:7:::\n";
    node.file("/etc/shadow", shadow);
    std::fs::remove_file(node.path("/etc/default/kdump-tools")).unwrap();
    std::os::unix::fs::symlink("/etc/shadow", node.path("/etc/default/kdump-tools")).unwrap();
    node.configmap("kdump.conf", "USE_KDUMP=1\n");
    let run = node.run("config");
    run.expect_code(1)
        .expect_output("/etc/default/kdump-tools is a symbolic link to \"/etc/shadow\"");
    assert!(!run.output().contains("hash-never-to-be-copied"), "{}", run.output());
    assert_eq!(node.read("/etc/shadow").unwrap(), shadow);
    let leaked: Vec<_> = files(&node)
        .0
        .iter()
        .filter(|(path, _)| !path.ends_with("etc/shadow"))
        .filter(|(path, _)| {
            std::fs::read(node.root().join(path)).is_ok_and(|b| String::from_utf8_lossy(&b).contains("never-to-be"))
        })
        .map(|(path, _)| path.clone())
        .collect();
    assert!(leaked.is_empty(), "shadow content copied to {leaked:?}");
}

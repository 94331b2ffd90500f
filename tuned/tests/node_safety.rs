// SPDX-License-Identifier: Apache-2.0
//! A profile directory that is a symbolic link the package did not make is refused:
//! nothing is written through it, whatever it points to.

mod common;

use common::*;

#[test]
fn a_profile_directory_linked_elsewhere_is_refused_and_its_target_untouched() {
    let node = debian(Some("2.21.0"));
    node.file("/etc/cron.d/backup", "0 3 * * * root /usr/local/bin/backup\n");
    std::fs::create_dir_all(node.path("/etc/tuned")).unwrap();
    std::os::unix::fs::symlink("/etc/cron.d", node.path("/etc/tuned/custom_profile")).unwrap();
    readme_configmap(&node);
    node.run("config")
        .expect_code(1)
        .expect_output("/etc/tuned/custom_profile is a symbolic link to \"/etc/cron.d\"");
    let cron: Vec<_> = std::fs::read_dir(node.path("/etc/cron.d"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(cron, ["backup"], "nothing written through the link");
    assert_eq!(
        node.read("/etc/cron.d/backup").unwrap(),
        "0 3 * * * root /usr/local/bin/backup\n"
    );
}

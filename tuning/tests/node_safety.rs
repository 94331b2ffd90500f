// SPDX-License-Identifier: Apache-2.0
//! The node is never torn down or altered by what the step did not mean to change:
//! a missing copy dir is bad input, and foreign bytes in the PAM files we edit
//! survive config and uninstall.

mod common;

use common::node;

#[test]
fn a_missing_copy_dir_is_bad_input_and_leaves_a_configured_node_as_it_is() {
    let mut n = node();
    n.configmap("sysctl.conf", "vm.swappiness=10\n")
        .configmap("ulimit.conf", "nofile=65536\n");
    n.run("config").expect_code(0);
    let before = n.snapshot();
    let calls = n.calls().len();
    // A path inside the test's own temporary directory, sure to be missing (never
    // a path of this machine such as /nonexistent, which anything may create).
    let missing = n.copy_dir().with_file_name("no-such-copy-dir");
    assert!(!missing.exists());
    n.env("SKYHOOK_DIR", &missing.display().to_string());
    n.run("config")
        .expect_code(2)
        .expect_output(&format!("SKYHOOK_DIR=\"{}\" does not exist", missing.display()))
        .expect_output("Nothing on the node was changed");
    before.assert_same(&n.snapshot());
    assert_eq!(n.calls().len(), calls, "no command ran");
}

#[test]
fn a_latin1_crlf_pam_file_without_final_newline_comes_back_byte_for_byte() {
    let n = node();
    let original: &[u8] =
        b"# sessions de l'\xe9quipe (Latin-1)\r\nsession\trequired\tpam_unix.so\r\nsession\toptional\tpam_systemd.so";
    n.file("/etc/pam.d/common-session", original);
    n.configmap("ulimit.conf", "nofile=65536\n");
    n.run("config").expect_code(0);
    let edited = std::fs::read(n.path("/etc/pam.d/common-session")).unwrap();
    assert_eq!(
        &edited[..original.len()],
        original,
        "foreign bytes kept while configured"
    );
    assert!(
        edited.ends_with(b"pam_limits.so\n"),
        "{}",
        String::from_utf8_lossy(&edited)
    );
    n.run("uninstall").expect_code(0);
    assert_eq!(std::fs::read(n.path("/etc/pam.d/common-session")).unwrap(), original);
}

#[test]
fn a_drop_in_directory_linked_elsewhere_is_refused_and_its_target_untouched() {
    let n = node();
    n.file("/etc/cron.d/backup", "0 3 * * * root /usr/local/bin/backup\n");
    std::os::unix::fs::symlink("/etc/cron.d", n.path("/etc/systemd/system/containerd.service.d")).unwrap();
    n.configmap("service_containerd.conf", "[Service]\nLimitNOFILE=1048576\n");
    n.run("config")
        .expect_code(1)
        .expect_output("/etc/systemd/system/containerd.service.d is a symbolic link to \"/etc/cron.d\"");
    let cron: Vec<_> = std::fs::read_dir(n.path("/etc/cron.d"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(cron, ["backup"], "nothing written through the link");
    assert_eq!(
        n.read("/etc/cron.d/backup").unwrap(),
        "0 3 * * * root /usr/local/bin/backup\n"
    );
}

#[test]
fn a_node_whose_etc_does_not_persist_is_refused_before_any_change() {
    // GKE's Container-Optimized OS: /etc is rebuilt at every boot, so settings
    // written there would be "applied" and then vanish.
    for (file, content, evidence) in [
        (
            "/etc/os-release",
            "ID=cos\nPRETTY_NAME=\"Container-Optimized OS from Google\"\n",
            "os-release says ID=cos",
        ),
        (
            "/proc/mounts",
            "/dev/sda1 / ext4 rw 0 0\ntmpfs /etc tmpfs rw,nosuid,nodev 0 0\n",
            "/etc on a tmpfs",
        ),
    ] {
        let n = node();
        n.file(file, content);
        n.configmap("sysctl.conf", "vm.swappiness=10\n");
        let before = n.snapshot();
        for mode in ["config", "uninstall"] {
            n.run(mode)
                .expect_code(1)
                .expect_output(evidence)
                .expect_output("does not survive a reboot")
                .expect_output("nodeSelectors");
        }
        before.assert_same(&n.snapshot());
        assert!(n.calls().is_empty(), "{:?}", n.calls());
    }
}

// SPDX-License-Identifier: Apache-2.0
//! uninstall and uninstall-check: the node ends exactly as it was before config
//! (the whole tree compared), and pam_limits is shared between tuning entries.

mod common;

use common::*;

fn run_as(n: &Node, name: &str, mode: &str, code: i32) -> Run {
    let r = skyhook_testkit::run_command(
        n.command(mode)
            .env("SKYHOOK_RESOURCE_ID", format!("test-scr_{name}_2.0.0")),
    );
    r.expect_code(code);
    r
}

#[test]
fn uninstall_leaves_the_root_exactly_as_before_config() {
    let n = node();
    let before = n.snapshot();
    full_configmap(&n);
    run(&n, "config", 0);
    assert_ne!(before.diff(&n.snapshot()), Vec::<String>::new());
    n.clear_calls();
    run(&n, "uninstall", 0).expect_output("interrupt needed: {type: reboot}");
    assert_eq!(n.calls(), ["systemctl daemon-reload", "update-grub"]);
    before.assert_same(&n.snapshot());
    run(&n, "uninstall-check", 0);
    // Again: nothing left to do, nothing run.
    n.clear_calls();
    run(&n, "uninstall", 0);
    assert!(n.calls().is_empty(), "{:?}", n.calls());
    before.assert_same(&n.snapshot());
}

#[test]
fn uninstall_leaves_values_changed_by_others_alone() {
    let n = node();
    n.configmap("sysctl.conf", "vm.swappiness = 10\nvm.max_map_count = 262144\n");
    run(&n, "config", 0);
    n.file("/proc/sys/vm/swappiness", "30\n");
    run(&n, "uninstall", 0).expect_output("vm.swappiness is \"30\", not the \"10\" this package set");
    assert_eq!(live(&n, "vm/swappiness"), "30");
    assert_eq!(live(&n, "vm/max_map_count"), "65530");
}

#[test]
fn uninstall_check_lists_what_remains() {
    let n = node();
    full_configmap(&n);
    run(&n, "config", 0);
    let r = run(&n, "uninstall-check", 1);
    for path in [sysctl_file(), limits_file(), containerd_dropin(), grub_file()] {
        r.expect_output(&format!("{path} ("));
    }
    r.expect_output("/var/lib/skyhook-packages/tuning/gpu/state.json still exists");
    run(&n, "uninstall", 0);
    n.file(
        "/etc/pam.d/common-session",
        format!(
            "{COMMON_SESSION}{}\nsession required pam_limits.so\n",
            tuning::pam::MARKER
        ),
    );
    run(&n, "uninstall-check", 1)
        .expect_output("the pam_limits line this package added is still in /etc/pam.d/common-session");
}

#[test]
fn pam_limits_stays_while_another_tuning_entry_needs_it() {
    let n = node();
    let before = n.snapshot();
    n.configmap("ulimit.conf", "nofile=65536\n");
    run_as(&n, "gpu", "config", 0);
    n.configmap("ulimit.conf", "memlock=unlimited\n");
    run_as(&n, "net", "config", 0);
    let session = n.read("/etc/pam.d/common-session").unwrap();
    assert_eq!(session.matches("pam_limits.so").count(), 1, "added once: {session}");
    run_as(&n, "gpu", "uninstall", 0);
    assert!(
        n.read("/etc/pam.d/common-session").unwrap().contains("pam_limits.so"),
        "net still needs it"
    );
    run_as(&n, "gpu", "uninstall-check", 0);
    run_as(&n, "net", "config-check", 0);
    run_as(&n, "net", "uninstall", 0);
    run_as(&n, "net", "uninstall-check", 0);
    before.assert_same(&n.snapshot());
}

#[test]
fn pam_limits_already_in_the_stack_is_never_touched() {
    let n = node();
    let with = format!("{COMMON_SESSION}session required\tpam_limits.so\n");
    n.file("/etc/pam.d/common-session", &with)
        .file("/etc/pam.d/common-session-noninteractive", &with);
    let before = n.snapshot();
    n.configmap("ulimit.conf", "nofile=65536\n");
    run(&n, "config", 0);
    assert_eq!(n.read("/etc/pam.d/common-session").unwrap(), with);
    run(&n, "config-check", 0);
    run(&n, "uninstall", 0);
    assert_eq!(n.read("/etc/pam.d/common-session").unwrap(), with, "not ours to remove");
    before.assert_same(&n.snapshot());
}

#[test]
fn foreign_files_beside_ours_keep_every_byte() {
    // Files of others in the directories this package writes to, with bytes a
    // text round trip would change: Latin-1, CRLF, no final newline.
    let foreign: [(&str, &[u8]); 4] = [
        (
            "/etc/sysctl.d/60-cloud.conf",
            b"# r\xe9seau\r\nnet.core.somaxconn = 4096\r\nvm.swappiness = 60",
        ),
        ("/etc/security/limits.d/10-site.conf", b"# \xa9 site\n*\thard\tcore\t0"),
        (
            "/etc/systemd/system/containerd.service.d/10-site.conf",
            b"[Service]\r\n# d\xe9j\xe0\r\nLimitCORE=0",
        ),
        ("/etc/default/grub.d/60-site.cfg", b"# \xff\nGRUB_TIMEOUT=1"),
    ];
    let n = node();
    for (path, bytes) in foreign {
        n.file(path, bytes);
    }
    let before = n.snapshot();
    full_configmap(&n);
    run(&n, "config", 0);
    run(&n, "config-check", 0);
    for (path, bytes) in foreign {
        assert_eq!(std::fs::read(n.path(path)).unwrap(), bytes, "{path} after config");
    }
    run(&n, "uninstall", 0);
    for (path, bytes) in foreign {
        assert_eq!(std::fs::read(n.path(path)).unwrap(), bytes, "{path} after uninstall");
    }
    before.assert_same(&n.snapshot());
}

#[test]
fn a_state_directory_that_was_there_before_stays_after_uninstall() {
    let n = node();
    std::fs::create_dir_all(n.path("/var/lib/skyhook-packages")).unwrap();
    let before = n.snapshot();
    full_configmap(&n);
    run(&n, "config", 0);
    run(&n, "uninstall", 0);
    before.assert_same(&n.snapshot());
}

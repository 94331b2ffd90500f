// SPDX-License-Identifier: Apache-2.0
//! The names of the package's files: each is read after the files that won over the
//! `999-` names used before 2.1.0 (`override.conf` of `systemctl edit`, lettered
//! limits.d files), and a node carrying those old names ends with only the new ones
//! after config or upgrade, and with neither after uninstall.

mod common;

use common::v2_0::*;
use common::*;
use skyhook_testkit::systemd::{dropins, limits_files};

#[test]
fn drop_ins_apply_after_override_conf_and_limits_after_lettered_files() {
    let n = node();
    // `systemctl edit containerd` and a vendor's drop-in; a limits file named with letters.
    n.file(
        "/etc/systemd/system/containerd.service.d/override.conf",
        "[Service]\nLimitNOFILE=1024\n",
    )
    .file(
        "/usr/lib/systemd/system/containerd.service.d/local.conf",
        "[Service]\nLimitMEMLOCK=64K\n",
    )
    .file("/etc/security/limits.d/nofile.conf", "* hard nofile 1024\n");
    full_configmap(&n);
    run(&n, "config", 0);
    assert_eq!(
        dropins(&n, "containerd.service").last(),
        Some(&containerd_dropin()),
        "systemd applies ours last, so its LimitNOFILE wins"
    );
    assert_eq!(
        limits_files(&n).last(),
        Some(&limits_file()),
        "pam_limits reads ours last"
    );
    run(&n, "config-check", 0);
}

#[test]
fn config_moves_the_files_of_2_0_to_the_new_names_asking_for_what_each_move_needs() {
    let n = node();
    configured_by_2_0(&n);
    n.clear_calls();
    run(&n, "config", 0)
        .expect_output("drop-in for containerd.service moved from its name before 2.1.0")
        .expect_output("interrupt needed: {type: reboot}");
    assert_eq!(old_names(&n), Vec::<String>::new(), "only the new names are left");
    for f in [limits_file(), containerd_dropin(), grub_file()] {
        assert!(n.exists(&f), "{f}");
    }
    assert_eq!(n.calls(), ["systemctl daemon-reload", "update-grub"]);
    assert!(
        n.read("/boot/grub/grub.cfg")
            .unwrap()
            .contains("hugepagesz=1G hugepages=4 hugepagesz=2M hugepages=512"),
        "the kernel arguments stay"
    );
    run(&n, "config-check", 0);
    // Converged: the next config changes nothing.
    n.clear_calls();
    run(&n, "config", 0).expect_output("the node already matches the configMap");
    assert!(n.calls().is_empty(), "{:?}", n.calls());
}

#[test]
fn config_check_names_a_file_left_under_its_old_name() {
    let n = node();
    configured_by_2_0(&n);
    run(&n, "config-check", 1)
        .expect_output("/etc/security/limits.d/999-gpu-tuning.conf (user limits file) is left over")
        .expect_output("/etc/systemd/system/containerd.service.d/999-gpu-tuning.conf (service drop-in) is left over");
}

#[test]
fn upgrade_moves_the_limits_file_and_config_the_drop_ins() {
    let mut n = node();
    n.env("PREVIOUS_VERSION", "2.0.0").env("CURRENT_VERSION", "2.1.0");
    configured_by_2_0(&n);
    run(&n, "upgrade-check", 1)
        .expect_output("/etc/security/limits.d/999-gpu-tuning.conf (user limits file) still has its old name");
    run(&n, "upgrade", 0);
    run(&n, "upgrade-check", 0);
    assert!(n.exists(&limits_file()) && !n.exists("/etc/security/limits.d/999-gpu-tuning.conf"));
    run(&n, "config", 0);
    assert_eq!(old_names(&n), Vec::<String>::new());
    run(&n, "config-check", 0);
}

#[test]
fn uninstall_removes_the_old_names_and_the_new() {
    let n = node();
    let pristine = n.snapshot();
    configured_by_2_0(&n);
    // One file already moved, the others not: a run of 2.1.0 killed half way.
    full_configmap(&n);
    std::fs::rename(
        n.path("/etc/security/limits.d/999-gpu-tuning.conf"),
        n.path(&limits_file()),
    )
    .unwrap();
    run(&n, "uninstall", 0);
    run(&n, "uninstall-check", 0);
    pristine.assert_same(&n.snapshot());
}

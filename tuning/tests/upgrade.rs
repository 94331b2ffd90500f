// SPDX-License-Identifier: Apache-2.0
//! upgrade from the bash package (1.x): a node carrying exactly what the bash
//! package's scripts left is taken over, converted by the next config, and cleaned
//! by uninstall.

mod common;

use common::bash::*;
use common::v2_0::old_names;
use common::*;

#[test]
fn a_node_tuned_by_the_bash_package_upgrades_in_place() {
    let n = upgrading();
    let pristine = n.snapshot();
    bash_tuned(&n);
    bash_configmap(&n);
    // Before the upgrade, the bash package's sysctl file is in the way.
    run(&n, "upgrade-check", 1)
        .expect_output("/etc/sysctl.d/999-gpu-tuning.conf (sysctl file) still has its old name")
        .expect_output("/etc/security/limits.d/999-gpu-tuning.conf (user limits file) still has its old name");
    run(&n, "upgrade", 0);
    run(&n, "upgrade-check", 0);
    assert!(!n.exists("/etc/sysctl.d/999-gpu-tuning.conf"));
    assert_eq!(n.read(&sysctl_file()).unwrap(), SYSCTL, "moved as it was");
    assert!(!n.exists("/etc/security/limits.d/999-gpu-tuning.conf"));
    assert_eq!(
        n.read(&limits_file()).unwrap(),
        "* hard memlock 128\n* hard fsize 1000\n",
        "moved as it was"
    );
    let state = n.read("/var/lib/skyhook-packages/tuning/gpu/state.json").unwrap();
    assert!(state.contains("\"migrated_from\": \"1.1.3\""), "{state}");
    // config with the unchanged SCR converts everything.
    n.clear_calls();
    run(&n, "config", 0).expect_output("interrupt needed: {type: reboot}");
    let limits = n.read(&limits_file()).unwrap();
    assert!(
        limits.contains("*\tsoft\tmemlock\t128\n*\thard\tmemlock\t128\n"),
        "soft limits too: {limits}"
    );
    assert!(n.exists("/etc/systemd/system/nvidia_fabricmanager.service.d/zz-skyhook-gpu-tuning.conf"));
    assert_eq!(old_names(&n), Vec::<String>::new(), "only the new names are left");
    assert!(
        !n.exists("/etc/systemd/system/nvidia.service.d"),
        "the bash package's misnamed drop-in and its directory went"
    );
    assert!(
        n.read("/boot/grub/grub.cfg")
            .unwrap()
            .contains("console=tty1 console=ttyS0 hugepagesz=1G hugepages=2"),
        "the cloud image's console is back"
    );
    assert_eq!(n.calls(), ["systemctl daemon-reload", "update-grub"]);
    run(&n, "config-check", 0);
    // pam_limits: the bash package's line is recorded, ours not added twice.
    let session = n.read("/etc/pam.d/common-session").unwrap();
    assert_eq!(session.matches("pam_limits.so").count(), 1, "{session}");
    // uninstall removes what both versions left. The kernel parameters the bash
    // package set live keep their values: it never recorded the earlier ones.
    run(&n, "uninstall", 0);
    run(&n, "uninstall-check", 0);
    let diff = pristine.diff(&n.snapshot());
    assert_eq!(
        diff,
        [
            "changed: /proc/sys/fs/inotify/max_user_instances",
            "changed: /proc/sys/fs/inotify/max_user_watches",
            "changed: /proc/sys/vm/max_map_count"
        ]
    );
}

#[test]
fn uninstall_also_removes_what_the_bash_package_left() {
    let n = ubuntu();
    let pristine = n.snapshot();
    bash_tuned(&n);
    for k in [
        "fs/inotify/max_user_instances",
        "fs/inotify/max_user_watches",
        "vm/max_map_count",
    ] {
        n.file(&format!("/proc/sys/{k}"), pristine_value(k));
    }
    run(&n, "uninstall", 0);
    run(&n, "uninstall-check", 0);
    pristine.assert_same(&n.snapshot());
}

fn pristine_value(key: &str) -> String {
    let v = PROC_SYS.iter().find(|(k, _)| *k == key).unwrap().1;
    format!("{v}\n")
}

#[test]
fn upgrade_on_an_untouched_node_changes_nothing() {
    let n = upgrading();
    let before = n.snapshot();
    run(&n, "upgrade", 0).expect_output("nothing of an earlier version found on this node");
    run(&n, "upgrade-check", 0);
    before.assert_same(&n.snapshot());
}

#[test]
fn config_without_upgrade_also_takes_over_the_bash_files() {
    let n = ubuntu();
    bash_tuned(&n);
    bash_configmap(&n);
    n.remove_configmap("service_containerd.conf");
    run(&n, "config", 0);
    assert!(!n.exists("/etc/sysctl.d/999-gpu-tuning.conf"), "out of the way");
    assert!(!n.exists("/etc/systemd/system/containerd.service.d"), "its key is gone");
    run(&n, "config-check", 0);
}

// SPDX-License-Identifier: Apache-2.0
//! upgrade from the bash package (1.x): a node carrying exactly what the bash
//! package's scripts left is taken over, converted by the next config, and cleaned
//! by uninstall.

mod common;

use common::*;

const SYSCTL: &str = "fs.inotify.max_user_instances=65535\nfs.inotify.max_user_watches=524288\nvm.max_map_count=262144";

/// What the bash package's update_settings.sh left for package name `gpu`.
fn bash_tuned(n: &Node) {
    n.file("/etc/sysctl.d/999-gpu-tuning.conf", SYSCTL);
    n.file("/proc/sys/fs/inotify/max_user_instances", "65535\n")
        .file("/proc/sys/fs/inotify/max_user_watches", "524288\n")
        .file("/proc/sys/vm/max_map_count", "262144\n");
    n.file(
        "/etc/security/limits.d/999-gpu-tuning.conf",
        "* hard memlock 128\n* hard fsize 1000\n",
    );
    for f in ["/etc/pam.d/common-session", "/etc/pam.d/common-session-noninteractive"] {
        n.file(f, format!("{COMMON_SESSION}session required pam_limits.so\n"));
    }
    // service_containerd.conf, and service_nvidia_fabricmanager.conf, which the bash
    // package cut at the first '_' into nvidia.service.d.
    n.file(
        "/etc/systemd/system/containerd.service.d/999-gpu-tuning.conf",
        "[Service]\nLimitSTACK=67108864\nLimitMEMLOCK=infinity",
    );
    n.file(
        "/etc/systemd/system/nvidia.service.d/999-gpu-tuning.conf",
        "[Service]\nLimitNOFILE=65536",
    );
    n.file(
        "/etc/default/grub.d/999-gpu-tuning.cfg",
        "GRUB_CMDLINE_LINUX_DEFAULT=\" hugepagesz=1G hugepages=2\"\n",
    );
    n.run_stand_in("update-grub", &[]).expect_code(0);
    assert!(
        !n.read("/boot/grub/grub.cfg").unwrap().contains("console=ttyS0"),
        "bash replaced the default"
    );
}

/// The SCR's configMap, unchanged from the bash package's days.
fn bash_configmap(n: &Node) {
    n.configmap("sysctl.conf", SYSCTL)
        .configmap("ulimit.conf", "memlock=128\nfsize=1000")
        .configmap(
            "service_containerd.conf",
            "[Service]\nLimitSTACK=67108864\nLimitMEMLOCK=infinity",
        )
        .configmap("service_nvidia_fabricmanager.conf", "[Service]\nLimitNOFILE=65536")
        .configmap("grub.conf", "hugepagesz=1G\nhugepages=2");
}

/// An Ubuntu node as the bash package found it (it moved its limits file into an
/// existing /etc/security/limits.d).
fn ubuntu() -> Node {
    let n = node();
    n.file("/etc/security/limits.conf", "# /etc/security/limits.conf\n");
    n.file("/etc/security/limits.d/.placeholder", "");
    n
}

fn upgrading() -> Node {
    let mut n = ubuntu();
    n.env("PREVIOUS_VERSION", "1.1.3").env("CURRENT_VERSION", "2.0.0");
    n
}

#[test]
fn a_node_tuned_by_the_bash_package_upgrades_in_place() {
    let n = upgrading();
    let pristine = n.snapshot();
    bash_tuned(&n);
    bash_configmap(&n);
    // Before the upgrade, the bash package's sysctl file is in the way.
    run(&n, "upgrade-check", 1).expect_output("/etc/sysctl.d/999-gpu-tuning.conf (the bash package's sysctl file)");
    run(&n, "upgrade", 0);
    run(&n, "upgrade-check", 0);
    assert!(!n.exists("/etc/sysctl.d/999-gpu-tuning.conf"));
    assert_eq!(n.read(&sysctl_file()).unwrap(), SYSCTL, "moved as it was");
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
    assert!(n.exists("/etc/systemd/system/nvidia_fabricmanager.service.d/999-gpu-tuning.conf"));
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

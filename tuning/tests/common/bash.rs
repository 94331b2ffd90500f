// SPDX-License-Identifier: Apache-2.0
//! A node as the bash package (1.x) left it, for the upgrade tests and the kill
//! points of upgrade.

use super::*;

/// The bash package's sysctl settings.
pub const SYSCTL: &str =
    "fs.inotify.max_user_instances=65535\nfs.inotify.max_user_watches=524288\nvm.max_map_count=262144";

/// What the bash package's update_settings.sh left for package name `gpu`.
pub fn bash_tuned(n: &Node) {
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
pub fn bash_configmap(n: &Node) {
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
pub fn ubuntu() -> Node {
    let n = node();
    n.file("/etc/security/limits.conf", "# /etc/security/limits.conf\n");
    n.file("/etc/security/limits.d/.placeholder", "");
    n
}

pub fn upgrading() -> Node {
    let mut n = ubuntu();
    n.env("PREVIOUS_VERSION", "1.1.3").env("CURRENT_VERSION", "2.0.0");
    n
}

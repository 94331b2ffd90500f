// SPDX-License-Identifier: Apache-2.0
//! A simulated GPU node for the tuning package's tests: a Debian host root with a
//! fake `/proc/sys`, PAM session files, GRUB defaults, and stand-ins for
//! `systemctl` (answers `MainPID` from a file the test writes) and `update-grub`
//! (generates `/boot/grub/grub.cfg` from the GRUB defaults and drop-ins, as the real
//! one does).
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::SystemTime;

/// The test kit's update-grub, the one every package's tests use.
pub use skyhook_testkit::boot_tools::UPDATE_GRUB;
pub use skyhook_testkit::{Node, Run};

pub mod bash;
pub mod v2_0;

/// The package name in the SCR.
pub const NAME: &str = "gpu";

/// Live kernel parameters on a fresh node.
pub const PROC_SYS: [(&str, &str); 8] = [
    ("vm/swappiness", "60"),
    ("vm/max_map_count", "65530"),
    ("fs/inotify/max_user_watches", "8192"),
    ("fs/inotify/max_user_instances", "128"),
    ("net/core/somaxconn", "4096"),
    ("net/ipv4/tcp_rmem", "4096\t131072\t6291456"),
    ("kernel/pid_max", "4194304"),
    ("fs/nr_open", "1048576"),
];

/// The distribution's GRUB defaults (Ubuntu cloud image).
pub const GRUB_DEFAULT: &str =
    "GRUB_DEFAULT=0\nGRUB_TIMEOUT=0\nGRUB_CMDLINE_LINUX_DEFAULT=\"quiet splash\"\nGRUB_CMDLINE_LINUX=\"\"\n";

/// A cloud image's drop-in (its console settings must survive).
pub const CLOUDIMG: &str = "GRUB_CMDLINE_LINUX_DEFAULT=\"console=tty1 console=ttyS0\"\n";

/// Ubuntu's common-session without pam_limits.
pub const COMMON_SESSION: &str = "# here are the per-package modules (the \"Primary\" block)\n\
session\t[default=1]\t\t\tpam_permit.so\nsession\trequisite\t\t\tpam_deny.so\nsession\trequired\t\t\tpam_permit.so\n\
session optional\t\t\tpam_umask.so\nsession\trequired\tpam_unix.so \nsession\toptional\tpam_systemd.so \n";

/// The `systemctl` stand-in: `show … --property=MainPID --value <unit>` prints the
/// unit's main PID (from `mainpid-<unit>` in the commands directory; `0`, as systemctl
/// prints for a unit not running, without it); every other verb (`daemon-reload`,
/// `restart`, …) succeeds silently and is only logged.
const SYSTEMCTL: &str = r#"case "$1" in
  show) for unit; do :; done; cat "$(dirname "$0")/mainpid-$unit" 2>/dev/null || echo 0 ;;
  *) : ;;
esac
"#;

/// A fresh Ubuntu node (systemd running, GRUB present) for package name [`NAME`].
pub fn node() -> Node {
    let n = Node::new(env!("CARGO_BIN_EXE_tuning")).named(NAME).version("2.0.0");
    n.file(
        "/etc/os-release",
        skyhook_testkit::skyhook_core::os::distro::fixtures::UBUNTU_2204,
    );
    for (k, v) in PROC_SYS {
        n.file(&format!("/proc/sys/{k}"), format!("{v}\n"));
    }
    n.file("/etc/sysctl.d/99-sysctl.conf", "")
        .file("/etc/sysctl.conf", "# the distribution's sysctl.conf\n")
        .file("/etc/sysctl.d/README.sysctl", "see sysctl.d(5)\n")
        .file("/etc/pam.d/common-session", COMMON_SESSION)
        .file("/etc/pam.d/common-session-noninteractive", COMMON_SESSION)
        .file("/etc/pam.d/sshd", "@include common-session\n")
        .file("/etc/default/grub", GRUB_DEFAULT)
        .file("/etc/default/grub.d/50-cloudimg-settings.cfg", CLOUDIMG)
        .file("/etc/systemd/system/multi-user.target.wants/ssh.service", "")
        .file("/var/lib/dpkg/status", "")
        .file(
            "/proc/cmdline",
            "BOOT_IMAGE=/boot/vmlinuz root=UUID=1 ro console=tty1 console=ttyS0\n",
        );
    // An x86_64 node, whatever the test binary's architecture (the aarch64 step runs
    // these tests as aarch64 binaries, whose own architecture is the fallback).
    n.file("/proc/sys/kernel/arch", "x86_64\n");
    hugepage_sizes(&n, &X86_64_HUGEPAGES, 2048);
    std::fs::remove_file(n.path("/etc/sysctl.d/99-sysctl.conf")).unwrap();
    std::os::unix::fs::symlink("../sysctl.conf", n.path("/etc/sysctl.d/99-sysctl.conf")).unwrap();
    n.systemd_running(true);
    n.stand_in("systemctl", SYSTEMCTL).stand_in("update-grub", UPDATE_GRUB);
    // The boot configuration as the distribution generated it.
    n.run_stand_in("update-grub", &[]).expect_code(0);
    n
}

/// Makes `systemctl show --property=MainPID` answer `pid` for `unit`, with
/// `/proc/<pid>/limits` holding `limits` rows (`(row name, soft, hard)`).
pub fn service(n: &Node, unit: &str, pid: u32, rows: &[(&str, &str, &str)]) {
    std::fs::write(n.commands_dir().join(format!("mainpid-{unit}")), format!("{pid}\n")).unwrap();
    let mut text = format!(
        "{:<26}{:<21}{:<21}{:<10}\n",
        "Limit", "Soft Limit", "Hard Limit", "Units"
    );
    for (name, soft, hard) in rows {
        text.push_str(&format!("{name:<26}{soft:<21}{hard:<21}{:<10}\n", "files"));
    }
    n.file(&format!("/proc/{pid}/limits"), text);
}

/// The huge page sizes (KiB) of an x86_64 kernel.
pub const X86_64_HUGEPAGES: [u64; 2] = [2048, 1 << 20];
/// The huge page sizes (KiB) of an arm64 kernel with 4k pages.
pub const ARM64_4K_HUGEPAGES: [u64; 4] = [64, 2048, 32 << 10, 1 << 20];
/// The huge page sizes (KiB) of an arm64 kernel with 16k pages (no 64K, no 512M).
pub const ARM64_16K_HUGEPAGES: [u64; 3] = [2048, 32 << 10, 1 << 20];
/// The huge page sizes (KiB) of an arm64 kernel with 64k pages (no 1G).
pub const ARM64_64K_HUGEPAGES: [u64; 3] = [2048, 512 << 10, 16 << 20];

/// Makes the running kernel list `sizes` (KiB) under /sys/kernel/mm/hugepages, none
/// reserved, with `default` (KiB) as its default size in /proc/meminfo.
pub fn hugepage_sizes(n: &Node, sizes: &[u64], default: u64) {
    let _ = std::fs::remove_dir_all(n.path("/sys/kernel/mm/hugepages"));
    for kb in sizes {
        n.file(
            &format!("/sys/kernel/mm/hugepages/hugepages-{kb}kB/nr_hugepages"),
            "0\n",
        );
    }
    n.file(
        "/proc/meminfo",
        format!("MemTotal:       2113470464 kB\nHugePages_Total:       0\nHugepagesize:       {default} kB\n"),
    );
}

/// A size as the kernel command line writes it, in KiB (test fixtures only).
fn kib(size: &str) -> u64 {
    let (n, unit) = size.split_at(size.len() - 1);
    let n: u64 = n.parse().unwrap();
    match unit {
        "K" => n,
        "M" => n << 10,
        "G" => n << 20,
        other => panic!("fixture size unit {other}"),
    }
}

/// Simulates a reboot: the kernel command line becomes the default entry's, and
/// the kernel reserves the huge pages it asks for, of the sizes it supports (a
/// count before any hugepagesz= is of the default size).
pub fn reboot(n: &Node) {
    let cfg = n.read("/boot/grub/grub.cfg").unwrap();
    let linux = cfg.lines().find(|l| l.trim_start().starts_with("linux")).unwrap();
    let args: Vec<&str> = linux.split_whitespace().skip(2).collect();
    n.file(
        "/proc/cmdline",
        format!("BOOT_IMAGE=/boot/vmlinuz {}\n", args.join(" ")),
    );
    let meminfo = n.read("/proc/meminfo").unwrap_or_default();
    let default = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("Hugepagesize:"))
        .map(|v| v.trim().trim_end_matches(" kB").parse::<u64>().unwrap());
    let mut size = default;
    for arg in args {
        if let Some(s) = arg.strip_prefix("hugepagesz=") {
            size = Some(kib(s));
        } else if let Some(count) = arg.strip_prefix("hugepages=")
            && let Some(kb) = size
        {
            let file = format!("/sys/kernel/mm/hugepages/hugepages-{kb}kB/nr_hugepages");
            if n.exists(&file) {
                n.file(&file, format!("{count}\n"));
            }
        }
    }
}

/// A live kernel parameter (path form).
pub fn live(n: &Node, key: &str) -> String {
    n.read(&format!("/proc/sys/{key}")).unwrap().trim_end().to_string()
}

/// Runs `mode` and asserts its exit code.
#[track_caller]
pub fn run(n: &Node, mode: &str, code: i32) -> Run {
    let r = n.run(mode);
    r.expect_code(code);
    r
}

/// The modification time of every file under the root.
pub fn mtimes(n: &Node) -> BTreeMap<PathBuf, SystemTime> {
    fn walk(dir: &std::path::Path, out: &mut BTreeMap<PathBuf, SystemTime>) {
        // The node lock's directory changes with every action step, by design.
        for e in std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .filter(|e| !e.path().ends_with("run/lock"))
        {
            let m = e.path().symlink_metadata().unwrap();
            out.insert(e.path(), m.modified().unwrap());
            if m.is_dir() {
                walk(&e.path(), out);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(n.root(), &mut out);
    out
}

/// The configMap of the issue's example: every key.
pub fn full_configmap(n: &Node) {
    n.configmap(
        "sysctl.conf",
        "# GPU node\nfs.inotify.max_user_watches = 524288\nvm.max_map_count=262144\n\
         net/ipv4/tcp_rmem = 4096 87380 16777216\n-net.ipv4.not_here = 1\n",
    )
    .configmap("ulimit.conf", "memlock=unlimited\nnofile = 1048576\n")
    .configmap(
        "service_containerd.conf",
        "[Service]\nLimitNOFILE=1048576\nLimitMEMLOCK=infinity\nLimitSTACK=64M:infinity\n",
    )
    .configmap("grub.conf", "hugepagesz=1G\nhugepages=4\nhugepagesz=2M hugepages=512\n");
}

/// The rows of `/proc/<pid>/limits` a containerd started with [`full_configmap`]'s drop-in has.
pub const CONTAINERD_LIMITS: [(&str, &str, &str); 3] = [
    ("Max open files", "1048576", "1048576"),
    ("Max locked memory", "unlimited", "unlimited"),
    ("Max stack size", "67108864", "unlimited"),
];

/// Our sysctl drop-in.
pub fn sysctl_file() -> String {
    format!("/etc/sysctl.d/zz-skyhook-{NAME}-tuning.conf")
}
/// Our limits file.
pub fn limits_file() -> String {
    format!("/etc/security/limits.d/zz-skyhook-{NAME}-tuning.conf")
}
/// Our containerd drop-in.
pub fn containerd_dropin() -> String {
    format!("/etc/systemd/system/containerd.service.d/zz-skyhook-{NAME}-tuning.conf")
}
/// Our GRUB drop-in.
pub fn grub_file() -> String {
    format!("/etc/default/grub.d/zz-skyhook-{NAME}-tuning.cfg")
}

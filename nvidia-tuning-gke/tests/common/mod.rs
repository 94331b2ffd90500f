// SPDX-License-Identifier: Apache-2.0
//! Simulated GKE GPU nodes for nvidia-tuning-gke's tests: a Container-Optimized OS
//! node (COS 125, kernel 6.12: no CFS scheduler keys, `/etc` on a tmpfs) and an
//! Ubuntu node (kernel 5.15, every key), each with a fake `/proc/sys` and a
//! `systemctl` stand-in.
#![allow(dead_code)]

pub use skyhook_testkit::{Node, Run};

/// The package name in the SCR.
pub const NAME: &str = "nvidia-tuning-gke";

/// Live kernel parameters every simulated kernel has, with their defaults.
pub const PROC_SYS: [(&str, &str); 20] = [
    ("net/ipv4/conf/all/arp_announce", "0"),
    ("net/ipv4/conf/default/arp_announce", "0"),
    ("net/ipv4/conf/all/arp_ignore", "0"),
    ("net/ipv4/conf/default/arp_ignore", "0"),
    ("vm/swappiness", "60"),
    ("fs/inotify/max_user_instances", "128"),
    ("fs/inotify/max_user_watches", "8192"),
    ("kernel/threads-max", "1030489"),
    ("vm/max_map_count", "65530"),
    ("vm/min_free_kbytes", "67584"),
    ("vm/overcommit_memory", "0"),
    ("net/core/rmem_max", "212992"),
    ("net/core/wmem_max", "212992"),
    ("net/core/rmem_default", "212992"),
    ("net/core/wmem_default", "212992"),
    ("net/ipv4/tcp_rmem", "4096\t131072\t6291456"),
    ("net/ipv4/tcp_wmem", "4096\t16384\t4194304"),
    ("net/core/netdev_max_backlog", "1000"),
    ("net/ipv4/tcp_max_syn_backlog", "4096"),
    ("net/core/default_qdisc", "fq_codel"),
];

/// The CFS scheduler keys of a kernel before EEVDF, with their defaults.
pub const CFS_KEYS: [(&str, &str); 2] = [
    ("kernel/sched_latency_ns", "24000000"),
    ("kernel/sched_min_granularity_ns", "3000000"),
];

/// GKE COS 125's os-release.
pub const COS_125: &str = "NAME=\"Container-Optimized OS\"\nID=cos\nPRETTY_NAME=\"Container-Optimized OS from Google\"\n\
HOME_URL=\"https://cloud.google.com/container-optimized-os/docs\"\nVERSION=125\nVERSION_ID=125\nBUILD_ID=19216.0.94\n";

/// The `systemctl` stand-in: `show … --property=MainPID --value <unit>` prints the
/// unit's main PID (from `mainpid-<unit>` in the commands directory; `0`, as systemctl
/// prints for a unit not running, without it); every other verb (`daemon-reload`,
/// `restart`, …) succeeds silently and is only logged.
const SYSTEMCTL: &str = r#"case "$1" in
  show) for unit; do :; done; cat "$(dirname "$0")/mainpid-$unit" 2>/dev/null || echo 0 ;;
  *) : ;;
esac
"#;

fn base(os_release: &str, kernel: &str) -> Node {
    let n = Node::new(env!("CARGO_BIN_EXE_nvidia-tuning-gke"))
        .named(NAME)
        .version("0.2.0");
    n.file("/etc/os-release", os_release);
    for (k, v) in PROC_SYS {
        n.file(&format!("/proc/sys/{k}"), format!("{v}\n"));
    }
    n.file("/proc/sys/kernel/osrelease", format!("{kernel}\n")).file(
        "/etc/sysctl.d/99-defaults.conf",
        "# the image's own\nkernel.panic = 10\n",
    );
    // Every node has /var/lib (on COS, on the stateful partition).
    std::fs::create_dir_all(n.path("/var/lib/containerd")).unwrap();
    n.systemd_running(true);
    n.stand_in("systemctl", SYSTEMCTL);
    n
}

/// A GKE COS 125 node: kernel 6.12 (EEVDF, no `kernel.sched_latency_ns` family),
/// `/etc` on a tmpfs.
pub fn cos() -> Node {
    let n = base(COS_125, "6.12.68+");
    n.file(
        "/proc/mounts",
        "/dev/dm-0 / ext2 ro 0 0\ntmpfs /etc tmpfs rw,nosuid,nodev 0 0\n/dev/sda1 /var ext4 rw,noexec 0 0\n",
    );
    n
}

/// A GKE Ubuntu 22.04 node: kernel 5.15 with the CFS scheduler keys.
pub fn ubuntu() -> Node {
    let n = base(
        skyhook_testkit::skyhook_core::os::distro::fixtures::UBUNTU_2204,
        "5.15.0-1071-gke",
    );
    for (k, v) in CFS_KEYS {
        n.file(&format!("/proc/sys/{k}"), format!("{v}\n"));
    }
    n
}

/// Sets the configMap keys `accelerator` and `intent`.
pub fn select(n: &Node, accelerator: &str, intent: &str) {
    n.configmap("accelerator", accelerator).configmap("intent", intent);
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

/// Writes the node's labels as the agent does (`node-metadata/labels.json`).
pub fn labels(n: &Node, labels: &[(&str, &str)]) {
    let map: serde_json::Map<String, serde_json::Value> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), serde_json::Value::from(*v)))
        .collect();
    let dir = n.copy_dir().join("node-metadata");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("labels.json"), serde_json::to_string(&map).unwrap()).unwrap();
}

/// Writes `packages.json` giving this package `interrupt` (SCR JSON form).
pub fn scr_interrupt(n: &Node, interrupt: &str) {
    let dir = n.copy_dir().join("node-metadata");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("packages.json"),
        format!(
            r#"{{"agentVersion":"6.4.1","packages":{{"{NAME}":{{"name":"{NAME}","version":"0.2.0","image":"x","interrupt":{interrupt}}}}}}}"#
        ),
    )
    .unwrap();
}

/// Adds an NVIDIA GPU at PCI `address` with device ID `device` (`0x2330`).
pub fn gpu(n: &Node, address: &str, device: &str) {
    let dir = format!("/sys/bus/pci/devices/{address}");
    n.file(&format!("{dir}/vendor"), "0x10de\n")
        .file(&format!("{dir}/device"), format!("{device}\n"))
        .file(&format!("{dir}/class"), "0x030200\n");
}

/// Our sysctl file.
pub fn sysctl_file() -> String {
    format!("/etc/sysctl.d/zz-skyhook-{NAME}-tuning.conf")
}

/// Our containerd drop-in.
pub fn containerd_dropin() -> String {
    format!("/etc/systemd/system/containerd.service.d/zz-skyhook-{NAME}-tuning.conf")
}

/// Our state file.
pub fn state_file() -> String {
    format!("/var/lib/skyhook-packages/nvidia-tuning-gke/{NAME}/state.json")
}

/// Makes containerd.service run as `pid` with stack limit `stack` (soft and hard).
pub fn containerd(n: &Node, pid: u32, stack: &str) {
    std::fs::write(n.commands_dir().join("mainpid-containerd.service"), format!("{pid}\n")).unwrap();
    n.file(
        &format!("/proc/{pid}/limits"),
        format!(
            "{:<26}{:<21}{:<21}{:<10}\n{:<26}{:<21}{:<21}{:<10}\n",
            "Limit", "Soft Limit", "Hard Limit", "Units", "Max stack size", stack, stack, "bytes"
        ),
    );
}

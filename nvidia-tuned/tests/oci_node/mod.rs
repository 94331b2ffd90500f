// SPDX-License-Identifier: Apache-2.0
//! A simulated GB300 node on OCI for the oci tests and kill points: stand-ins for
//! systemctl (the RDMA VF gate's enablement and whether it ran), `rdma_topo` (ACS
//! records, the GRUB drop-in it writes) and update-grub, a kernel older than the IOMMU
//! fix, and what the reboot interrupt changes.
#![allow(dead_code)]

use crate::common::*;
use skyhook_testkit::{Node, Tree};

pub const TOPO: &str = include_str!("../../catalog/files/oci/nccl-topo-gb300.xml");
pub const UNIT: &str = include_str!("../../catalog/files/oci/rdma-vfs-ready.service");
pub const HELPER: &str = include_str!("../../catalog/files/oci/wait-rdma-vfs.sh");
pub const ACS_DROP_IN: &str = "/etc/default/grub.d/config-acs.cfg";
pub const IOMMU_DROP_IN: &str = "/etc/default/grub.d/99-iommu-passthrough.cfg";
pub const GATE_LINK: &str = "/etc/systemd/system/multi-user.target.wants/rdma-vfs-ready.service";

/// systemctl: the gate's enablement is its wants link, its activity a marker the
/// simulated boot leaves; everything else as tuned's stand-in.
pub fn systemctl_sh() -> String {
    format!(
        "R=\"$SKYHOOK_HOST_ROOT\"; W=\"$R/etc/systemd/system/multi-user.target.wants\"
[ \"$1\" = daemon-reload ] && exit 0
case \"$2\" in doca-spcx-cc@*.service)
  D=$(dirname \"$0\")
  case \"$1\" in
    enable) ln -sf /etc/systemd/system/doca-spcx-cc@.service \"$W/$2\"; exit 0 ;;
    disable) rm -f \"$W/$2\"; exit 0 ;;
    start) touch \"$D/active-$2\"; exit 0 ;;
    stop) rm -f \"$D/active-$2\"; exit 0 ;;
    is-active) if [ -e \"$D/active-$2\" ]; then echo active; exit 0; fi; echo inactive; exit 3 ;;
  esac ;;
esac
if [ \"$2\" = rdma-vfs-ready.service ]; then
  case \"$1\" in
    enable) [ -f \"$R/etc/systemd/system/$2\" ] || {{ echo \"Failed to enable unit: Unit file $2 does not exist.\" >&2; exit 1; }}
            ln -sf /etc/systemd/system/$2 \"$W/$2\"; exit 0 ;;
    disable) rm -f \"$W/$2\"; exit 0 ;;
    is-enabled) if [ -L \"$W/$2\" ]; then echo enabled; exit 0; fi; echo disabled; exit 1 ;;
    is-active) if [ -e \"$R/run/rdma-vfs-ready.ran\" ]; then echo active; exit 0; fi; echo inactive; exit 3 ;;
  esac
fi
{SYSTEMCTL_SH}"
    )
}

/// rdma_topo: `check` reports the ACS records (wrong until the simulated boot fixes
/// them) and a GPU record that fails (no driver yet); `write-grub-acs` writes the drop-in.
pub const RDMA_TOPO_SH: &str = "R=\"$SKYHOOK_HOST_ROOT\"
case \"$1\" in
  check) echo 'FAIL GPU 0008:06:00.0 no iommu_group (driver not loaded)'
         if [ -e \"$R/run/acs-fixed\" ]; then echo 'OK ACS 0008:01:00.0'; echo 'OK ACS 0009:01:00.0'; exit 1; fi
         echo 'OK ACS 0008:01:00.0'; echo 'FAIL ACS 0009:01:00.0 (SV RR CR UF)'; exit 1 ;;
  write-grub-acs) mkdir -p \"$R/etc/default/grub.d\"
         printf 'GRUB_CMDLINE_LINUX_DEFAULT=\"$GRUB_CMDLINE_LINUX_DEFAULT pci=config_acs=xx111x0@0009:01:00.0\"\\n' > \"$R/etc/default/grub.d/config-acs.cfg\" ;;
  *) echo \"unexpected rdma_topo $*\" >&2; exit 2 ;;
esac";

/// update-grub: the generated configuration is the drop-ins' text, in order.
pub const UPDATE_GRUB_SH: &str = "R=\"$SKYHOOK_HOST_ROOT\"; mkdir -p \"$R/boot/grub\"
cat \"$R\"/etc/default/grub.d/*.cfg > \"$R/boot/grub/grub.cfg\" 2>/dev/null; exit 0";

/// An Ubuntu 22.04 GB300 node on OCI (kernel 6.8, older than the IOMMU fix) with tuned
/// running, rdma_topo and GRUB, a foreign GRUB drop-in, configMap `keys`.
pub fn oci_node(keys: &[(&str, &str)]) -> Node {
    on_oci(debian(Some("2.21.0")), keys)
}

/// A node as a fresh OCI image has it, before apply installs tuned (directories every
/// node has), with `gb300` and `oci`.
pub fn fresh_gb300_oci() -> Node {
    let node = debian(None);
    node.file("/etc/tuned/tuned-main.conf", "daemon = 1\n");
    for dir in [
        "/etc/systemd/system/multi-user.target.wants",
        "/usr/lib",
        "/usr/sbin",
        "/usr/local/sbin",
        "/var/lib",
        "/var/log",
        "/run",
    ] {
        std::fs::create_dir_all(node.path(dir)).unwrap();
    }
    on_oci(node, &[("accelerator", "gb300"), ("service", "oci")])
}

pub fn on_oci(node: Node, keys: &[(&str, &str)]) -> Node {
    node.stand_in("systemctl", &systemctl_sh())
        .stand_in("rdma_topo", RDMA_TOPO_SH)
        .stand_in("update-grub", UPDATE_GRUB_SH)
        .stand_in("ip", "exit 0")
        .stand_in("udevadm", "exit 0")
        .stand_in("mlxconfig", MLXCONFIG_SH)
        .stand_in("journalctl", "echo 'doca_spcx_cc[812]: PCC host status Active'");
    node.file("/opt/mellanox/doca/tools/doca_spcx_cc", "#!/bin/sh\n");
    std::fs::set_permissions(
        node.path("/opt/mellanox/doca/tools/doca_spcx_cc"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    rdma_device(&node, "mlx5_bond_0", "0000:03:00.0", false);
    rdma_device(&node, "mlx5_0", "0000:03:00.2", true);
    node.file("/proc/sys/kernel/osrelease", "6.8.0-1021-oracle\n")
        .file("/proc/cmdline", "BOOT_IMAGE=/vmlinuz ro iommu.passthrough=1\n")
        .file("/etc/default/grub.d/50-cloudimg-settings.cfg", "GRUB_TIMEOUT=0\n");
    node.run_stand_in("update-grub", &[]).expect_code(0);
    node.clear_calls();
    for (k, v) in keys {
        node.configmap(k, v);
    }
    node
}

pub fn gb300_oci() -> Node {
    oci_node(&[("accelerator", "gb300"), ("service", "oci")])
}

/// What the reboot interrupt does to the simulated node: the gate ran, the ACS
/// correction and the IOMMU argument are live.
pub fn reboot(node: &Node) {
    node.file("/run/rdma-vfs-ready.ran", "")
        .file("/run/acs-fixed", "")
        .file(
            "/proc/cmdline",
            "BOOT_IMAGE=/vmlinuz ro iommu.passthrough=1 pci=config_acs=xx111x0@0009:01:00.0 iommu.passthrough=0\n",
        )
        .file("/sys/kernel/iommu_groups/0/type", "DMA-FQ\n");
}

/// Paths tuned itself changes while running (not the package's).
pub const TUNED_OWN: &[&str] = &[
    "etc/tuned/active_profile",
    "etc/tuned/profile_mode",
    "run/tuned",
    "var/log/tuned",
];

pub fn tree(node: &Node) -> Tree {
    Tree::of_except(&node.path("/"), TUNED_OWN)
}

/// Adds network interface `iface` to the node: a VF (`physfn`) or not, bound to
/// `driver`, with IPv6 off on it.
pub fn interface(node: &Node, iface: &str, vf: bool, driver: &str) {
    let device = node.path(&format!("/sys/bus/pci/devices/{iface}"));
    std::fs::create_dir_all(&device).unwrap();
    if vf {
        std::fs::write(device.join("physfn"), "").unwrap();
    }
    std::os::unix::fs::symlink(format!("../../../bus/pci/drivers/{driver}"), device.join("driver")).unwrap();
    let net = node.path(&format!("/sys/class/net/{iface}"));
    std::fs::create_dir_all(&net).unwrap();
    // Relative, as sysfs links are (an absolute one would leave the scratch root).
    std::os::unix::fs::symlink(format!("../../../bus/pci/devices/{iface}"), net.join("device")).unwrap();
    node.file(&format!("/proc/sys/net/ipv6/conf/{iface}/disable_ipv6"), "1\n")
        .file(&format!("/proc/sys/net/ipv6/conf/{iface}/accept_ra"), "0\n");
}

/// mlxconfig: every device allows user-programmable congestion control, unless the
/// node's `fw-disallows` marker names it.
pub const MLXCONFIG_SH: &str = "D=$(dirname \"$0\")
v='True(1)'; grep -qx \"$2\" \"$D/fw-disallows\" 2>/dev/null && v='False(0)'
echo 'Device #1:'; echo \"         USER_PROGRAMMABLE_CC                $v\"; echo '         PCC_INT_EN                          False(0)'";

/// Adds RDMA device `name` backed by PCI function `bdf` (a VF when `vf`).
pub fn rdma_device(node: &Node, name: &str, bdf: &str, vf: bool) {
    let device = node.path(&format!("/sys/bus/pci/devices/{bdf}"));
    std::fs::create_dir_all(&device).unwrap();
    if vf {
        std::fs::write(device.join("physfn"), "").unwrap();
    }
    let ib = node.path(&format!("/sys/class/infiniband/{name}"));
    std::fs::create_dir_all(&ib).unwrap();
    std::os::unix::fs::symlink(format!("../../../bus/pci/devices/{bdf}"), ib.join("device")).unwrap();
}

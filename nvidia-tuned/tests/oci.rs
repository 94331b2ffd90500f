// SPDX-License-Identifier: Apache-2.0
//! `service: oci` with `accelerator: gb300` on simulated nodes: the no-reboot chain
//! plus the host steps (NCCL topology file at TOPO_PATH, the RDMA VF boot gate, the
//! PCIe ACS correction through the node's `rdma_topo`, the IOMMU passthrough
//! workaround). Each step on a fresh node, a rerun, the simulated reboot and its
//! post-interrupt checks, exact uninstall, bad input refused before any change, and
//! pairs that ship none of it.

#[path = "../../tuned/tests/common/mod.rs"]
mod common;

mod oci_node;

use common::*;
use oci_node::*;

#[test]
fn a_fresh_node_gets_every_step_and_is_told_which_ones_need_the_reboot() {
    let node = gb300_oci();
    node.run("config")
        .expect_code(0)
        .expect_output("tuned profile oci-gb300-performance")
        .expect_output("nvidia-gb300-noreboot-base")
        .expect_output("TOPO_PATH is not set; the NCCL topology file goes to /etc/nccl/topo.xml")
        .expect_output("rdma-vfs-ready: installed and enabled rdma-vfs-ready.service")
        .expect_output("pcie-acs: rdma_topo check reports wrong ACS settings")
        .expect_output("iommu-passthrough: kernel 6.8.0-1021-oracle is older than 6.11")
        .expect_output("interrupt needed: {type: reboot}");
    assert_eq!(node.read("/etc/nccl/topo.xml").unwrap(), TOPO);
    assert_eq!(node.mode("/etc/nccl/topo.xml"), Some(0o644));
    assert_eq!(node.read("/etc/systemd/system/rdma-vfs-ready.service").unwrap(), UNIT);
    assert_eq!(node.read("/usr/local/sbin/wait-rdma-vfs.sh").unwrap(), HELPER);
    assert_eq!(node.mode("/usr/local/sbin/wait-rdma-vfs.sh"), Some(0o755));
    assert!(node.path(GATE_LINK).is_symlink(), "the gate is enabled");
    assert!(node.read(ACS_DROP_IN).unwrap().contains("pci=config_acs="));
    assert!(
        node.read(IOMMU_DROP_IN)
            .unwrap()
            .contains("$GRUB_CMDLINE_LINUX iommu.passthrough=0\"")
    );
    let grub = node.read("/boot/grub/grub.cfg").unwrap();
    assert!(
        grub.contains("pci=config_acs=") && grub.contains("iommu.passthrough=0"),
        "{grub}"
    );
    assert_eq!(
        calls_of(&node, "update-grub").len(),
        1,
        "one regeneration for both drop-ins"
    );
    assert!(!calls_of(&node, "systemctl").contains(&"systemctl start rdma-vfs-ready.service".to_string()));
    let profile = node.read("/etc/tuned/oci-gb300-performance/tuned.conf").unwrap();
    assert!(profile.contains("net.ipv6.conf.all.disable_ipv6=0"), "{profile}");
    assert!(!profile.contains("[bootloader]"), "{profile}");
    node.run("config-check").expect_code(0);

    let before_reboot = node.run("post-interrupt-check");
    before_reboot
        .expect_code(1)
        .expect_output("rdma-vfs-ready: rdma-vfs-ready.service did not run during this boot")
        .expect_output("pcie-acs: the ACS correction did not take effect: the booted command line (/proc/cmdline) has no pci=config_acs=")
        .expect_output("iommu-passthrough: the booted command line still ends with iommu.passthrough=1");
    reboot(&node);
    node.run("post-interrupt-check").expect_code(0);
}

#[test]
fn a_rerun_changes_nothing_and_after_the_reboot_needs_no_interrupt() {
    let node = gb300_oci();
    node.run("config").expect_code(0);
    let once = tree(&node);
    node.run("config")
        .expect_code(0)
        .expect_output("interrupt needed: {type: reboot}");
    once.assert_same(&tree(&node));
    reboot(&node);
    node.clear_calls();
    node.run("config")
        .expect_code(0)
        .expect_output("pcie-acs: rdma_topo check reports the ACS settings correct; nothing to do")
        .expect_output("interrupt needed: none");
    assert!(calls_of(&node, "update-grub").is_empty());
    assert!(calls_of(&node, "rdma_topo").iter().all(|c| c == "rdma_topo check"));
    node.run("post-interrupt-check").expect_code(0);
}

#[test]
fn uninstall_leaves_the_node_byte_identical_with_and_without_the_configmap() {
    for keep_configmap in [true, false] {
        let node = fresh_gb300_oci();
        node.file("/etc/nccl/README", "site notes\n");
        let before = tree(&node);
        node.run("apply").expect_code(0);
        node.run("config").expect_code(0);
        node.run("config-check").expect_code(0);
        if !keep_configmap {
            node.clear_configmaps();
        }
        node.run("uninstall").expect_code(0);
        assert!(!node.path(GATE_LINK).is_symlink());
        assert!(
            calls_of(&node, "systemctl").contains(&"systemctl disable rdma-vfs-ready.service".to_string()),
            "{:?}",
            node.calls()
        );
        node.run("uninstall-check").expect_code(0);
        before.assert_same(&tree(&node));
    }
}

#[test]
fn a_file_at_topo_path_before_the_package_comes_back_at_uninstall() {
    let mut node = fresh_gb300_oci();
    node.file("/opt/site/topo.xml", "<system version=\"1\"/>\n");
    node.env("TOPO_PATH", "/opt/site/topo.xml");
    let before = tree(&node);
    node.run("apply").expect_code(0);
    node.run("config").expect_code(0);
    assert_eq!(node.read("/opt/site/topo.xml").unwrap(), TOPO);
    assert!(!node.exists("/etc/nccl/topo.xml"));
    node.run("uninstall").expect_code(0);
    before.assert_same(&tree(&node));
}

#[test]
fn a_new_topo_path_moves_the_file() {
    let mut node = gb300_oci();
    node.run("config").expect_code(0);
    node.env("TOPO_PATH", "/var/lib/nccl/topo.xml");
    node.run("config").expect_code(0);
    assert_eq!(node.read("/var/lib/nccl/topo.xml").unwrap(), TOPO);
    assert!(
        !node.exists("/etc/nccl"),
        "the old file and the directory made for it are gone"
    );
    node.run("config-check").expect_code(0);
}

#[test]
fn a_bad_topo_path_is_refused_before_any_change() {
    let cases = [
        ("etc/nccl/topo.xml", 2, "not an absolute path"),
        ("/etc/nccl/../shadow", 2, "`..` component"),
        ("/etc/nccl/", 2, "names a directory"),
        (
            "/etc/linked/topo.xml",
            1,
            "/etc/linked is a symbolic link (to /etc/ssh)",
        ),
        (
            "/etc/topo-link.xml",
            1,
            "/etc/topo-link.xml is a symbolic link (to /etc/shadow)",
        ),
    ];
    for (value, code, says) in cases {
        let mut node = gb300_oci();
        std::os::unix::fs::symlink("/etc/ssh", node.path("/etc/linked")).unwrap();
        std::os::unix::fs::symlink("/etc/shadow", node.path("/etc/topo-link.xml")).unwrap();
        node.env("TOPO_PATH", value);
        let before = node.snapshot();
        node.clear_calls();
        node.run("config")
            .expect_code(code)
            .expect_output("TOPO_PATH")
            .expect_output(says);
        before.assert_same(&node.snapshot());
        assert!(calls_of(&node, "rdma_topo").is_empty() && calls_of(&node, "tuned-adm").is_empty());
    }
}

#[test]
fn a_bad_switch_is_refused_before_any_change() {
    for (name, value) in [
        ("CONFIGURE_PCIE_ACS", "flase"),
        ("CONFIGURE_IOMMU_PASSTHROUGH", "sometimes"),
    ] {
        let mut node = gb300_oci();
        node.env(name, value);
        let before = node.snapshot();
        node.run("config")
            .expect_code(2)
            .expect_output(name)
            .expect_output(value);
        before.assert_same(&node.snapshot());
    }
}

#[test]
fn a_node_without_rdma_topo_is_refused_before_any_change_unless_the_correction_is_off() {
    let mut node = gb300_oci();
    node.remove_stand_in("rdma_topo");
    let before = node.snapshot();
    node.run("config")
        .expect_code(1)
        .expect_output("pcie-acs: rdma_topo is not installed on this node")
        .expect_output("CONFIGURE_PCIE_ACS=false");
    before.assert_same(&node.snapshot());

    node.env("CONFIGURE_PCIE_ACS", "false");
    node.run("config")
        .expect_code(0)
        .expect_output("pcie-acs: switched off");
    assert!(!node.exists(ACS_DROP_IN));
    node.run("config-check").expect_code(0);
}

#[test]
fn switching_the_acs_correction_off_takes_its_drop_in_back() {
    let mut node = gb300_oci();
    node.run("config").expect_code(0);
    assert!(node.exists(ACS_DROP_IN));
    node.env("CONFIGURE_PCIE_ACS", "off");
    node.run("config")
        .expect_code(0)
        .expect_output("pcie-acs: took /etc/default/grub.d/config-acs.cfg back")
        .expect_output("interrupt needed: {type: reboot}");
    assert!(!node.exists(ACS_DROP_IN));
    assert!(!node.read("/boot/grub/grub.cfg").unwrap().contains("config_acs"));
    node.run("config-check").expect_code(0);
}

#[test]
fn the_iommu_workaround_follows_the_kernel_and_its_switch() {
    let mut node = gb300_oci();
    node.file("/proc/sys/kernel/osrelease", "6.11.0-1003-oracle\n");
    node.run("config")
        .expect_code(0)
        .expect_output("kernel 6.11.0-1003-oracle is at least 6.11");
    assert!(!node.exists(IOMMU_DROP_IN));
    node.env("CONFIGURE_IOMMU_PASSTHROUGH", "true");
    node.run("config").expect_code(0);
    assert!(node.exists(IOMMU_DROP_IN));
    node.env("CONFIGURE_IOMMU_PASSTHROUGH", "auto");
    node.run("config")
        .expect_code(0)
        .expect_output("iommu-passthrough: took /etc/default/grub.d/99-iommu-passthrough.cfg back");
    assert!(!node.exists(IOMMU_DROP_IN));
    node.run("config-check").expect_code(0);
}

#[test]
fn pairs_that_ship_no_host_step_do_nothing_of_it() {
    for keys in [
        &[("accelerator", "h100"), ("service", "oci")][..],
        &[("accelerator", "gb300"), ("service", "eks")][..],
        &[("accelerator", "gb300")][..],
    ] {
        let mut node = oci_node(keys);
        node.env("TOPO_PATH", "not/absolute");
        node.run("config").expect_code(0);
        assert!(calls_of(&node, "rdma_topo").is_empty(), "{keys:?}");
        for path in [
            "/etc/nccl",
            "/etc/systemd/system/rdma-vfs-ready.service",
            ACS_DROP_IN,
            IOMMU_DROP_IN,
        ] {
            assert!(!node.exists(path), "{keys:?}: {path}");
        }
        // eks's GRUB drop-in keeps what GRUB was generated from in the same record;
        // no host step is recorded.
        let record = "/var/lib/skyhook-packages/nvidia-tuned-host-steps/nvidia-tuned/state.json";
        if let Some(text) = node.read(record) {
            let changes: nvidia_tuned::host_steps::ledger::Changes = serde_json::from_str(&text).unwrap();
            assert!(keys.contains(&("service", "eks")), "{keys:?}: {text}");
            assert!(
                changes.files.is_empty() && changes.units.is_empty() && !changes.regenerate && changes.grub.is_some(),
                "{keys:?}: {text}"
            );
        } else {
            assert!(!node.exists("/var/lib/skyhook-packages/nvidia-tuned-host-steps"));
        }
        node.run("config-check").expect_code(0);
    }
}

#[test]
fn moving_off_oci_takes_every_step_back() {
    let node = gb300_oci();
    let grub = node.read("/boot/grub/grub.cfg");
    node.run("config").expect_code(0);
    node.remove_configmap("service");
    node.run("config")
        .expect_code(0)
        .expect_output("interrupt needed: {type: reboot}");
    for path in [
        "/etc/nccl",
        "/etc/systemd/system/rdma-vfs-ready.service",
        GATE_LINK,
        ACS_DROP_IN,
        IOMMU_DROP_IN,
    ] {
        assert!(!node.exists(path) && !node.path(path).is_symlink(), "{path}");
    }
    assert_eq!(
        node.read("/boot/grub/grub.cfg"),
        grub,
        "GRUB regenerated without our drop-ins"
    );
    node.run("config-check").expect_code(0);
}

#[test]
fn the_bash_versions_gate_is_taken_over_and_removed_at_uninstall() {
    let node = fresh_gb300_oci();
    let before = tree(&node);
    node.file(
        "/etc/systemd/system/rdma-vfs-ready.service",
        "[Unit]\nDescription=bash version\n",
    )
    .file("/usr/local/sbin/wait-rdma-vfs.sh", "#!/usr/bin/env bash\nexit 0\n");
    node.run("apply").expect_code(0);
    node.run("config").expect_code(0);
    assert_eq!(node.read("/etc/systemd/system/rdma-vfs-ready.service").unwrap(), UNIT);
    node.run("uninstall").expect_code(0);
    before.assert_same(&tree(&node));
}

#[test]
fn uninstall_removes_the_enablement_link_of_a_unit_file_removed_by_hand() {
    let node = gb300_oci();
    node.run("config").expect_code(0);
    std::fs::remove_file(node.path("/etc/systemd/system/rdma-vfs-ready.service")).unwrap();
    assert!(node.path(GATE_LINK).is_symlink());
    node.run("uninstall").expect_code(0);
    assert!(
        !node.path(GATE_LINK).is_symlink(),
        "the dangling enablement link is gone"
    );
    node.run("uninstall-check").expect_code(0);
}

#[test]
fn ipv6_comes_back_on_the_mlx5_vfs_that_exist_and_nowhere_else() {
    let node = gb300_oci();
    interface(&node, "rdma0v0", true, "mlx5_core");
    interface(&node, "rdma0", false, "mlx5_core");
    interface(&node, "eth0v0", true, "iavf");
    node.run("config")
        .expect_code(0)
        .expect_output("rdma-vf-ipv6: re-enabled IPv6 on RDMA VF rdma0v0");
    let conf = |iface: &str, key: &str| node.read(&format!("/proc/sys/net/ipv6/conf/{iface}/{key}")).unwrap();
    assert_eq!(
        (conf("rdma0v0", "disable_ipv6"), conf("rdma0v0", "accept_ra")),
        ("0\n".into(), "1\n".into())
    );
    for other in ["rdma0", "eth0v0"] {
        assert_eq!(conf(other, "disable_ipv6"), "1\n", "{other} is not an mlx5 VF");
    }
    assert_eq!(calls_of(&node, "ip"), ["ip link set rdma0v0 up"]);
}

/// Upstream's oci profile script re-enables IPv6 on the mlx5 VFs for whatever
/// accelerator the wrapper includes, not only gb300; the other steps stay gb300's, and
/// these pairs read none of their variables.
#[test]
fn oci_re_enables_ipv6_on_the_mlx5_vfs_for_every_accelerator() {
    for accelerator in ["h100", "gb200"] {
        let mut node = oci_node(&[("accelerator", accelerator), ("service", "oci")]);
        node.env("TOPO_PATH", "not/absolute");
        interface(&node, "rdma0v0", true, "mlx5_core");
        interface(&node, "eth0v0", true, "iavf");
        node.run("config")
            .expect_code(0)
            .expect_output("rdma-vf-ipv6: re-enabled IPv6 on RDMA VF rdma0v0");
        let conf = |iface: &str, key: &str| node.read(&format!("/proc/sys/net/ipv6/conf/{iface}/{key}")).unwrap();
        assert_eq!(
            (conf("rdma0v0", "disable_ipv6"), conf("rdma0v0", "accept_ra")),
            ("0\n".into(), "1\n".into()),
            "{accelerator}"
        );
        assert_eq!(conf("eth0v0", "disable_ipv6"), "1\n", "not an mlx5 VF");
        assert_eq!(calls_of(&node, "ip"), ["ip link set rdma0v0 up"], "{accelerator}");
        assert!(calls_of(&node, "rdma_topo").is_empty() && !node.exists("/etc/nccl"));
        node.run("config-check").expect_code(0);
    }
}

const SPCX_UNIT: &str = "/etc/systemd/system/doca-spcx-cc@.service";
const SPCX_RULES: &str = "/etc/udev/rules.d/99-doca-spcx-cc.rules";

#[test]
fn congestion_control_runs_on_each_bond_and_not_on_a_vf() {
    let node = gb300_oci();
    rdma_device(&node, "mlx5_bond_9", "0000:09:00.1", true);
    node.run("config")
        .expect_code(0)
        .expect_output("spcx-cc: mlx5_bond_9 matches mlx5_bond_* but is a virtual function")
        .expect_output("spcx-cc: congestion control runs on mlx5_bond_0 (no interrupt needed)");
    assert_eq!(
        node.read(SPCX_UNIT).unwrap(),
        include_str!("../catalog/files/oci/doca-spcx-cc@.service")
    );
    assert!(
        node.read(SPCX_RULES)
            .unwrap()
            .contains("ENV{SYSTEMD_WANTS}+=\"doca-spcx-cc@$name.service\"")
    );
    let systemctl = calls_of(&node, "systemctl");
    for call in [
        "systemctl enable doca-spcx-cc@mlx5_bond_0.service",
        "systemctl start doca-spcx-cc@mlx5_bond_0.service",
    ] {
        assert!(systemctl.contains(&call.to_string()), "{systemctl:?}");
    }
    assert!(!systemctl.iter().any(|c| c.contains("mlx5_bond_9")), "{systemctl:?}");
    assert!(calls_of(&node, "mlxconfig").contains(&"mlxconfig -d 0000:03:00.0 q".to_string()));
    node.run("config-check").expect_code(0);
}

#[test]
fn spcx_cc_off_takes_congestion_control_back_and_needs_no_doca() {
    let node = gb300_oci();
    node.run("config").expect_code(0);
    node.configmap("spcx_cc", "off");
    std::fs::remove_file(node.path("/opt/mellanox/doca/tools/doca_spcx_cc")).unwrap();
    node.clear_calls();
    node.run("config")
        .expect_code(0)
        .expect_output("spcx-cc: switched off by the configMap key spcx_cc");
    assert!(!node.exists(SPCX_UNIT) && !node.exists(SPCX_RULES));
    let systemctl = calls_of(&node, "systemctl");
    assert!(
        systemctl.contains(&"systemctl stop doca-spcx-cc@mlx5_bond_0.service".to_string()),
        "{systemctl:?}"
    );
    assert!(calls_of(&node, "mlxconfig").is_empty());
    node.run("config-check").expect_code(0);
}

#[test]
fn congestion_control_is_refused_before_any_change_when_it_cannot_run() {
    type Break = fn(&skyhook_testkit::Node);
    let cases: &[(&str, Break, &str)] = &[
        (
            "no DOCA",
            |n| std::fs::remove_file(n.path("/opt/mellanox/doca/tools/doca_spcx_cc")).unwrap(),
            "/opt/mellanox/doca/tools/doca_spcx_cc is missing or not executable",
        ),
        (
            "a foreign process",
            |n| {
                n.file("/proc/4321/comm", "doca_spcx_cc\n")
                    .file("/proc/4321/cgroup", "0::/system.slice/run-u12.service\n");
            },
            "doca_spcx_cc already runs outside this package: pid 4321 (run-u12.service)",
        ),
        (
            "no bond",
            |n| std::fs::remove_dir_all(n.path("/sys/class/infiniband/mlx5_bond_0")).unwrap(),
            "no RDMA bond matches mlx5_bond_* under /sys/class/infiniband (devices: mlx5_0)",
        ),
        (
            "firmware",
            |n| std::fs::write(n.commands_dir().join("fw-disallows"), "0000:03:00.0\n").unwrap(),
            "mlx5_bond_0: USER_PROGRAMMABLE_CC is False(0)",
        ),
        (
            "no mlxconfig",
            |n| {
                n.remove_stand_in("mlxconfig");
            },
            "mlxconfig (NVIDIA firmware tools) is not installed",
        ),
    ];
    for (name, breaks, says) in cases {
        let node = gb300_oci();
        breaks(&node);
        let before = node.snapshot();
        node.run("config")
            .expect_code(1)
            .expect_output(says)
            .expect_output("spcx_cc: off");
        before.assert_same(&node.snapshot());
        assert!(calls_of(&node, "tuned-adm").is_empty(), "{name}: tuned was not touched");
    }
}

#[test]
fn a_bad_spcx_cc_value_is_bad_input() {
    let node = gb300_oci();
    node.configmap("spcx_cc", "maybe");
    let before = node.snapshot();
    node.run("config")
        .expect_code(2)
        .expect_output("configMap key \"spcx_cc\" line 1 (\"maybe\"): not a switch");
    before.assert_same(&node.snapshot());
}

#[test]
fn a_rail_that_goes_away_loses_its_unit() {
    let node = gb300_oci();
    rdma_device(&node, "mlx5_bond_1", "0000:13:00.0", false);
    node.run("config").expect_code(0);
    std::fs::remove_dir_all(node.path("/sys/class/infiniband/mlx5_bond_1")).unwrap();
    node.clear_calls();
    node.run("config")
        .expect_code(0)
        .expect_output("spcx-cc: stopped doca-spcx-cc@mlx5_bond_1.service");
    assert!(calls_of(&node, "systemctl").contains(&"systemctl disable doca-spcx-cc@mlx5_bond_1.service".to_string()));
    assert!(
        !node
            .path("/etc/systemd/system/multi-user.target.wants/doca-spcx-cc@mlx5_bond_1.service")
            .is_symlink()
    );
    node.run("config-check").expect_code(0);
}

/// Runs the gate's helper over a fake `/sys/class/net` holding `vfs` VFs and a PF.
fn wait_for(vfs: usize) -> (i32, String) {
    let net = tempfile::tempdir().unwrap();
    for i in 0..vfs {
        let dev = net.path().join(format!("rdma0v{i}/device"));
        std::fs::create_dir_all(&dev).unwrap();
        std::fs::write(dev.join("physfn"), "").unwrap();
    }
    std::fs::create_dir_all(net.path().join("rdma0/device")).unwrap();
    let mut cmd = std::process::Command::new("sh");
    cmd.arg(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/catalog/files/oci/wait-rdma-vfs.sh"
    ))
    .env("SYS_CLASS_NET", net.path());
    let run = skyhook_testkit::run_command(&mut cmd);
    (run.code, run.output())
}

#[test]
fn the_gate_releases_kubelet_once_the_vfs_are_there_or_have_settled() {
    let (code, out) = wait_for(4);
    assert_eq!(code, 0);
    assert!(
        out.contains("4 RDMA virtual functions after 0s; kubelet may start"),
        "{out}"
    );
    let started = std::time::Instant::now();
    let (code, out) = wait_for(2);
    assert_eq!(code, 0, "a degraded NIC never holds the node back");
    assert!(out.contains("the count stays at 2 of 4 after 10s"), "{out}");
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
}

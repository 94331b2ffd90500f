// SPDX-License-Identifier: Apache-2.0
//! The hostile-input corpus: the three configMap keys and the environment (with the
//! host steps' variables on a GB300 node on OCI), fed what
//! a careful attacker would try, on a node where apply and config already ran. Each
//! case must exit 2 without a panic, print under 64 KiB naming the key (the line and
//! an excerpt where there is one) and leave the node byte-identical
//! (skyhook_testkit::hostile). Each table is data: add a row to add a case.

#[path = "../../tuned/tests/common/mod.rs"]
mod common;
mod grub_node;
mod oci_node;

use common::*;
use skyhook_testkit::Node;
use skyhook_testkit::hostile::{self, Case, Corpus, ValueRow};

/// Bad values, one per row (see [`ValueRow`]).
const VALUES: &[ValueRow] = &[
    ("traversal", "accelerator", b"../../etc/shadow", 1, "../../etc/shadow"),
    ("shell", "accelerator", b"$(reboot)", 1, "$(reboot)"),
    ("NUL", "accelerator", b"h100\0", 1, "h100"),
    ("BOM", "accelerator", b"\xef\xbb\xbfh100", 1, "h100"),
    ("not UTF-8", "accelerator", b"h1\xff0", 1, ""),
    ("two words", "accelerator", b"h100 gb200", 1, "gb200"),
    ("a second line", "accelerator", b"h100\n;reboot", 2, ";reboot"),
    ("upper case", "accelerator", b"H100", 1, "H100"),
    (
        "a profile name",
        "accelerator",
        b"nvidia-h100-performance",
        1,
        "nvidia-h100-performance",
    ),
    ("traversal", "intent", b"../inference", 1, "../inference"),
    (
        "a profile name",
        "intent",
        b"nvidia-h100-inference",
        1,
        "nvidia-h100-inference",
    ),
    ("lower case", "intent", b"multinodetraining", 1, "multinodetraining"),
    ("not UTF-8", "intent", b"\xc3\x28", 1, ""),
    ("a second line", "intent", b"inference\nperformance", 2, "performance"),
    ("traversal", "service", b"../eks", 1, "../eks"),
    ("shell", "service", b"eks;reboot", 1, "eks;reboot"),
    ("unknown service", "service", b"gke", 1, "gke"),
    ("NUL", "service", b"eks\0", 1, "eks"),
    ("not a switch", "spcx_cc", b"maybe", 1, "maybe"),
    ("two words", "spcx_cc", b"off now", 1, "now"),
    ("shell", "spcx_cc", b"$(reboot)", 1, "$(reboot)"),
];

fn configured() -> Node {
    let node = debian(Some("2.21.0"));
    node.configmap("accelerator", "h100").configmap("intent", "inference");
    node.run("config").expect_code(0);
    node
}

fn corpus(cases: Vec<Case>) {
    let node = configured();
    let report = Corpus::new(&node).run(&cases);
    eprintln!("nvidia-tuned corpus: {} case(s)", report.cases);
    report.assert_passed();
}

#[test]
fn hostile_values_are_refused() {
    let mut cases = hostile::value_cases(VALUES, "config");
    let long = "x".repeat(900 << 10);
    cases.push(
        Case::new("accelerator: one 900 KB word", "config")
            .key("accelerator", &long)
            .line(1),
    );
    cases.push(
        Case::new("intent: one 900 KB word", "config")
            .key("intent", &long)
            .line(1),
    );
    corpus(cases);
}

#[test]
fn configmap_files_that_are_not_plain_values_are_refused() {
    let mut cases = Vec::new();
    for key in ["accelerator", "intent", "service"] {
        cases.extend(hostile::file_cases(key, "config", "h100 "));
    }
    corpus(cases);
}

#[test]
fn hostile_environment_is_refused() {
    let mut cases = hostile::environment_cases("config");
    cases.extend(hostile::package_manager_cases("uninstall"));
    cases.extend(hostile::version_cases("upgrade"));
    corpus(cases);
}

#[test]
fn hostile_host_step_variables_are_refused() {
    use std::os::unix::ffi::OsStringExt;
    let long = format!("/{}", "t".repeat(5000));
    let rows: &[(&str, &str, &str)] = &[
        ("TOPO_PATH", "etc/nccl/topo.xml", "not an absolute path"),
        ("TOPO_PATH", "/etc/nccl/../../etc/shadow", "`..` component"),
        ("TOPO_PATH", "/etc/nccl/", "names a directory"),
        ("TOPO_PATH", "/etc/nccl/topo.xml\n/etc/shadow", "NUL or newline"),
        ("TOPO_PATH", &long, "PATH_MAX"),
        ("CONFIGURE_PCIE_ACS", "yes please", "\"yes please\""),
        ("CONFIGURE_IOMMU_PASSTHROUGH", "$(reboot)", "\"$(reboot)\""),
        ("RAIL_GLOB", "mlx5_bond_*;reboot", "not an RDMA device name pattern"),
        ("RAIL_GLOB", "../../../etc/*", "not an RDMA device name pattern"),
    ];
    let mut cases: Vec<Case> = rows
        .iter()
        .map(|(name, value, says)| {
            Case::new(&format!("{name}: {}", &value[..value.len().min(30)]), "config")
                .env(name, *value)
                .says(says)
        })
        .collect();
    cases.push(
        Case::new("TOPO_PATH: not UTF-8", "config")
            .env(
                "TOPO_PATH",
                std::ffi::OsString::from_vec(b"/etc/nccl/t\xffpo.xml".to_vec()),
            )
            .says("not UTF-8"),
    );
    let node = oci_node::gb300_oci();
    node.run("config").expect_code(0);
    let report = Corpus::new(&node).run(&cases);
    eprintln!("nvidia-tuned host-step corpus: {} case(s)", report.cases);
    report.assert_passed();
}

#[test]
fn hostile_bootloader_switch_is_refused() {
    use std::os::unix::ffi::OsStringExt;
    let rows: &[(&str, &str)] = &[
        ("flase", "\"flase\""),
        ("$(reboot)", "\"$(reboot)\""),
        ("auto", "\"auto\""),
        ("true; reboot", "\"true; reboot\""),
        ("on\noff", "not a switch"),
    ];
    let mut cases: Vec<Case> = rows
        .iter()
        .map(|(value, says)| {
            Case::new(&format!("CONFIGURE_BOOTLOADER: {value}"), "config")
                .env("CONFIGURE_BOOTLOADER", *value)
                .says(says)
        })
        .collect();
    cases.push(
        Case::new("CONFIGURE_BOOTLOADER: not UTF-8", "config")
            .env(
                "CONFIGURE_BOOTLOADER",
                std::ffi::OsString::from_vec(b"fals\xff".to_vec()),
            )
            .says("not UTF-8"),
    );
    cases.push(
        Case::new("CONFIGURE_BOOTLOADER: 100 KB", "config")
            .env("CONFIGURE_BOOTLOADER", "f".repeat(100_000))
            .says("CONFIGURE_BOOTLOADER"),
    );
    // An rke2 node with GRUB where config already ran (the drop-in deployed).
    let node = debian(Some("2.21.0"));
    grub_node::with_grub(&node);
    node.configmap("accelerator", "gb200").configmap("service", "rke2");
    node.run("config").expect_code(0);
    let report = Corpus::new(&node).run(&cases);
    eprintln!("nvidia-tuned bootloader-switch corpus: {} case(s)", report.cases);
    report.assert_passed();
}

#[test]
fn damaged_records_are_refused_naming_them() {
    let node = configured();
    let cases = hostile::every_record_cases(&node, &["config", "uninstall"]);
    let report = Corpus::new(&node).run(&cases);
    eprintln!("nvidia-tuned record corpus: {} case(s)", report.cases);
    report.assert_passed();
}

#[test]
fn hostile_node_metadata_never_hangs_a_step() {
    // accelerator auto on a node without NVIDIA devices: without usable labels the
    // step refuses (exit 2), naming the file it could not use.
    let node = configured();
    let cases = hostile::node_metadata_cases("config", 2, &[("accelerator", "auto")]);
    let report = Corpus::new(&node).run(&cases);
    eprintln!("nvidia-tuned node-metadata corpus: {} case(s)", report.cases);
    report.assert_passed();
}

#[test]
fn a_damaged_pci_tree_is_the_nodes_failure_never_a_hang() {
    // accelerator auto without a label: the PCI tree decides. Every damaged shape of a
    // device's files is exit 1 naming the file, the node unchanged.
    let node = configured();
    let dev = "/sys/bus/pci/devices/0000:1b:00.0";
    node.file(&format!("{dev}/vendor"), "0x10de\n")
        .file(&format!("{dev}/device"), "0x2330\n")
        .file(&format!("{dev}/class"), "0x030200\n");
    let case = |what: &str, file: &str, input: hostile::Input| {
        Case::new(&format!("{dev}/{file}: {what}"), "config")
            .also_key("accelerator", "auto")
            .input(input)
            .code(1)
            .says(&format!("{dev}/{file}"))
    };
    let mut cases = Vec::new();
    for file in ["vendor", "device", "class"] {
        let path = format!("{dev}/{file}");
        cases.extend([
            case(
                "not hex",
                file,
                hostile::Input::HostFile(path.clone(), b"0xZZZZ\n".to_vec()),
            ),
            case("empty", file, hostile::Input::HostFile(path.clone(), Vec::new())),
            case(
                "NUL bytes",
                file,
                hostile::Input::HostFile(path.clone(), b"0x10\0de\n".to_vec()),
            ),
            case(
                "2 MiB",
                file,
                hostile::Input::HostFile(path.clone(), vec![b'0'; 2 << 20]),
            ),
            case("a FIFO", file, hostile::Input::HostFifo(path.clone())),
            case("a directory", file, hostile::Input::HostDir(path.clone())),
            case(
                "a link to /dev/zero",
                file,
                hostile::Input::HostLink(path, "/dev/zero".into()),
            ),
        ]);
    }
    let report = Corpus::new(&node).run(&cases);
    eprintln!("nvidia-tuned PCI corpus: {} case(s)", report.cases);
    report.assert_passed();
}

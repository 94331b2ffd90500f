// SPDX-License-Identifier: Apache-2.0
//! The oci × gb300 PCIe ACS correction and IOMMU passthrough workaround on RHEL-like
//! hosts (Oracle Linux 9 on OCI), whose GRUB reads no `/etc/default/grub.d`: their
//! kernel arguments go on the boot configuration the family's way (grubby-bls; or,
//! without grubby, `GRUB_CMDLINE_LINUX` and grub2-mkconfig), the ACS value from
//! `rdma_topo write-grub-acs --dry-run` (no drop-in ever written). config,
//! config-check, a rerun (no change), the reboot, post-interrupt-check, switching
//! the steps off, uninstall without the configMap and uninstall-check converge, and
//! the boot files come back byte for byte; a value or a boot configuration where
//! ours would not be the effective one is refused before any change.

#[path = "../../tuned/tests/common/mod.rs"]
mod common;

mod oci_node;

use common::*;
use oci_node::*;
use skyhook_testkit::Node;
use skyhook_testkit::boot_tools::{bls_options, sourced};

const ACS: &str = "pci=config_acs=xx111x0@0009:01:00.0";

/// config → config-check → rerun → reboot → post-interrupt-check → uninstall
/// (without the configMap) → uninstall-check; `placed`: checks the node after config.
fn whole_life(node: Node, placed: impl Fn(&Node)) {
    whole_life_booting(node, reboot, placed)
}

/// [`whole_life`] with `boot` simulating the reboot.
fn whole_life_booting(node: Node, boot: fn(&Node), placed: impl Fn(&Node)) {
    let boot_before = boot_files(&node);
    node.run("config").expect_code(0).expect_output("needs a reboot");
    placed(&node);
    assert!(
        !node.exists(ACS_DROP_IN) && !node.exists(IOMMU_DROP_IN) && !node.exists("/etc/default/grub.d"),
        "no GRUB drop-in on a RHEL-like host"
    );
    let topo = calls_of(&node, "rdma_topo");
    assert!(
        topo.contains(&"rdma_topo write-grub-acs --dry-run".to_string())
            && !topo.contains(&"rdma_topo write-grub-acs".to_string()),
        "the value comes from the tool, which writes nothing: {topo:?}"
    );
    node.run("config-check").expect_code(0);
    let configured = node.snapshot();
    node.clear_calls();
    node.run("config").expect_code(0);
    configured.assert_same(&node.snapshot());
    assert!(
        calls_of(&node, "grubby --update").is_empty() && calls_of(&node, "grub2-mkconfig").is_empty(),
        "a rerun changes nothing: {:?}",
        node.calls()
    );
    boot(&node);
    node.run("post-interrupt-check").expect_code(0);
    let booted = boot_files(&node);
    node.run("config").expect_code(0);
    assert_eq!(
        boot_files(&node),
        booted,
        "after the reboot ACS reads correct: the recorded argument stays"
    );
    node.run("post-interrupt-check").expect_code(0);
    node.clear_configmaps();
    node.run("uninstall").expect_code(0);
    node.run("uninstall-check").expect_code(0);
    assert_eq!(boot_files(&node), boot_before, "the boot files back byte for byte");
}

#[test]
fn grubby_puts_the_arguments_on_every_entry_and_uninstall_gives_each_back() {
    whole_life(rhel_oci(true), |node| {
        let options = bls_options(node, OL9_ENTRY);
        assert!(options.ends_with(&format!("{ACS} iommu.passthrough=0")), "{options}");
        assert!(!options.contains("iommu.passthrough=1"), "{options}");
        assert!(
            bls_options(node, OL9_RESCUE).ends_with("iommu.passthrough=0"),
            "every entry"
        );
        let kernel_cmdline = node.read("/etc/kernel/cmdline").unwrap();
        assert!(
            kernel_cmdline.contains("iommu.passthrough=0"),
            "kernels installed later too"
        );
    });
}

#[test]
fn without_grubby_the_grub_defaults_carry_them_last() {
    whole_life(rhel_oci(false), |node| {
        let grub = node.read("/etc/default/grub").unwrap();
        assert!(
            grub.contains(&format!("console=ttyAMA0 {ACS} iommu.passthrough=0\"")),
            "{grub}"
        );
        let options = bls_options(node, OL9_ENTRY);
        let last = options
            .split_whitespace()
            .rev()
            .find(|a| a.starts_with("iommu.passthrough="));
        assert_eq!(last, Some("iommu.passthrough=0"), "{options}");
        assert!(options.contains(ACS), "{options}");
        assert_eq!(
            calls_of(node, "grub2-mkconfig"),
            ["grub2-mkconfig --update-bls-cmdline -o /boot/grub2/grub.cfg"]
        );
    });
}

#[test]
fn switching_the_steps_off_takes_their_arguments_back() {
    for grubby in [true, false] {
        let mut node = rhel_oci(grubby);
        let before = boot_files(&node);
        node.run("config").expect_code(0);
        node.env("CONFIGURE_PCIE_ACS", "false");
        node.run("config").expect_code(0);
        node.run("config-check").expect_code(0);
        let options = bls_options(&node, OL9_ENTRY);
        assert!(
            !options.contains("pci=") && options.trim_end().ends_with("iommu.passthrough=0"),
            "{grubby}: {options}"
        );
        node.env("CONFIGURE_IOMMU_PASSTHROUGH", "false");
        node.run("config").expect_code(0);
        node.run("config-check").expect_code(0);
        assert_eq!(boot_files(&node), before, "{grubby}: all back, before uninstall");
        node.run("uninstall").expect_code(0);
        node.run("uninstall-check").expect_code(0);
        assert_eq!(boot_files(&node), before, "{grubby}");
    }
}

#[test]
fn a_later_grub_cmdline_linux_default_of_the_same_key_is_refused_before_any_change() {
    let node = rhel_oci(false);
    node.file(
        "/etc/default/grub",
        OL9_GRUB.replace(
            "GRUB_DISABLE_RECOVERY",
            "GRUB_CMDLINE_LINUX_DEFAULT=\"quiet iommu.passthrough=1\"\nGRUB_DISABLE_RECOVERY",
        ),
    );
    let before = node.snapshot();
    node.run("config")
        .expect_code(1)
        .expect_output("GRUB_CMDLINE_LINUX_DEFAULT=\"quiet iommu.passthrough=1\"")
        .expect_output("CONFIGURE_IOMMU_PASSTHROUGH=false");
    before.assert_same(&node.snapshot());
}

#[test]
fn another_pci_option_grubby_would_replace_is_refused_before_any_change() {
    let node = rhel_oci(true);
    let entry = node
        .read(OL9_ENTRY)
        .unwrap()
        .replace("console=ttyAMA0", "console=ttyAMA0 pci=realloc");
    node.file(OL9_ENTRY, entry);
    let before = node.snapshot();
    node.run("config")
        .expect_code(1)
        .expect_output("carries pci=realloc")
        .expect_output("CONFIGURE_PCIE_ACS=false");
    before.assert_same(&node.snapshot());
}

/// The ACS argument of a GB300 with two RoCE ports, as set on a RHEL-like host.
const ACS_TWO: &str = "pci=\"config_acs=xx110x1@0009:02:00.0;xx101x1@0009:02:02.0\"";

/// A node whose rdma_topo names two ports.
fn two_ports(grubby: bool) -> Node {
    let node = rhel_oci(grubby);
    std::fs::write(node.commands_dir().join("two-ports"), "").unwrap();
    node
}

/// The reboot, booting the default entry: GRUB parses its `options` line and passes
/// the arguments without their quotes.
fn boot_default_entry(node: &Node) {
    reboot(node);
    let options = bls_options(node, OL9_ENTRY).replace('"', "");
    node.file("/proc/cmdline", format!("BOOT_IMAGE=/vmlinuz {options}\n"));
}

/// `GRUB_CMDLINE_LINUX` as grub2-mkconfig gets it, sourcing `/etc/default/grub`
/// (the shell silent about it).
fn sourced_cmdline(node: &Node) -> String {
    let (value, stderr) = sourced(node, "/etc/default/grub", "GRUB_CMDLINE_LINUX");
    assert!(stderr.is_empty(), "{stderr}");
    value
}

#[test]
fn several_acs_ports_go_on_every_entry_double_quoted_with_grubby() {
    whole_life_booting(two_ports(true), boot_default_entry, |node| {
        for entry in [OL9_ENTRY, OL9_RESCUE] {
            let options = bls_options(node, entry);
            assert!(
                options.ends_with(&format!("{ACS_TWO} iommu.passthrough=0")),
                "{options}"
            );
        }
        assert!(
            node.read("/etc/kernel/cmdline")
                .unwrap()
                .contains(&format!("{ACS_TWO} iommu.passthrough=0")),
            "kernels installed later too"
        );
        assert!(
            sourced_cmdline(node).ends_with(&format!("{ACS_TWO} iommu.passthrough=0")),
            "{}",
            node.read("/etc/default/grub").unwrap()
        );
    });
}

#[test]
fn several_acs_ports_go_on_the_grub_defaults_escaped_without_grubby() {
    whole_life_booting(two_ports(false), boot_default_entry, |node| {
        let grub = node.read("/etc/default/grub").unwrap();
        assert!(
            grub.contains("pci=\\\"config_acs=xx110x1@0009:02:00.0;xx101x1@0009:02:02.0\\\" iommu.passthrough=0\""),
            "{grub}"
        );
        assert!(
            sourced_cmdline(node).ends_with(&format!("{ACS_TWO} iommu.passthrough=0")),
            "{grub}"
        );
        let options = bls_options(node, OL9_ENTRY);
        assert!(options.contains(ACS_TWO), "{options}");
    });
}

#[test]
fn a_hostile_acs_value_is_refused_before_any_change_naming_it() {
    for (value, named) in [
        ("xx110x1@0009:02:00.0;\nxx101x1@0009:02:02.0", "xx110x1@0009:02:00.0;"),
        ("xx110x1@0009:02:00.0;$(reboot)", "$(reboot)"),
        ("xx110x1@0009:02:00.0;`reboot`", "`reboot`"),
        ("xx110x1@0009:02:00.0\\\";xx101x1@0009:02:02.0", "xx110x1@0009:02:00.0"),
        ("xx110x1@0009:02:00.0;xx101x1@0009:02:02.0 \\\"", "xx110x1@0009:02:00.0"),
    ] {
        for grubby in [true, false] {
            let node = rhel_oci(grubby);
            std::fs::write(node.commands_dir().join("acs-value"), value).unwrap();
            let before = node.snapshot();
            node.run("config")
                .expect_code(1)
                .expect_output(named)
                .expect_output("Nothing was changed")
                .expect_output("CONFIGURE_PCIE_ACS=false");
            before.assert_same(&node.snapshot());
        }
    }
}

/// An Oracle Linux node whose grubby is the C one (RHEL 7 / Amazon Linux 2 style) on
/// `/boot/grub2/grub.cfg`, its one `linux` line carrying `options`.
fn c_grubby(options: &str) -> Node {
    use skyhook_testkit::boot_tools::GRUBBY_C;
    let node = rhel_oci(true);
    node.stand_in("grubby", GRUBBY_C).file(
        "/boot/grub2/grub.cfg",
        format!(
            "menuentry 'Oracle Linux' {{\n\tlinux /vmlinuz-5.15.0-304.171.4.el9uek.aarch64 {options}\n\tinitrd \
             /initramfs-5.15.0-304.171.4.el9uek.aarch64.img\n}}\n"
        ),
    );
    node.clear_calls();
    node
}

#[test]
fn an_entry_repeating_iommu_passthrough_is_refused_with_the_c_grubby_before_any_change() {
    let node = c_grubby("root=/dev/mapper/ol-root ro iommu.passthrough=1 console=ttyAMA0 iommu.passthrough=1");
    let before = node.snapshot();
    node.run("config")
        .expect_code(1)
        .expect_output("carries iommu.passthrough 2 times")
        .expect_output("replaces only the first")
        .expect_output("CONFIGURE_IOMMU_PASSTHROUGH=false");
    before.assert_same(&node.snapshot());
    assert!(calls_of(&node, "grubby --update").is_empty(), "{:?}", node.calls());
}

#[test]
fn an_acs_value_naming_several_ports_is_refused_with_the_c_grubby_before_any_change() {
    let node = c_grubby("root=/dev/mapper/ol-root ro iommu.passthrough=1 console=ttyAMA0");
    std::fs::write(node.commands_dir().join("two-ports"), "").unwrap();
    let before = node.snapshot();
    node.run("config")
        .expect_code(1)
        .expect_output("names several ports")
        .expect_output("CONFIGURE_PCIE_ACS=false");
    before.assert_same(&node.snapshot());
}

#[test]
fn without_grubby_uninstall_gives_etc_kernel_cmdline_back_itself() {
    let node = two_ports(false);
    let own = "root=/dev/mapper/ol-root ro crashkernel=auto rd.lvm.lv=ol/root console=ttyAMA0 rd.debug\n";
    node.file("/etc/kernel/cmdline", own);
    let before = boot_files(&node);
    node.run("config").expect_code(0);
    let written = node.read("/etc/kernel/cmdline").unwrap();
    assert!(
        written.contains(ACS_TWO) && !written.contains("rd.debug"),
        "grub2-mkconfig rewrote it from the defaults: {written}"
    );
    node.clear_configmaps();
    node.run("uninstall").expect_code(0);
    node.run("uninstall-check").expect_code(0);
    assert_eq!(
        node.read("/etc/kernel/cmdline").as_deref(),
        Some(own),
        "its own bytes, not the defaults'"
    );
    assert_eq!(boot_files(&node), before);
}

// SPDX-License-Identifier: Apache-2.0
//! GRUB drop-ins on RHEL-like hosts: a pair whose files (services aks, eks, rke2) or
//! host steps (oci × gb300: the PCIe ACS correction, the IOMMU passthrough
//! workaround) write `/etc/default/grub.d/*.cfg` is refused before any change, since
//! only Debian-family GRUB reads that directory; the same pairs on Ubuntu, and other
//! pairs on RHEL, go on.

#[path = "../../tuned/tests/common/mod.rs"]
mod common;

mod oci_node;

use common::*;
use oci_node::*;
use skyhook_core::os::distro::fixtures;
use skyhook_testkit::Node;

/// A Rocky Linux 9 node with tuned 2.24.1 installed and running, grubby as its
/// boot tool, configMap `keys`.
fn rocky(keys: &[(&str, &str)]) -> Node {
    let node = rhel(fixtures::ROCKY_9, false, Some("2.24.1"));
    node.stand_in("grubby", skyhook_testkit::boot_tools::GRUBBY);
    for (k, v) in keys {
        node.configmap(k, v);
    }
    node
}

#[test]
fn a_service_with_a_grub_drop_in_is_refused_on_a_rhel_like_host_before_any_change() {
    for (service, drop_in) in [
        ("eks", "/etc/default/grub.d/99_tuned.cfg"),
        ("aks", "/etc/default/grub.d/99_tuned.cfg"),
        ("rke2", "/etc/default/grub.d/99-nvidia-tuned-cmdline.cfg"),
    ] {
        let node = rocky(&[("accelerator", "h100"), ("service", service)]);
        let before = node.snapshot();
        if service == "rke2" {
            // rke2's own step (upstream's configure_bootloader) refuses first, naming
            // its switch.
            node.run("config")
                .expect_code(1)
                .expect_output("this node is RHEL-like")
                .expect_output("CONFIGURE_BOOTLOADER=false");
            before.assert_same(&node.snapshot());
            continue;
        }
        node.run("config")
            .expect_code(1)
            .expect_output(&format!(
                "accelerator h100 with service {service} writes GRUB drop-ins ({drop_in} (service {service}))"
            ))
            .expect_output("this is a RHEL-like host (os-release ID=rocky)")
            .expect_output("only Debian-family GRUB (update-grub) reads /etc/default/grub.d")
            .expect_output("leave the service out");
        before.assert_same(&node.snapshot());
        assert!(calls_of(&node, "tuned-adm").is_empty(), "{service}: {:?}", node.calls());
    }
}

#[test]
fn the_same_pair_on_ubuntu_and_a_pair_without_drop_ins_on_rhel_go_on() {
    let ubuntu = debian(Some("2.21.0"));
    ubuntu.stand_in("update-grub", skyhook_testkit::boot_tools::UPDATE_GRUB);
    ubuntu.configmap("accelerator", "h100").configmap("service", "eks");
    ubuntu.run("config").expect_code(0);
    assert!(ubuntu.exists("/etc/default/grub.d/99_tuned.cfg"));
    for keys in [
        &[("accelerator", "h100")][..],
        &[("accelerator", "h100"), ("service", "bcm")],
    ] {
        let node = rocky(keys);
        node.run("config").expect_code(0);
        assert!(!node.exists("/etc/default/grub.d"), "{keys:?}");
    }
}

#[test]
fn the_oci_gb300_grub_steps_are_refused_on_a_rhel_like_host_unless_switched_off() {
    let node = on_oci(
        rhel(fixtures::ROCKY_9, false, Some("2.24.1")),
        &[("accelerator", "gb300"), ("service", "oci")],
    );
    let before = node.snapshot();
    node.run("config")
        .expect_code(1)
        .expect_output(&format!("{ACS_DROP_IN} (the PCIe ACS correction (CONFIGURE_PCIE_ACS))"))
        .expect_output(&format!(
            "{IOMMU_DROP_IN} (the IOMMU passthrough workaround (CONFIGURE_IOMMU_PASSTHROUGH))"
        ))
        .expect_output("CONFIGURE_PCIE_ACS=false and CONFIGURE_IOMMU_PASSTHROUGH=false");
    before.assert_same(&node.snapshot());
    let mut node = node;
    node.env("CONFIGURE_PCIE_ACS", "false")
        .env("CONFIGURE_IOMMU_PASSTHROUGH", "false");
    node.run("config").expect_code(0);
    assert!(!node.exists(ACS_DROP_IN) && !node.exists(IOMMU_DROP_IN));
}

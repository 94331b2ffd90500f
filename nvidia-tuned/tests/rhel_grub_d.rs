// SPDX-License-Identifier: Apache-2.0
//! GRUB drop-ins on RHEL-like hosts, where only Debian-family GRUB reads
//! `/etc/default/grub.d`: eks's and aks's drop-in is left out (tuned's bootloader plugin
//! puts the arguments on the boot entries there) and the rest of the service deployed;
//! rke2 (upstream's configure_bootloader) is refused before any change; the same
//! pairs on Ubuntu, and other pairs on RHEL, go on. (The oci × gb300 host steps put
//! their kernel arguments on the boot configuration there: `rhel_host_steps.rs`.)

#[path = "../../tuned/tests/common/mod.rs"]
mod common;

use common::*;
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
fn eks_and_aks_leave_their_grub_drop_in_to_tuned_on_a_rhel_like_host() {
    const MAC_POLICY: &str = "/etc/systemd/network/99-default.link.d/mac-address-policy.conf";
    for service in ["eks", "aks"] {
        let node = rocky(&[("accelerator", "h100"), ("service", service)]);
        node.run("config")
            .expect_code(0)
            .expect_output("/etc/default/grub.d/99_tuned.cfg is not written on this RHEL-like node (ID=\"rocky\")");
        assert!(!node.exists("/etc/default/grub.d/99_tuned.cfg"), "{service}");
        assert!(
            node.exists(MAC_POLICY),
            "{service}: the rest of the service is deployed"
        );
        assert!(
            calls_of(&node, "grubby").is_empty(),
            "{service}: GRUB is tuned's business here"
        );
        node.run("config-check").expect_code(0);
        node.run("uninstall").expect_code(0);
        node.run("uninstall-check").expect_code(0);
        assert!(!node.exists(MAC_POLICY) && !node.exists("/etc/default/grub.d/99_tuned.cfg"));
    }
    // rke2's own step (upstream's configure_bootloader) refuses, naming its switch.
    let node = rocky(&[("accelerator", "h100"), ("service", "rke2")]);
    let before = node.snapshot();
    node.run("config")
        .expect_code(1)
        .expect_output("this node is RHEL-like")
        .expect_output("CONFIGURE_BOOTLOADER=false");
    before.assert_same(&node.snapshot());
    assert!(calls_of(&node, "tuned-adm").is_empty(), "{:?}", node.calls());
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
fn a_drop_in_on_a_distribution_of_neither_family_is_refused_before_any_change() {
    // The family is decided once per step (skyhook-core's Step::family): eks's drop-in
    // is not left out there (the node is not RHEL-like), and the refusal of drop-ins
    // off the Debian family names the distribution it cannot place.
    let node = rhel(fixtures::OPENSUSE, false, Some("2.24.1"));
    node.configmap("accelerator", "h100").configmap("service", "eks");
    let before = node.snapshot();
    node.run("config")
        .expect_code(1)
        .expect_output("unsupported distribution: ID=\"opensuse-leap\"");
    before.assert_same(&node.snapshot());
    assert!(calls_of(&node, "tuned-adm").is_empty(), "{:?}", node.calls());
}

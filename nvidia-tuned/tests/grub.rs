// SPDX-License-Identifier: Apache-2.0
//! GRUB for the services' drop-ins on simulated nodes (Debian's update-grub stand-in):
//! config regenerates it when an eks, aks or rke2 drop-in is deployed, changed or
//! removed and when the arguments the drop-ins read change, not on an unchanged rerun;
//! uninstall regenerates it when they go; a Debian node without GRUB tools is refused
//! before any change. rke2's drop-in as upstream's configure_bootloader step decides it:
//! `CONFIGURE_BOOTLOADER`, the Debian family only, not where GRUB already expands
//! `$tuned_params`, upstream's marker line.

mod before;
#[path = "../../tuned/tests/common/mod.rs"]
mod common;
mod grub_node;

use common::*;
use grub_node::{GRUB_CFG, linux_line, regenerations, tuned_writes_bootcmdline, with_grub};
use nvidia_tuned::grub::bootloader_step::MARKER;
use skyhook_core::os::distro::fixtures;
use skyhook_testkit::Node;

const EKS_DROP_IN: &str = "/etc/default/grub.d/99_tuned.cfg";
const RKE2_DROP_IN: &str = "/etc/default/grub.d/99-nvidia-tuned-cmdline.cfg";
const GB200_ARGS: &str = "hugepagesz=2M hugepages=5128 hugepagesz=512M hugepages=4 default_hugepagesz=2M";

/// An Ubuntu 24.04 node with tuned 2.21 running, GRUB, configMap `keys`.
fn node(keys: &[(&str, &str)]) -> Node {
    let node = debian(Some("2.21.0"));
    node.file("/etc/os-release", fixtures::UBUNTU_2404);
    with_grub(&node);
    for (k, v) in keys {
        node.configmap(k, v);
    }
    node
}

#[test]
fn eks_config_regenerates_grub_and_an_unchanged_rerun_does_not() {
    let node = node(&[("accelerator", "gb200"), ("service", "eks")]);
    // What tuned wrote when it applied the chain (its daemon, not simulated here).
    tuned_writes_bootcmdline(&node, GB200_ARGS);
    node.run("config")
        .expect_code(0)
        .expect_output("GRUB is regenerated at the end of config: /etc/default/grub.d/99_tuned.cfg is new or changed")
        .expect_output("interrupt needed: {type: reboot}");
    assert_eq!(regenerations(&node), 1);
    assert_eq!(
        linux_line(&node),
        format!("root=UUID=0b1c ro {GB200_ARGS}"),
        "grub.cfg takes the arguments from bootcmdline (eks's drop-in replaces the platform's)"
    );
    node.run("config-check").expect_code(0);

    node.clear_calls();
    node.run("config")
        .expect_code(0)
        .expect_output("interrupt needed: none");
    assert_eq!(regenerations(&node), 0, "nothing changed: no regeneration");

    // tuned rewrote bootcmdline since (its daemon applied the profile again at boot,
    // with other arguments): the check sees GRUB behind, config regenerates it.
    tuned_writes_bootcmdline(&node, "hugepages=4");
    node.run("config-check")
        .expect_code(1)
        .expect_output("GRUB was not regenerated for the kernel arguments /etc/default/grub.d/99_tuned.cfg hands it");
    node.run("config")
        .expect_code(0)
        .expect_output("/etc/tuned/bootcmdline changed since GRUB was last generated")
        .expect_output("interrupt needed: {type: reboot}");
    assert_eq!(regenerations(&node), 1);
    assert_eq!(linux_line(&node), "root=UUID=0b1c ro hugepages=4");
    node.run("config-check").expect_code(0);
}

#[test]
fn an_intent_change_regenerates_grub_though_the_drop_in_stays_the_same() {
    for service in ["eks", "aks", "rke2"] {
        let node = node(&[("accelerator", "gb200"), ("service", service)]);
        node.run("config").expect_code(0);
        let drop_in = if service == "rke2" { RKE2_DROP_IN } else { EKS_DROP_IN };
        let before = node.read(drop_in).unwrap();
        node.clear_calls();
        node.configmap("intent", "inference");
        node.run("config")
            .expect_code(0)
            .expect_output("the chain's kernel arguments are not those GRUB was last generated for")
            .expect_output("interrupt needed: {type: reboot}");
        assert_eq!(
            node.read(drop_in).unwrap(),
            before,
            "{service}: the drop-in is byte-identical"
        );
        assert_eq!(regenerations(&node), 1, "{service}");
        node.run("config-check").expect_code(0);
    }
}

#[test]
fn moving_off_a_service_with_a_drop_in_regenerates_grub_without_it() {
    let node = node(&[("accelerator", "gb200"), ("service", "rke2")]);
    tuned_writes_bootcmdline(&node, GB200_ARGS);
    node.run("config").expect_code(0);
    assert_eq!(
        linux_line(&node),
        format!("root=UUID=0b1c ro console=tty1 console=ttyS0 {GB200_ARGS}"),
        "rke2's drop-in appends to the platform's arguments"
    );
    node.clear_calls();
    node.configmap("service", "bcm");
    node.run("config")
        .expect_code(0)
        .expect_output("/etc/default/grub.d/99-nvidia-tuned-cmdline.cfg goes");
    assert!(!node.exists(RKE2_DROP_IN));
    assert_eq!(regenerations(&node), 1);
    assert_eq!(linux_line(&node), "root=UUID=0b1c ro console=tty1 console=ttyS0");
    node.run("config-check").expect_code(0);
}

#[test]
fn uninstall_regenerates_grub_once_without_the_drop_in() {
    let node = debian(None);
    node.file("/etc/os-release", fixtures::UBUNTU_2404);
    node.file("/etc/tuned/tuned-main.conf", "daemon = 1\n");
    tuned_writes_bootcmdline(&node, GB200_ARGS);
    with_grub(&node);
    let before = before::snapshot(&node);
    node.configmap("accelerator", "h100").configmap("service", "aks");
    node.run("apply").expect_code(0);
    node.run("config").expect_code(0);
    assert_eq!(linux_line(&node), format!("root=UUID=0b1c ro {GB200_ARGS}"));
    node.clear_calls();
    node.run("uninstall").expect_code(0);
    assert_eq!(
        regenerations(&node),
        1,
        "tuned's uninstall regenerates; not a second time"
    );
    assert_eq!(linux_line(&node), "root=UUID=0b1c ro console=tty1 console=ttyS0");
    node.run("uninstall-check").expect_code(0);
    before::assert_as(&node, &before);
}

#[test]
fn a_debian_node_without_grub_tools_is_refused_before_any_change() {
    for service in ["eks", "rke2"] {
        let node = debian(Some("2.21.0"));
        node.configmap("accelerator", "h100").configmap("service", service);
        let before = node.snapshot();
        node.run("config")
            .expect_code(1)
            .expect_output("neither update-grub nor grub-mkconfig on PATH; nothing was changed");
        before.assert_same(&node.snapshot());
    }
    // Without a drop-in, GRUB is tuned's business: no refusal.
    let node = debian(Some("2.21.0"));
    node.configmap("accelerator", "h100").configmap("service", "bcm");
    node.run("config").expect_code(0);
}

#[test]
fn off_the_debian_family_eks_writes_no_drop_in_and_regenerates_nothing() {
    // The drop-in would reach no kernel there (tests/rhel_grub_d.rs): tuned's
    // bootloader plugin takes the family's own way, so nothing is regenerated either.
    let node = rhel(fixtures::RHEL_9, false, Some("2.21.0"));
    node.stand_in("grub2-mkconfig", "exit 0").stand_in("grubby", "exit 0");
    node.configmap("accelerator", "h100").configmap("service", "eks");
    node.run("config").expect_code(0);
    assert!(!node.exists(EKS_DROP_IN));
    assert!(calls_of(&node, "grub2-mkconfig").is_empty());
    assert!(calls_of(&node, "grubby").is_empty());
}

#[test]
fn rke2_switched_off_writes_no_drop_in_and_regenerates_nothing() {
    let mut node = node(&[("accelerator", "gb200"), ("service", "rke2")]);
    node.env("CONFIGURE_BOOTLOADER", "false");
    node.run("config")
        .expect_code(0)
        .expect_output("CONFIGURE_BOOTLOADER is off: /etc/default/grub.d/99-nvidia-tuned-cmdline.cfg is not written");
    assert!(!node.exists(RKE2_DROP_IN));
    assert_eq!(regenerations(&node), 0);
    node.run("config-check").expect_code(0);

    // Switched on: written and regenerated; off again: this package's drop-in is taken
    // back, and GRUB regenerated without it.
    node.env("CONFIGURE_BOOTLOADER", "true");
    node.run("config").expect_code(0);
    let drop_in = node.read(RKE2_DROP_IN).unwrap();
    assert!(drop_in.contains(MARKER), "upstream's marker line: {drop_in}");
    assert_eq!(regenerations(&node), 1);
    node.env("CONFIGURE_BOOTLOADER", "off");
    node.run("config").expect_code(0);
    assert!(!node.exists(RKE2_DROP_IN));
    assert_eq!(regenerations(&node), 2);
    node.run("config-check").expect_code(0);
}

#[test]
fn rke2_is_refused_off_the_debian_family_naming_the_family() {
    for (os, family, id) in [
        (fixtures::ROCKY_9, "RHEL-like", "ID=\"rocky\""),
        (
            fixtures::OPENSUSE,
            "of a family this package does not know",
            "ID=\"opensuse-leap\"",
        ),
    ] {
        let mut node = rhel(os, false, Some("2.21.0"));
        node.stand_in("grubby", "exit 0");
        node.configmap("accelerator", "h100").configmap("service", "rke2");
        let before = node.snapshot();
        node.run("config")
            .expect_code(1)
            .expect_output(&format!("this node is {family} ({id}"))
            .expect_output("Set CONFIGURE_BOOTLOADER=false");
        before.assert_same(&node.snapshot());
        node.env("CONFIGURE_BOOTLOADER", "false");
        if os == fixtures::ROCKY_9 {
            node.run("config").expect_code(0);
            assert!(!node.exists(RKE2_DROP_IN));
        }
    }
}

#[test]
fn rke2_writes_no_drop_in_where_grub_already_expands_tuned_params() {
    let node = node(&[("accelerator", "gb200"), ("service", "rke2")]);
    tuned_writes_bootcmdline(&node, GB200_ARGS);
    node.run("config").expect_code(0);
    assert!(
        node.exists(RKE2_DROP_IN),
        "the cloud image's drop-in hides $tuned_params: ours is needed"
    );

    // An image where tuned's bootloader plugin works: its line in /etc/default/grub,
    // its /etc/grub.d/00_tuned, nothing replacing the line.
    std::fs::remove_file(node.path(grub_node::CLOUDIMG)).unwrap();
    let defaults = format!(
        "{}{}\n",
        grub_node::UBUNTU_DEFAULTS,
        String::from_utf8_lossy(tuned::bootloader::TUNED_LINES[0])
    );
    node.file(grub_node::DEFAULTS, &defaults)
        .file("/etc/grub.d/00_tuned", "#!/bin/sh\n");
    node.run_stand_in("update-grub", &[]).expect_code(0);
    assert_eq!(
        linux_line(&node),
        format!("root=UUID=0b1c ro quiet splash $tuned_params {GB200_ARGS}"),
        "with ours the arguments would come twice"
    );
    node.clear_calls();
    node.run("config")
        .expect_code(0)
        .expect_output("/boot/grub/grub.cfg already expands $tuned_params")
        .expect_output("its arguments would appear twice");
    assert!(!node.exists(RKE2_DROP_IN), "ours is taken back");
    assert_eq!(regenerations(&node), 1);
    assert_eq!(linux_line(&node), "root=UUID=0b1c ro quiet splash $tuned_params");
    assert!(
        node.read(GRUB_CFG)
            .unwrap()
            .contains(&format!("set tuned_params=\"{GB200_ARGS}\""))
    );
    node.run("config-check").expect_code(0);
    node.clear_calls();
    node.run("config")
        .expect_code(0)
        .expect_output("interrupt needed: none");
    assert_eq!(regenerations(&node), 0);
}

#[test]
fn the_bash_versions_rke2_drop_in_is_taken_back_by_its_marker_and_a_foreign_one_stays() {
    let bash = format!("# {MARKER}. Do not edit.\nGRUB_CMDLINE_LINUX_DEFAULT=\"$GRUB_CMDLINE_LINUX_DEFAULT x\"\n");
    // config with another service: the leftover goes, GRUB is regenerated.
    let node = node(&[("accelerator", "h100"), ("service", "bcm")]);
    node.file(RKE2_DROP_IN, &bash);
    node.run("config")
        .expect_code(0)
        .expect_output("(the bash version's, by its marker line)");
    assert!(!node.exists(RKE2_DROP_IN));
    assert_eq!(regenerations(&node), 1);
    // uninstall too, without the configMap.
    let node = debian(None);
    with_grub(&node);
    node.run("apply").expect_code(0);
    node.file(RKE2_DROP_IN, &bash);
    node.clear_calls();
    node.run("uninstall").expect_code(0);
    assert!(!node.exists(RKE2_DROP_IN));
    assert_eq!(regenerations(&node), 1);
    node.run("uninstall-check").expect_code(0);
    // A file without the marker is someone else's.
    let node = node_with_foreign();
    node.run("config").expect_code(0);
    assert!(node.exists(RKE2_DROP_IN));
    node.run("uninstall").expect_code(0);
    assert!(node.exists(RKE2_DROP_IN));
}

fn node_with_foreign() -> Node {
    let node = node(&[("accelerator", "h100"), ("service", "bcm")]);
    node.file(
        RKE2_DROP_IN,
        "GRUB_CMDLINE_LINUX_DEFAULT=\"$GRUB_CMDLINE_LINUX_DEFAULT mine\"\n",
    );
    node
}

// SPDX-License-Identifier: Apache-2.0
//! nvidia-tuned on simulated nodes (tuned's stand-ins): each configMap key, the OS
//! override and fallback, optional sysctls, reconcile when the intent changes, exact
//! uninstall, bad input refused with the node unchanged.

mod before;
#[path = "../../tuned/tests/common/mod.rs"]
mod common;
mod grub_node;

use common::*;
use skyhook_core::os::distro::fixtures;
use skyhook_testkit::Node;

/// An Ubuntu 22.04 node with tuned 2.21 installed and running, configMap `keys`.
fn node(keys: &[(&str, &str)]) -> Node {
    let node = debian(Some("2.21.0"));
    grub_node::with_grub(&node);
    for (k, v) in keys {
        node.configmap(k, v);
    }
    node
}

fn profile(node: &Node, name: &str) -> Option<String> {
    node.read(&format!("/etc/tuned/{name}/tuned.conf"))
}

#[test]
fn h100_defaults_to_performance_with_the_include_chain_and_asks_for_a_reboot() {
    let node = node(&[("accelerator", "h100")]);
    node.run("config")
        .expect_code(0)
        .expect_output("accelerator h100 as the configMap key \"accelerator\" names it")
        .expect_output("tuned profile nvidia-h100-performance and its include chain")
        .expect_output("interrupt needed: {type: reboot}");
    for name in ["nvidia-h100-performance", "nvidia-acs-disable", "nvidia-base"] {
        assert!(profile(&node, name).is_some(), "{name} deployed");
    }
    assert!(
        profile(&node, "nvidia-h100-performance")
            .unwrap()
            .contains("include=nvidia-acs-disable")
    );
    assert!(
        profile(&node, "nvidia-h100-inference").is_none(),
        "only the chain is deployed"
    );
    assert_eq!(
        node.read("/etc/tuned/active_profile").unwrap(),
        "nvidia-h100-performance\n"
    );
    assert_eq!(node.read("/etc/tuned/tuned-main.conf").unwrap(), "reapply_sysctl = 0\n");
    assert!(calls_of(&node, "systemctl").contains(&"systemctl restart tuned".to_string()));
    node.run("config-check").expect_code(0);

    node.clear_calls();
    node.run("config")
        .expect_code(0)
        .expect_output("interrupt needed: none");
    assert!(
        !calls_of(&node, "systemctl").contains(&"systemctl restart tuned".to_string()),
        "no restart when unchanged: {:?} {:?}",
        calls_of(&node, "systemctl"),
        node.read("/var/lib/skyhook-packages/nvidia-tuned-main-conf/nvidia-tuned/state.json")
    );
}

#[test]
fn the_os_override_applies_on_ubuntu_22_04_and_the_common_profile_elsewhere() {
    let node = node(&[("accelerator", "gb200"), ("intent", "inference")]);
    node.run("config")
        .expect_output("overrides in profiles/os/ubuntu/22.04/ apply");
    let inference = profile(&node, "nvidia-gb200-inference").unwrap();
    assert!(
        inference.contains("\nkernel.sched_latency_ns=") && inference.contains("\nvm.max_map_count=262144"),
        "22.04's override has the CFS keys and the map count: {inference}"
    );

    let other = self::node(&[("accelerator", "gb200"), ("intent", "inference")]);
    other.file("/etc/os-release", fixtures::DEBIAN_12);
    other.run("config").expect_output("the catalog has no override for it");
    let common = profile(&other, "nvidia-gb200-inference").unwrap();
    assert!(
        common.contains("default_hugepagesz=2M") && !common.contains("\nkernel.sched_latency_ns="),
        "{common}"
    );
    assert!(!common.contains("cmdline_isolcpus"), "no CPU isolation (upstream #96)");
}

#[test]
fn a_service_wraps_the_workload_profile_and_deploys_its_files() {
    let node = node(&[("accelerator", "gb200"), ("intent", "inference"), ("service", "eks")]);
    node.run("config")
        .expect_code(0)
        .expect_output("interrupt needed: {type: reboot}");
    assert_eq!(node.read("/etc/tuned/active_profile").unwrap(), "eks-gb200-inference\n");
    let wrapper = profile(&node, "eks-gb200-inference").unwrap();
    assert!(
        wrapper.contains("[main]\ninclude=nvidia-gb200-inference\n"),
        "{wrapper}"
    );
    let workload = profile(&node, "nvidia-gb200-inference").unwrap();
    assert!(
        !workload.contains("kernel.sched_latency_ns="),
        "the EKS version of the workload profile"
    );
    assert_eq!(
        node.read("/etc/systemd/network/99-default.link.d/mac-address-policy.conf")
            .unwrap(),
        "[Link]\nMACAddressPolicy=none\n"
    );
    assert!(
        node.read("/etc/default/grub.d/99_tuned.cfg")
            .unwrap()
            .contains("TUNED_BOOT_CMDLINE")
    );
    assert_eq!(
        node.read("/etc/systemd/system/containerd.service.d/containerd.conf")
            .unwrap(),
        "[Service]\nLimitSTACK=67108864\n"
    );
    node.run("config-check").expect_code(0);
}

#[test]
fn changing_the_intent_removes_the_old_profile_and_activates_the_new_one() {
    let node = node(&[("accelerator", "h100"), ("intent", "inference")]);
    node.run("config").expect_code(0);
    assert!(profile(&node, "nvidia-h100-inference").is_some());
    node.configmap("intent", "multiNodeTraining");
    node.run("config").expect_code(0);
    assert!(
        !node.exists("/etc/tuned/nvidia-h100-inference"),
        "the old profile's directory is gone"
    );
    assert!(profile(&node, "nvidia-h100-multiNodeTraining").is_some());
    assert_eq!(
        node.read("/etc/tuned/active_profile").unwrap(),
        "nvidia-h100-multiNodeTraining\n"
    );
    node.run("config-check").expect_code(0);
}

#[test]
fn optional_sysctls_the_kernel_lacks_are_left_out_with_a_warning() {
    let node = node(&[("accelerator", "h100"), ("intent", "inference")]);
    node.file("/proc/sys/kernel/osrelease", "6.12.0-gke\n");
    node.file("/proc/sys/vm/swappiness", "60\n");
    node.run("config")
        .expect_code(0)
        .expect_output("sysctl kernel.sched_latency_ns (profile nvidia-h100-inference) is left out: kernel 6.12.0-gke does not have it");
    let inference = profile(&node, "nvidia-h100-inference").unwrap();
    assert!(!inference.contains("sched_latency_ns") && !inference.contains("sched_min_granularity_ns"));
    assert!(inference.contains("vm.swappiness=1"));
    node.run("config-check").expect_code(0);
}

#[test]
fn uninstall_leaves_the_node_as_before_install() {
    let node = debian(None);
    node.file(
        "/etc/tuned/tuned-main.conf",
        "# site settings\ndaemon = 1\nreapply_sysctl = 1\n",
    );
    grub_node::with_grub(&node);
    let before = before::snapshot(&node);
    node.configmap("accelerator", "gb200").configmap("service", "eks");
    node.run("apply").expect_code(0);
    node.run("config").expect_code(0);
    assert!(
        node.read("/etc/tuned/tuned-main.conf")
            .unwrap()
            .contains("reapply_sysctl = 0\n")
    );
    node.run("uninstall").expect_code(0);
    node.run("uninstall-check").expect_code(0);
    before::assert_as(&node, &before);
}

#[test]
fn uninstall_keeps_what_someone_else_wrote_into_tuned_main_conf_since() {
    let node = debian(None);
    node.file("/etc/tuned/tuned-main.conf", "daemon = 1\nreapply_sysctl = 1\n");
    node.configmap("accelerator", "h100");
    node.run("apply").expect_code(0);
    node.run("config").expect_code(0);
    assert_eq!(
        node.read("/etc/tuned/tuned-main.conf").unwrap(),
        "daemon = 1\nreapply_sysctl = 0\n"
    );
    // An administrator adds a setting of their own after config.
    node.file(
        "/etc/tuned/tuned-main.conf",
        "daemon = 1\nreapply_sysctl = 0\ndynamic_tuning = 1\n",
    );
    node.run("uninstall").expect_code(0);
    assert_eq!(
        node.read("/etc/tuned/tuned-main.conf").unwrap(),
        "daemon = 1\nreapply_sysctl = 1\ndynamic_tuning = 1\n",
        "our option is set back, their line stays"
    );
    node.run("uninstall-check").expect_code(0);
}

#[test]
fn uninstall_without_the_configmap_gives_the_same_node() {
    let node = node(&[("accelerator", "h100")]);
    node.run("config").expect_code(0);
    node.clear_configmaps();
    node.run("uninstall").expect_code(0);
    node.run("uninstall-check").expect_code(0);
    assert!(!node.exists("/etc/tuned/nvidia-base"));
    assert!(!node.exists("/var/lib/skyhook-packages/nvidia-tuned"));
    assert!(!node.exists("/var/lib/skyhook-packages/nvidia-tuned-main-conf"));
}

#[test]
fn bad_input_exits_2_listing_what_is_supported_and_leaves_the_node_unchanged() {
    let cases: &[(&[(&str, &str)], &str)] = &[
        (
            &[],
            "configMap key \"accelerator\" is missing: set it to one of h100, gb200, gb300, vr200, generic, auto",
        ),
        (&[("accelerator", " \n")], "configMap key \"accelerator\" is empty"),
        (
            &[("accelerator", "a100")],
            "configMap key \"accelerator\" line 1 (\"a100\"): not in the catalog; supported: h100, gb200, gb300, vr200, generic, auto",
        ),
        (
            &[("accelerator", "h100"), ("intent", "training")],
            "configMap key \"intent\" line 1 (\"training\"): not in the catalog; supported: performance, inference, multiNodeTraining",
        ),
        (
            &[("accelerator", "h100"), ("service", "gke")],
            "configMap key \"service\" line 1 (\"gke\"): not in the catalog; supported: aks, bcm, eks, oci, rke2",
        ),
        (
            &[("accelerator", "h100\nb200")],
            "configMap key \"accelerator\" line 2 (\"b200\"): the value must be one word",
        ),
    ];
    for (keys, reason) in cases {
        let node = node(keys);
        let before = node.snapshot();
        node.run("config").expect_code(2).expect_output(reason);
        before.assert_same(&node.snapshot());
    }
}

fn label(node: &Node, product: &str) {
    let dir = node.copy_dir().join("node-metadata");
    std::fs::create_dir_all(&dir).unwrap();
    let labels = format!("{{\"nvidia.com/gpu.product\": \"{product}\", \"kubernetes.io/arch\": \"arm64\"}}");
    std::fs::write(dir.join("labels.json"), labels).unwrap();
}

fn pci(node: &Node, address: &str, device: &str) {
    let dir = format!("/sys/bus/pci/devices/{address}");
    node.file(&format!("{dir}/vendor"), "0x10de\n")
        .file(&format!("{dir}/device"), format!("{device}\n"))
        .file(&format!("{dir}/class"), "0x030200\n");
}

#[test]
fn auto_picks_the_accelerator_from_the_gpu_feature_discovery_label() {
    let node = node(&[("accelerator", "auto"), ("intent", "inference")]);
    label(&node, "NVIDIA-GB200-MIG-1g.24gb");
    pci(&node, "0000:1b:00.0", "0x2330"); // the label wins over the PCI devices
    node.run("config")
        .expect_code(0)
        .expect_output("accelerator gb200 from node label nvidia.com/gpu.product=NVIDIA-GB200-MIG-1g.24gb");
    assert_eq!(
        node.read("/etc/tuned/active_profile").unwrap(),
        "nvidia-gb200-inference\n"
    );
    node.run("config-check").expect_code(0);
}

#[test]
fn auto_without_a_label_picks_the_accelerator_from_the_pci_device_ids() {
    let node = node(&[("accelerator", "auto")]);
    pci(&node, "0000:1b:00.0", "0x2330");
    pci(&node, "0000:2a:00.0", "0x2330");
    node.run("config")
        .expect_code(0)
        .expect_output("accelerator h100 from PCI device");
    assert_eq!(
        node.read("/etc/tuned/active_profile").unwrap(),
        "nvidia-h100-performance\n"
    );
}

#[test]
fn auto_refuses_a_node_whose_accelerator_the_catalog_lacks_or_cannot_be_told() {
    let b200 = node(&[("accelerator", "auto")]);
    label(&b200, "NVIDIA-B200");
    let before = b200.snapshot();
    b200.run("config").expect_code(2).expect_output("h100, gb200");
    before.assert_same(&b200.snapshot());

    let bare = node(&[("accelerator", "auto")]);
    let before = bare.snapshot();
    bare.run("config")
        .expect_code(2)
        .expect_output("configMap key \"accelerator\"");
    before.assert_same(&bare.snapshot());
}

#[test]
fn auto_on_a_damaged_pci_tree_is_a_failure_of_the_node_not_bad_input() {
    for (file, content) in [("vendor", "0xZZZZ\n"), ("vendor", ""), ("device", "garbage\n")] {
        let node = node(&[("accelerator", "auto")]);
        pci(&node, "0000:1b:00.0", "0x2330");
        node.file(&format!("/sys/bus/pci/devices/0000:1b:00.0/{file}"), content);
        let before = node.snapshot();
        node.run("config")
            .expect_code(1)
            .expect_output(&format!("/sys/bus/pci/devices/0000:1b:00.0/{file}"));
        before.assert_same(&node.snapshot());
    }
}

/// Writes `left` on `node` as the bash nvidia-tuned left them, with `own` (files
/// of others) beside them, runs config and asserts that `gone` went and `own` stayed.
fn config_removes_the_bash_versions(node: &Node, left: &[&str], own: &[&str], gone: &[&str]) {
    for path in left {
        node.file(path, "[main]\nsummary=bash nvidia-tuned\n");
    }
    for path in own {
        node.file(path, "[main]\n");
    }
    node.run("config")
        .expect_code(0)
        .expect_output("left by the bash nvidia-tuned");
    for path in gone {
        assert!(!node.exists(path), "{path} removed");
    }
    for path in own {
        assert!(node.exists(path), "{path} is not the bash version's: it stays");
    }
}

#[test]
fn a_node_the_bash_version_configured_keeps_only_this_packages_files_and_uninstall_leaves_none() {
    let node = node(&[("accelerator", "h100"), ("intent", "inference"), ("service", "eks")]);
    // What the bash nvidia-tuned 0.2.3 left: base profiles in /usr/lib/tuned, every
    // workload profile and the service profile with its scripts in /etc/tuned.
    let bash = [
        "/usr/lib/tuned/nvidia-base/tuned.conf",
        "/usr/lib/tuned/nvidia-acs-disable/tuned.conf",
        "/etc/tuned/nvidia-h100-performance/tuned.conf",
        "/etc/tuned/nvidia-h100-inference/tuned.conf",
        "/etc/tuned/nvidia-gb200-performance/tuned.conf",
        "/etc/tuned/nvidia-gb200-performance/containerd_service.sh",
        "/etc/tuned/eks-h100-inference/tuned.conf",
        "/etc/tuned/eks-h100-inference/script.sh",
        "/etc/tuned/eks-h100-inference/bootloader.sh",
        // Later bash versions (0.4–0.9) copied these too.
        "/etc/tuned/nvidia-generic/tuned.conf",
        "/etc/tuned/nvidia-vr200-noreboot-base/tuned.conf",
        "/etc/tuned/nvidia-vr200-noreboot-base/containerd_service.sh",
        "/etc/tuned/aks-h100-inference/script.sh",
        "/etc/tuned/aks-h100-inference/mac-address-policy.sh",
    ];
    config_removes_the_bash_versions(
        &node,
        &bash,
        &["/etc/tuned/my-own/tuned.conf"],
        &[
            "/usr/lib/tuned/nvidia-base",
            "/etc/tuned/nvidia-gb200-performance",
            "/etc/tuned/eks-h100-inference/script.sh",
            "/etc/tuned/nvidia-generic",
            "/etc/tuned/nvidia-vr200-noreboot-base",
            "/etc/tuned/aks-h100-inference",
        ],
    );
    assert!(
        profile(&node, "nvidia-h100-inference")
            .unwrap()
            .contains("NVIDIA H100 inference for EKS")
    );
    node.run("config-check").expect_code(0);
    node.run("uninstall").expect_code(0);
    for name in [
        "nvidia-base",
        "nvidia-h100-inference",
        "eks-h100-inference",
        "nvidia-h100-performance",
    ] {
        assert!(
            !node.exists(&format!("/etc/tuned/{name}")),
            "{name} gone after uninstall"
        );
    }
    assert!(node.exists("/etc/tuned/my-own/tuned.conf"));
}

#[test]
fn on_tuned_2_23_the_bash_versions_profiles_in_the_profiles_directories_go_too() {
    let node = debian(Some("2.23.0"));
    node.configmap("accelerator", "h100");
    // What a bash nvidia-tuned of 0.3.1 or later left on a node with tuned 2.23 or
    // later, whose profile directories are the `profiles` subdirectories.
    let bash = [
        "/usr/lib/tuned/profiles/nvidia-base/tuned.conf",
        "/usr/lib/tuned/profiles/nvidia-acs-disable/tuned.conf",
        "/etc/tuned/profiles/nvidia-h100-performance/tuned.conf",
        "/etc/tuned/profiles/nvidia-gb200-performance/tuned.conf",
        "/etc/tuned/profiles/nvidia-gb200-performance/containerd_service.sh",
        "/etc/tuned/profiles/eks-h100-inference/script.sh",
    ];
    config_removes_the_bash_versions(
        &node,
        &bash,
        &[
            "/usr/lib/tuned/profiles/balanced/tuned.conf",
            "/etc/tuned/profiles/nvidia-h100-performance/notes.txt",
        ],
        &[
            "/usr/lib/tuned/profiles/nvidia-base",
            "/usr/lib/tuned/profiles/nvidia-acs-disable",
            "/etc/tuned/profiles/nvidia-gb200-performance",
            "/etc/tuned/profiles/eks-h100-inference",
        ],
    );
    let ours = node
        .read("/etc/tuned/profiles/nvidia-h100-performance/tuned.conf")
        .expect("this package's profile where tuned 2.23 reads it");
    assert!(
        !ours.contains("bash nvidia-tuned"),
        "ours replaced the bash one: {ours}"
    );
    assert!(node.exists("/etc/tuned/profiles/nvidia-base/tuned.conf"));
    node.run("config-check").expect_code(0);
    node.run("uninstall").expect_code(0);
    for name in ["nvidia-base", "nvidia-acs-disable", "nvidia-h100-performance"] {
        assert!(
            !node.exists(&format!("/etc/tuned/profiles/{name}/tuned.conf")),
            "{name} gone after uninstall"
        );
    }
    assert!(node.exists("/etc/tuned/profiles/nvidia-h100-performance/notes.txt"));
}

#[test]
fn an_intent_change_that_keeps_the_kernel_arguments_needs_no_reboot() {
    let node = node(&[("accelerator", "h100")]);
    node.run("config")
        .expect_code(0)
        .expect_output("interrupt needed: {type: reboot}");
    node.configmap("intent", "multiNodeTraining");
    node.run("config")
        .expect_code(0)
        .expect_output("interrupt needed: none");
    node.configmap("intent", "inference");
    node.run("config")
        .expect_code(0)
        .expect_output("interrupt needed: {type: reboot}");
}

#[test]
fn a_new_containerd_drop_in_asks_for_a_containerd_restart_only_once() {
    let node = node(&[("accelerator", "gb200")]);
    runtime_unit(&node, "/lib/systemd/system", "containerd.service", true);
    node.run("config")
        .expect_code(0)
        .expect_output("containerd.conf goes to the container runtime units installed here: containerd.service")
        .expect_output("containerd.conf takes effect when containerd restarts");
    node.clear_calls();
    node.run("config")
        .expect_code(0)
        .expect_output("interrupt needed: none");
}

#[test]
fn a_restart_a_killed_config_owed_is_done_by_the_rerun() {
    let node = node(&[("accelerator", "h100")]);
    // A config killed after setting reapply_sysctl, before restarting tuned.
    node.file("/etc/tuned/tuned-main.conf", "reapply_sysctl = 0\n");
    node.file(
        "/var/lib/skyhook-packages/nvidia-tuned-main-conf/nvidia-tuned/state.json",
        r#"{"original": {"path": "/etc/tuned/tuned-main.conf", "existed": false}, "restart_pending": true}"#,
    );
    node.run("config").expect_code(0);
    assert!(calls_of(&node, "systemctl").contains(&"systemctl restart tuned".to_string()));
    let state = node
        .read("/var/lib/skyhook-packages/nvidia-tuned-main-conf/nvidia-tuned/state.json")
        .unwrap();
    assert!(!state.contains("restart_pending"), "{state}");
}

#[test]
fn container_optimized_os_is_refused_before_any_change() {
    let node = node(&[("accelerator", "h100")]);
    node.file(
        "/etc/os-release",
        "NAME=\"Container-Optimized OS\"\nID=cos\nVERSION_ID=117\n",
    );
    let before = node.snapshot();
    node.run("config").expect_code(1).expect_output("ID=cos");
    before.assert_same(&node.snapshot());
}

#[test]
fn a_chain_with_bootloader_options_is_refused_on_an_ostree_managed_node_before_any_change() {
    let node = rhel(fixtures::RHEL_9, false, Some("2.24.1"));
    node.file("/run/ostree-booted", "").configmap("accelerator", "h100");
    let before = node.snapshot();
    node.run("config")
        .expect_code(1)
        .expect_output("carry bootloader options")
        .expect_output("[bootloader] cmdline")
        .expect_output("/run/ostree-booted exists")
        .expect_output("MachineConfig");
    before.assert_same(&node.snapshot());
    assert!(calls_of(&node, "tuned-adm").is_empty(), "{:?}", node.calls());
}

#[test]
fn validate_is_the_offline_check_lint_uses() {
    use skyhook_core::ConfigMaps;
    let ok = ConfigMaps::from_entries([("accelerator", "gb200"), ("intent", "inference"), ("service", "eks")]);
    nvidia_tuned::validate(&ok).unwrap();
    nvidia_tuned::validate(&ConfigMaps::from_entries([("accelerator", "auto")])).unwrap();
    let bad = ConfigMaps::from_entries([("accelerator", "a100"), ("intent", "training")]);
    let e = nvidia_tuned::validate(&bad).unwrap_err().to_string();
    assert!(
        e.contains("\"accelerator\" line 1 (\"a100\")")
            && e.contains("supported: h100, gb200, gb300, vr200, generic, auto"),
        "{e}"
    );
    assert!(e.contains("\"intent\" line 1 (\"training\")"), "{e}");
}

/// Writes the tuning engine's shared ledger as tuning records it: `key` (path form)
/// held by `holders` (`(entry, value set)`), original 60.
fn tuning_holds(node: &Node, key: &str, holders: &[(&str, &str)]) {
    use skyhook_core::records::tuning_ledger::Holder;
    let holders: Vec<Holder> = holders
        .iter()
        .map(|(entry, set)| Holder {
            entry: entry.to_string(),
            set: set.to_string(),
            original: "60".into(),
        })
        .collect();
    let ledger = serde_json::json!({"added": [], "users": [], "dirs": [], "sysctl": {key: holders}});
    node.file(
        "/var/lib/skyhook-packages/tuning/_shared/state.json",
        serde_json::to_vec_pretty(&ledger).unwrap(),
    );
}

/// tuned-main.conf's `reapply_sysctl = 0` makes the chain's sysctls win over
/// `/etc/sysctl.d`: a key that a tuning entry sets to another value is named by the
/// checks, with both values, both packages and the winner.
#[test]
fn a_sysctl_that_tuning_sets_otherwise_is_a_named_conflict() {
    let node = node(&[("accelerator", "h100"), ("intent", "inference")]);
    node.run("config").expect_code(0);
    node.run("config-check").expect_code(0);

    tuning_holds(&node, "vm/swappiness", &[("tuning/gpu", "10")]);
    let conflict = "sysctl vm.swappiness: nvidia-tuned's chain sets \"1\" (profile nvidia-h100-inference";
    for mode in ["config-check", "post-interrupt-check"] {
        node.run(mode)
            .expect_code(1)
            .expect_output(conflict)
            .expect_output("the tuning/gpu entry sets \"10\"")
            .expect_output("with reapply_sysctl = 0 in /etc/tuned/tuned-main.conf tuned's value wins");
    }

    // The same value in both is no conflict, nor is a key the chain does not set.
    tuning_holds(&node, "vm/swappiness", &[("nvidia-tuning-gke/gke", " 1")]);
    node.run("config-check").expect_code(0);
    tuning_holds(&node, "vm/dirty_ratio", &[("tuning/gpu", "10")]);
    node.run("config-check").expect_code(0);

    // A damaged ledger is the node's state, named.
    node.file("/var/lib/skyhook-packages/tuning/_shared/state.json", "[]");
    node.run("config-check")
        .expect_code(1)
        .expect_output("/var/lib/skyhook-packages/tuning/_shared/state.json");
}

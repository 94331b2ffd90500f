// SPDX-License-Identifier: Apache-2.0
//! The later upstream combinations on simulated nodes (tuned's stand-ins): vr200 on
//! Ubuntu 26.04 only, bcm's bootloader-free vr200 chain, aks and rke2 with their files,
//! `generic` ignoring intent and service; each refusal exits 2 with the node unchanged,
//! and uninstall gives back the node as it was.

mod before;
#[path = "../../tuned/tests/common/mod.rs"]
mod common;
mod grub_node;

use common::*;
use skyhook_core::os::distro::fixtures;
use skyhook_testkit::Node;

const UBUNTU_2604: &str = "PRETTY_NAME=\"Ubuntu 26.04 LTS\"\nNAME=\"Ubuntu\"\nVERSION_ID=\"26.04\"\nID=ubuntu\nID_LIKE=debian\nUBUNTU_CODENAME=resolute\n";

const RKE2_DROP_IN: &str = "/etc/default/grub.d/99-nvidia-tuned-cmdline.cfg";
const EKS_AKS_DROP_IN: &str = "/etc/default/grub.d/99_tuned.cfg";
const MAC_POLICY: &str = "/etc/systemd/network/99-default.link.d/mac-address-policy.conf";
const CONTAINERD: &str = "/etc/systemd/system/containerd.service.d/containerd.conf";

/// ConfigMap keys and values.
type Keys<'a> = &'a [(&'a str, &'a str)];

/// A node with tuned 2.21 running, `os_release`, configMap `keys`.
fn node(os_release: &str, keys: &[(&str, &str)]) -> Node {
    let node = debian(Some("2.21.0"));
    node.file("/etc/os-release", os_release);
    grub_node::with_grub(&node);
    for (k, v) in keys {
        node.configmap(k, v);
    }
    node
}

fn profile(node: &Node, name: &str) -> Option<String> {
    node.read(&format!("/etc/tuned/{name}/tuned.conf"))
}

/// Whether a line of `text` (comments aside) starts with `prefix`: a section or option.
fn has(text: &str, prefix: &str) -> bool {
    text.lines().any(|l| l.trim_start().starts_with(prefix))
}

/// The profile names deployed under /etc/tuned (tuned's own files aside).
fn deployed(node: &Node) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(node.path("/etc/tuned"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().join("tuned.conf").exists())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn vr200_on_ubuntu_26_04_deploys_its_chain_with_the_kernel_arguments() {
    let node = node(UBUNTU_2604, &[("accelerator", "vr200"), ("intent", "inference")]);
    node.run("config")
        .expect_code(0)
        .expect_output("overrides in profiles/os/ubuntu/26.04/ apply")
        .expect_output("interrupt needed: {type: reboot}");
    assert_eq!(
        deployed(&node),
        ["nvidia-base", "nvidia-vr200-inference", "nvidia-vr200-performance"]
    );
    let inference = profile(&node, "nvidia-vr200-inference").unwrap();
    assert!(
        inference.contains("hugepages=8192 default_hugepagesz=2M"),
        "{inference}"
    );
    assert!(!has(&inference, "kernel.sched_"), "26.04's kernel has no CFS keys");
    assert_eq!(node.read(CONTAINERD).unwrap(), "[Service]\nLimitSTACK=67108864\n");
    node.run("config-check").expect_code(0);
}

#[test]
fn vr200_elsewhere_is_bad_input_naming_the_os_found_and_where_it_is_supported() {
    for (os_release, found) in [
        (fixtures::UBUNTU_2404, "ubuntu 24.04"),
        (fixtures::DEBIAN_12, "debian 12"),
    ] {
        let node = node(os_release, &[("accelerator", "vr200")]);
        let before = node.snapshot();
        node.run("config").expect_code(2).expect_output(&format!(
            "configMap key \"accelerator\": accelerator \"vr200\" is supported only on ubuntu 26.04; this node runs {found}"
        ));
        before.assert_same(&node.snapshot());
        node.run("config-check").expect_code(2);
    }
}

#[test]
fn bcm_runs_vr200_on_the_bootloader_free_chain_so_no_reboot_is_needed() {
    let node = node(
        UBUNTU_2604,
        &[("accelerator", "vr200"), ("intent", "inference"), ("service", "bcm")],
    );
    runtime_unit(&node, "/usr/lib/systemd/system", "containerd.service", true);
    node.run("config")
        .expect_code(0)
        .expect_output("bcm-vr200-inference (service/bcm/service.conf) → nvidia-vr200-inference (service/bcm/nvidia-vr200-inference.conf) → nvidia-vr200-noreboot-base (os/ubuntu/26.04/nvidia-vr200-noreboot-base.conf)")
        .expect_output("interrupt needed: {type: service, services: [containerd]}");
    assert_eq!(
        deployed(&node),
        [
            "bcm-vr200-inference",
            "nvidia-vr200-inference",
            "nvidia-vr200-noreboot-base"
        ]
    );
    for name in deployed(&node) {
        assert!(!has(&profile(&node, &name).unwrap(), "[bootloader]"), "{name}");
    }
    assert!(!node.exists(RKE2_DROP_IN) && !node.exists(EKS_AKS_DROP_IN));
    assert_eq!(node.read(CONTAINERD).unwrap(), "[Service]\nLimitSTACK=67108864\n");
    node.run("config-check").expect_code(0);
}

/// Upstream never deploys the stack-limit drop-in for gb300 (nodewright-packages #108:
/// its profiles carry no containerd script), so a running containerd is not restarted.
#[test]
fn gb300_gets_no_container_runtime_drop_in_and_no_restart() {
    for keys in [
        &[("accelerator", "gb300")][..],
        &[("accelerator", "gb300"), ("intent", "inference"), ("service", "bcm")][..],
    ] {
        let node = node(fixtures::UBUNTU_2404, keys);
        runtime_unit(&node, "/usr/lib/systemd/system", "containerd.service", true);
        let out = node.run("config");
        out.expect_code(0).expect_output("interrupt needed: {type: reboot}");
        assert!(!out.stdout.contains("services: [containerd]"), "{}", out.stdout);
        assert!(!node.exists(CONTAINERD), "{keys:?}");
        node.run("config-check").expect_code(0);
    }
}

#[test]
fn a_containerd_that_is_not_running_gets_its_drop_in_but_no_restart() {
    let node = node(
        UBUNTU_2604,
        &[("accelerator", "vr200"), ("intent", "inference"), ("service", "bcm")],
    );
    runtime_unit(&node, "/lib/systemd/system", "containerd.service", false);
    node.run("config")
        .expect_code(0)
        .expect_output(&format!(
            "containerd is not running: it reads {CONTAINERD} when it starts"
        ))
        .expect_output("interrupt needed: none");
    assert_eq!(node.read(CONTAINERD).unwrap(), "[Service]\nLimitSTACK=67108864\n");
    node.run("config-check").expect_code(0);
}

#[test]
fn on_an_rke2_node_the_stack_limit_reaches_the_runtime_rke2_starts_and_only_the_running_unit_restarts() {
    // RKE2 (tarball install) has both of its units installed and runs one; a distro
    // containerd.service is installed too but not running (nodewright-packages #134).
    let node = node(
        UBUNTU_2604,
        &[("accelerator", "vr200"), ("intent", "inference"), ("service", "bcm")],
    );
    runtime_unit(&node, "/usr/local/lib/systemd/system", "rke2-agent.service", true);
    runtime_unit(&node, "/usr/local/lib/systemd/system", "rke2-server.service", false);
    runtime_unit(&node, "/usr/lib/systemd/system", "containerd.service", false);
    node.run("config")
        .expect_code(0)
        .expect_output(
            "containerd.conf goes to the container runtime units installed here: containerd.service, rke2-server.service, rke2-agent.service",
        )
        .expect_output("containerd is not running")
        .expect_output("interrupt needed: {type: service, services: [rke2-agent]}");
    let drop_ins = [
        CONTAINERD,
        "/etc/systemd/system/rke2-server.service.d/containerd.conf",
        "/etc/systemd/system/rke2-agent.service.d/containerd.conf",
    ];
    for path in drop_ins {
        assert_eq!(
            node.read(path).as_deref(),
            Some("[Service]\nLimitSTACK=67108864\n"),
            "{path}"
        );
    }
    assert!(
        !node.exists("/etc/systemd/system/k3s.service.d"),
        "k3s is not installed"
    );
    node.run("config-check").expect_code(0);
    node.run("config")
        .expect_code(0)
        .expect_output("interrupt needed: none");

    // RKE2 is removed, the distro containerd stays: reconcile takes back the drop-ins
    // of the units that are gone.
    for unit in ["rke2-agent.service", "rke2-server.service"] {
        std::fs::remove_file(node.path(&format!("/usr/local/lib/systemd/system/{unit}"))).unwrap();
    }
    node.run("config").expect_code(0);
    assert!(node.exists(CONTAINERD));
    assert!(!node.exists("/etc/systemd/system/rke2-agent.service.d"));
    assert!(!node.exists("/etc/systemd/system/rke2-server.service.d"));

    node.run("uninstall").expect_code(0);
    node.run("uninstall-check").expect_code(0);
    for path in drop_ins {
        assert!(!node.exists(path), "{path} taken back by uninstall");
    }
}

/// The stack limit is checked where it matters, in the running runtime: config-check
/// passes before the service interrupt (the restart is pending) and says so;
/// post-interrupt-check fails while containerd still runs with the kernel's default
/// stack or does not run at all, and passes once the restarted process has the
/// drop-in's limit.
#[test]
fn the_running_containerds_stack_limit_is_checked_not_only_the_drop_ins_bytes() {
    let node = node(
        UBUNTU_2604,
        &[("accelerator", "vr200"), ("intent", "inference"), ("service", "bcm")],
    );
    runtime_unit(&node, "/usr/lib/systemd/system", "containerd.service", true);
    let old = runtime_pid("containerd.service");
    node.run("config")
        .expect_code(0)
        .expect_output("interrupt needed: {type: service, services: [containerd]}");
    let stale = format!(
        "the container runtime containerd.service (main process {old}) runs with LimitSTACK soft 8388608 hard \
         unlimited (/proc/{old}/limits), but {CONTAINERD} sets LimitSTACK=67108864 (soft 67108864 hard 67108864)"
    );
    node.run("config-check")
        .expect_code(0)
        .expect_output(&stale)
        .expect_output("config-check passes: the restart is pending");
    node.run("post-interrupt-check").expect_code(1).expect_output(&stale);

    // The service interrupt restarts containerd: a new process, with the drop-in's limit.
    skyhook_testkit::systemd::run_unit(&node, "containerd.service", 5150, ("67108864", "67108864"));
    node.run("post-interrupt-check")
        .expect_code(0)
        .expect_output("containerd.service (main process 5150) runs with LimitSTACK=67108864");

    // A soft limit alone is not enough: both must match.
    skyhook_testkit::systemd::run_unit(&node, "containerd.service", 5151, ("67108864", "unlimited"));
    node.run("post-interrupt-check")
        .expect_code(1)
        .expect_output("runs with LimitSTACK soft 67108864 hard unlimited");

    // A kernel row the check cannot read fails it rather than passing blind.
    node.file("/proc/5151/limits", "Limit Soft Hard Units\nMax stack size garbage\n");
    node.run("post-interrupt-check")
        .expect_code(1)
        .expect_output("/proc/5151/limits of containerd.service has no readable \"Max stack size\" row");

    skyhook_testkit::systemd::stop_unit(&node, "containerd.service");
    let not_running =
        "the container runtime is not running: systemd reports no main process (MainPID 0) for containerd.service";
    node.run("post-interrupt-check")
        .expect_code(1)
        .expect_output(not_running);
    node.run("config-check")
        .expect_code(0)
        .expect_output(not_running)
        .expect_output("the restart is pending");
}

/// On an RKE2 node the limit is read from the unit that runs; the installed units
/// that do not run (RKE2's other one, a distribution's containerd) read their drop-in
/// when they start and fail nothing.
#[test]
fn on_an_rke2_node_the_running_units_limit_is_checked_and_the_stopped_ones_are_not() {
    let node = node(
        UBUNTU_2604,
        &[("accelerator", "vr200"), ("intent", "inference"), ("service", "bcm")],
    );
    runtime_unit(&node, "/usr/local/lib/systemd/system", "rke2-agent.service", true);
    runtime_unit(&node, "/usr/local/lib/systemd/system", "rke2-server.service", false);
    runtime_unit(&node, "/usr/lib/systemd/system", "containerd.service", false);
    node.run("config").expect_code(0);
    let pid = runtime_pid("rke2-agent.service");
    node.run("post-interrupt-check").expect_code(1).expect_output(&format!(
        "the container runtime rke2-agent.service (main process {pid}) runs with LimitSTACK soft 8388608"
    ));
    skyhook_testkit::systemd::run_unit(&node, "rke2-agent.service", 6000, ("67108864", "67108864"));
    node.run("post-interrupt-check")
        .expect_code(0)
        .expect_output("rke2-server.service is not running (MainPID 0): it reads")
        .expect_output("rke2-agent.service (main process 6000) runs with LimitSTACK=67108864");
}

/// K3s installed with `INSTALL_K3S_NAME=gpu` names its unit `k3s-gpu.service` (in
/// `/etc/systemd/system`, where its installer writes it); upstream's vr200 script finds
/// such units too. The stack limit must reach the containerd that unit starts.
#[test]
fn k3s_installed_under_another_name_gets_the_stack_limit_and_the_restart() {
    let node = node(
        UBUNTU_2604,
        &[("accelerator", "vr200"), ("intent", "inference"), ("service", "bcm")],
    );
    runtime_unit(&node, "/etc/systemd/system", "k3s-gpu.service", true);
    runtime_unit(&node, "/etc/systemd/system", "k3s-agent-edge.service", false);
    let gpu = "/etc/systemd/system/k3s-gpu.service.d/containerd.conf";
    let edge = "/etc/systemd/system/k3s-agent-edge.service.d/containerd.conf";
    node.run("config")
        .expect_code(0)
        .expect_output("containerd.conf goes to the container runtime units installed here: k3s-agent-edge.service, k3s-gpu.service")
        .expect_output("interrupt needed: {type: service, services: [k3s-gpu]}");
    for path in [gpu, edge] {
        assert_eq!(
            node.read(path).as_deref(),
            Some("[Service]\nLimitSTACK=67108864\n"),
            "{path}"
        );
    }
    assert!(!node.exists(CONTAINERD), "containerd.service is not installed here");
    node.run("config-check").expect_code(0);
    node.run("config")
        .expect_code(0)
        .expect_output("interrupt needed: none");

    // The named K3s goes away: its drop-in is taken back, the other stays.
    std::fs::remove_file(node.path("/etc/systemd/system/k3s-gpu.service")).unwrap();
    node.run("config").expect_code(0);
    assert!(!node.exists("/etc/systemd/system/k3s-gpu.service.d") && node.exists(edge));
    node.run("uninstall").expect_code(0);
    node.run("uninstall-check").expect_code(0);
    assert!(!node.exists(edge), "taken back by uninstall");
}

/// The pairs upstream's prepare script accepts (it wraps any `nvidia-<accelerator>-<intent>`
/// with any service) and the catalog refused before 0.10.0's review.
#[test]
fn every_service_wraps_every_accelerator_as_upstream_does() {
    let cases: &[(&str, Keys, &str, &str)] = &[
        (
            fixtures::UBUNTU_2404,
            &[("accelerator", "gb200"), ("service", "aks")],
            "aks-gb200-performance",
            "nvidia-gb200-performance",
        ),
        (
            fixtures::UBUNTU_2404,
            &[("accelerator", "gb300"), ("service", "aks")],
            "aks-gb300-performance",
            "nvidia-gb300-performance",
        ),
        (
            UBUNTU_2604,
            &[("accelerator", "vr200"), ("service", "aks")],
            "aks-vr200-performance",
            "nvidia-vr200-performance",
        ),
        (
            fixtures::UBUNTU_2404,
            &[("accelerator", "h100"), ("service", "bcm")],
            "bcm-h100-performance",
            "nvidia-h100-performance",
        ),
        (
            fixtures::UBUNTU_2404,
            &[("accelerator", "gb200"), ("service", "bcm")],
            "bcm-gb200-performance",
            "nvidia-gb200-performance",
        ),
        (
            fixtures::UBUNTU_2404,
            &[("accelerator", "gb300"), ("service", "bcm")],
            "bcm-gb300-performance",
            "nvidia-gb300-performance",
        ),
        (
            UBUNTU_2604,
            &[("accelerator", "vr200"), ("service", "eks")],
            "eks-vr200-performance",
            "nvidia-vr200-performance",
        ),
        (
            UBUNTU_2604,
            &[("accelerator", "vr200"), ("service", "oci")],
            "oci-vr200-performance",
            "nvidia-vr200-performance",
        ),
        (
            fixtures::UBUNTU_2404,
            &[("accelerator", "h100"), ("service", "rke2")],
            "rke2-h100-performance",
            "nvidia-h100-performance",
        ),
    ];
    for (os_release, keys, active, workload) in cases {
        let node = node(os_release, keys);
        node.run("config")
            .expect_code(0)
            .expect_output("interrupt needed: {type: reboot}");
        assert_eq!(node.read("/etc/tuned/active_profile").unwrap(), format!("{active}\n"));
        let wrapper = profile(&node, active).unwrap();
        assert!(wrapper.contains(&format!("[main]\ninclude={workload}\n")), "{wrapper}");
        assert!(has(&profile(&node, workload).unwrap(), "[bootloader]"), "{active}");
        node.run("config-check").expect_code(0);
    }
}

#[test]
fn generic_ignores_intent_and_service_says_so_and_deploys_its_one_profile() {
    let node = node(
        fixtures::UBUNTU_2404,
        &[("accelerator", "generic"), ("intent", "inference"), ("service", "eks")],
    );
    node.run("config")
        .expect_code(0)
        .expect_output("configMap key \"intent\" (\"inference\") is ignored: accelerator generic uses the self-contained profile nvidia-generic")
        .expect_output("configMap key \"service\" (\"eks\") is ignored")
        .expect_output("interrupt needed: none");
    assert_eq!(deployed(&node), ["nvidia-generic"]);
    assert_eq!(node.read("/etc/tuned/active_profile").unwrap(), "nvidia-generic\n");
    assert!(!profile(&node, "nvidia-generic").unwrap().contains("include="));
    assert!(
        !node.exists(MAC_POLICY) && !node.exists(EKS_AKS_DROP_IN),
        "no eks files"
    );
    node.run("config-check").expect_code(0);

    // Values the catalog lacks are ignored too; a value of two words is still malformed.
    let odd = self::node(
        fixtures::UBUNTU_2404,
        &[("accelerator", "generic"), ("intent", "training")],
    );
    odd.run("config")
        .expect_code(0)
        .expect_output("(\"training\") is ignored");
    let broken = self::node(fixtures::UBUNTU_2404, &[("accelerator", "generic"), ("intent", "a b")]);
    broken
        .run("config")
        .expect_code(2)
        .expect_output("configMap key \"intent\" line 1 (\"b\"): the value must be one word");
}

#[test]
fn aks_wraps_its_own_h100_inference_and_deploys_the_mac_policy_and_grub_snippet() {
    let node = node(
        fixtures::UBUNTU_2404,
        &[("accelerator", "h100"), ("intent", "inference"), ("service", "aks")],
    );
    node.run("config")
        .expect_code(0)
        .expect_output("interrupt needed: {type: reboot}");
    assert_eq!(node.read("/etc/tuned/active_profile").unwrap(), "aks-h100-inference\n");
    let wrapper = profile(&node, "aks-h100-inference").unwrap();
    assert!(wrapper.contains("[main]\ninclude=nvidia-h100-inference\n"), "{wrapper}");
    let workload = profile(&node, "nvidia-h100-inference").unwrap();
    assert!(workload.contains("NVIDIA H100 inference for AKS"), "{workload}");
    assert!(!has(&workload, "cmdline_isolcpus") && !has(&workload, "kernel.sched_"));
    assert_eq!(node.read(MAC_POLICY).unwrap(), "[Link]\nMACAddressPolicy=none\n");
    assert!(node.read(EKS_AKS_DROP_IN).unwrap().contains("TUNED_BOOT_CMDLINE"));
    assert!(!node.exists(RKE2_DROP_IN));
    node.run("config-check").expect_code(0);
}

#[test]
fn rke2_keeps_the_kernel_arguments_and_its_grub_drop_in_appends_them() {
    let node = node(fixtures::UBUNTU_2404, &[("accelerator", "gb200"), ("service", "rke2")]);
    node.run("config")
        .expect_code(0)
        .expect_output("99-nvidia-tuned-cmdline.cfg takes effect at the next boot, once config has regenerated GRUB")
        .expect_output("interrupt needed: {type: reboot}");
    assert_eq!(
        node.read("/etc/tuned/active_profile").unwrap(),
        "rke2-gb200-performance\n"
    );
    assert!(has(
        &profile(&node, "nvidia-gb200-performance").unwrap(),
        "[bootloader]"
    ));
    let drop_in = node.read(RKE2_DROP_IN).unwrap();
    assert!(
        drop_in.contains("GRUB_CMDLINE_LINUX_DEFAULT=\"${GRUB_CMDLINE_LINUX_DEFAULT} ${TUNED_BOOT_CMDLINE}\""),
        "appends to the platform's arguments: {drop_in}"
    );
    assert!(!node.exists(EKS_AKS_DROP_IN) && !node.exists(MAC_POLICY));
    node.run("config-check").expect_code(0);

    // Reconcile to eks: rke2's drop-in goes, eks's files come, the kernel arguments stay.
    node.configmap("service", "eks");
    node.run("config")
        .expect_code(0)
        .expect_output("interrupt needed: {type: reboot}");
    assert!(!node.exists(RKE2_DROP_IN), "rke2's drop-in removed on reconcile");
    assert!(node.exists(EKS_AKS_DROP_IN) && node.exists(MAC_POLICY));
    assert!(!node.exists("/etc/tuned/rke2-gb200-performance"));
    node.run("config-check").expect_code(0);
}

/// Installs and configures `keys` on `os_release`, uninstalls, and requires the node
/// as it was before install (tuned's own state aside).
fn uninstall_is_exact(os_release: &str, keys: &[(&str, &str)]) {
    let node = debian(None);
    node.file("/etc/os-release", os_release);
    node.file("/etc/tuned/tuned-main.conf", "daemon = 1\nreapply_sysctl = 1\n");
    grub_node::with_grub(&node);
    let before = before::snapshot(&node);
    for (k, v) in keys {
        node.configmap(k, v);
    }
    node.run("apply").expect_code(0);
    node.run("config").expect_code(0);
    node.run("uninstall").expect_code(0);
    node.run("uninstall-check").expect_code(0);
    before::assert_as(&node, &before);
}

#[test]
fn uninstall_gives_back_the_node_for_each_new_service_and_accelerator() {
    uninstall_is_exact(UBUNTU_2604, &[("accelerator", "vr200"), ("service", "rke2")]);
    uninstall_is_exact(UBUNTU_2604, &[("accelerator", "vr200"), ("service", "bcm")]);
    uninstall_is_exact(fixtures::UBUNTU_2404, &[("accelerator", "h100"), ("service", "aks")]);
    uninstall_is_exact(fixtures::UBUNTU_2404, &[("accelerator", "generic")]);
}

// SPDX-License-Identifier: Apache-2.0
//! tuned in a Debian root: tuned installed from the mirror by apply, a custom profile
//! that includes a built-in one and runs a deployed script, activated without a
//! running daemon (the profile is preset for tuned's start), reconciled, and
//! uninstalled without a trace.

use crate::{APT_FOOTPRINT, Arch, BOOKKEEPING, Node};

const PROFILE: &str = "[main]\nsummary=GPU node\ninclude=throughput-performance\n\n[sysctl]\nvm.swappiness=10\n\n[script]\nscript=/etc/tuned/scripts/gpu_init\n";
const SCRIPT: &str = "#!/bin/sh\n# gpu_init: called by tuned with start/stop\nexit 0\n";

#[test]
#[ignore = "chroot tier: root and the Debian mirror, minutes; .ci/run chroot, or cargo test -p skyhook-pkg --test chroot -- --ignored"]
fn tuned_custom_profile_with_a_builtin_include_and_a_script() {
    tuned_custom_profile_with_a_builtin_include_and_a_script_on(Arch::Native);
}

/// Left out of the default run, as every arm64 run (`main.rs` says why).
#[test]
#[ignore = "chroot tier, an arm64 run: .ci/run chroot_arm64 (the chroot step runs x86_64 only, for CI's time)"]
fn tuned_custom_profile_with_a_builtin_include_and_a_script_arm64() {
    tuned_custom_profile_with_a_builtin_include_and_a_script_on(Arch::Arm64);
}

fn tuned_custom_profile_with_a_builtin_include_and_a_script_on(arch: Arch) {
    let node = Node::fresh_of(arch);
    let ignore = [BOOKKEEPING, APT_FOOTPRINT].concat();
    let before = node.snapshot(&ignore);
    let profile = format!("gpu-node={PROFILE}");
    let script = format!("gpu_init_script={SCRIPT}");
    let args = [
        "--configmap",
        "tuned_profile=gpu-node",
        "--configmap",
        &profile,
        "--configmap",
        &script,
    ];
    let run = |modes: &[&str], cm: &[&str]| node.run("tuned", &[modes, cm].concat());

    run(&["apply"], &args).expect_ok();
    let version = node.sh("dpkg-query -W -f='${Version}' tuned");
    assert!(
        node.exists("/usr/lib/tuned/throughput-performance/tuned.conf"),
        "tuned {version} installed with its profiles"
    );
    assert_eq!(node.sh("systemctl is-enabled tuned").trim(), "enabled");

    run(&["config"], &args)
        .expect_ok()
        .expect_output("tuned applies it when it starts");
    // bookworm's tuned (2.20) reads custom profiles from /etc/tuned/<name>/.
    assert_eq!(node.read("/etc/tuned/gpu-node/tuned.conf").as_deref(), Some(PROFILE));
    assert_eq!(node.read("/etc/tuned/scripts/gpu_init").as_deref(), Some(SCRIPT));
    assert_eq!(node.mode("/etc/tuned/scripts/gpu_init"), Some(0o755));
    assert_eq!(
        std::fs::read_link(node.path("/etc/tuned/scripts/gpu_init_script")).unwrap(),
        std::path::Path::new("gpu_init")
    );
    assert_eq!(
        node.read("/etc/tuned/active_profile").map(|p| p.trim().to_string()),
        Some("gpu-node".into())
    );

    // The same configMap again: nothing changes.
    let configured = node.snapshot(BOOKKEEPING);
    run(&["config"], &args).expect_ok();
    configured.assert_same(&node.snapshot(BOOKKEEPING));

    // Reconcile: without the script key (and the profile no longer using it), the
    // script and its link go.
    let plain = format!("gpu-node={}", PROFILE.split("\n[script]").next().unwrap());
    run(
        &["config"],
        &["--configmap", "tuned_profile=gpu-node", "--configmap", &plain],
    )
    .expect_ok();
    assert!(!node.exists("/etc/tuned/scripts/gpu_init") && !node.exists("/etc/tuned/scripts/gpu_init_script"));

    // Uninstall: tuned, its dependencies and everything deployed are gone.
    run(&["uninstall"], &[]).expect_ok();
    before.assert_same(&node.snapshot(&ignore));
}

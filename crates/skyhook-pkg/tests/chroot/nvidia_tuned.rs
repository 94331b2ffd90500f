// SPDX-License-Identifier: Apache-2.0
//! nvidia-tuned in a Debian root with Debian's real tuned: apply installs tuned from
//! the mirror; config deploys an H100 profile chain (named in the configMap), then a
//! GB200 one chosen by `accelerator: auto` from the node's GFD label, reconciling the
//! H100 chain away, then `generic`'s one self-contained profile (intent and service
//! ignored); `tuned-adm list` shows the deployed profiles, each file is the catalog's
//! text; uninstall leaves the root as it was.

use nvidia_tuned::catalog::{Catalog, Choice, OsEntry};

use crate::{APT_FOOTPRINT, Arch, BOOKKEEPING, Node};

#[test]
#[ignore = "chroot tier: root and the Debian mirror, minutes; .ci/run chroot, or cargo test -p skyhook-pkg --test chroot -- --ignored"]
fn nvidia_tuned_h100_then_gb200_from_its_label() {
    nvidia_tuned_h100_then_gb200_from_its_label_on(Arch::Native);
}

#[test]
#[ignore = "chroot tier, an arm64 run: .ci/run chroot_arm64 (the chroot step runs x86_64 only, for CI's time)"]
fn nvidia_tuned_h100_then_gb200_from_its_label_arm64() {
    nvidia_tuned_h100_then_gb200_from_its_label_on(Arch::Arm64);
}

/// The profiles the catalog renders for `accelerator`'s performance intent on this
/// root's OS, as (name, tuned.conf text), the active one first.
fn chain(node: &Node, accelerator: &str) -> Vec<(String, String)> {
    let release = node.read("/etc/os-release").expect("the root has /etc/os-release");
    let field = |key: &str| {
        release
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{key}=")))
            .map(|v| v.trim_matches('"').to_string())
            .unwrap_or_default()
    };
    let choice = Choice {
        accelerator: accelerator.into(),
        intent: "performance".into(),
        service: None,
        os: Some(OsEntry {
            id: field("ID"),
            version: field("VERSION_ID"),
        }),
    };
    let rendered = Catalog::embedded()
        .render(&choice)
        .expect("the catalog renders the choice");
    rendered.profiles.into_iter().map(|p| (p.name, p.text)).collect()
}

/// Asserts `profiles` are deployed as rendered, listed by tuned-adm and the first active.
#[track_caller]
fn expect_deployed(node: &Node, profiles: &[(String, String)]) {
    let listed = node.sh("tuned-adm list 2>&1");
    for (name, text) in profiles {
        assert_eq!(
            node.read(&format!("/etc/tuned/{name}/tuned.conf")).as_deref(),
            Some(text.as_str()),
            "/etc/tuned/{name}/tuned.conf"
        );
        assert!(
            listed
                .lines()
                .any(|l| l.trim_start().starts_with(&format!("- {name} ")) || l.trim() == format!("- {name}")),
            "tuned-adm list lacks {name}:\n{listed}"
        );
    }
    assert_eq!(
        node.read("/etc/tuned/active_profile").map(|p| p.trim().to_string()),
        Some(profiles[0].0.clone())
    );
}

fn nvidia_tuned_h100_then_gb200_from_its_label_on(arch: Arch) {
    let node = Node::fresh_of(arch);
    let ignore = [BOOKKEEPING, APT_FOOTPRINT].concat();
    let before = node.snapshot(&ignore);
    let h100 = ["--configmap", "accelerator=h100", "--configmap", "intent=performance"];

    node.run("nvidia-tuned", &[&["apply", "config"][..], &h100].concat())
        .expect_ok()
        .expect_output("accelerator h100 as the configMap key \"accelerator\" names it");
    let h100_chain = chain(&node, "h100");
    let names: Vec<&str> = h100_chain.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["nvidia-h100-performance", "nvidia-acs-disable", "nvidia-base"]);
    expect_deployed(&node, &h100_chain);
    assert_eq!(
        node.read("/etc/tuned/tuned-main.conf")
            .map(|t| t.lines().any(|l| l.replace(' ', "") == "reapply_sysctl=0")),
        Some(true),
        "tuned-main.conf sets reapply_sysctl = 0 as the original does"
    );

    // The same configMap again: nothing changes.
    let configured = node.snapshot(BOOKKEEPING);
    node.run("nvidia-tuned", &[&["config"][..], &h100].concat()).expect_ok();
    configured.assert_same(&node.snapshot(BOOKKEEPING));

    // A GB200 node's label and accelerator auto: the GB200 chain replaces the H100 one.
    let gb200 = [
        "--configmap",
        "accelerator=auto",
        "--configmap",
        "intent=performance",
        "--label",
        "nvidia.com/gpu.product=NVIDIA-GB200",
    ];
    node.run("nvidia-tuned", &[&["config"][..], &gb200].concat())
        .expect_ok()
        .expect_output("accelerator gb200 from node label nvidia.com/gpu.product=NVIDIA-GB200");
    let gb200_chain = chain(&node, "gb200");
    expect_deployed(&node, &gb200_chain);
    for name in ["nvidia-h100-performance", "nvidia-acs-disable"] {
        assert!(!node.exists(&format!("/etc/tuned/{name}")), "{name} left behind");
    }

    // accelerator generic: its one self-contained profile replaces the GB200 chain, the
    // intent and service given are ignored (and said to be).
    let generic = [
        "--configmap",
        "accelerator=generic",
        "--configmap",
        "intent=inference",
        "--configmap",
        "service=eks",
    ];
    node.run("nvidia-tuned", &[&["config"][..], &generic].concat())
        .expect_ok()
        .expect_output("configMap key \"service\" (\"eks\") is ignored");
    let generic_chain = chain(&node, "generic");
    assert_eq!(generic_chain.len(), 1, "nvidia-generic includes nothing");
    expect_deployed(&node, &generic_chain);
    for name in ["nvidia-gb200-performance", "nvidia-base"] {
        assert!(!node.exists(&format!("/etc/tuned/{name}")), "{name} left behind");
    }

    // The configMap comes with uninstall too (config.json expects `accelerator`).
    node.run("nvidia-tuned", &[&["uninstall"][..], &generic].concat())
        .expect_ok();
    before.assert_same(&node.snapshot(&ignore));
}

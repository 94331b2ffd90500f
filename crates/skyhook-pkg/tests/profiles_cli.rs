// SPDX-License-Identifier: Apache-2.0
//! `skyhook-pkg profiles` over the catalogs of the packages it is built with: `list`
//! prints every combination each ships, `show` the effective settings of one, and
//! unknown values exit 2 listing what is supported.

use std::process::{Command, Output};

use skyhook_core::profile::Catalog;

fn profiles(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_skyhook-pkg"))
        .arg("profiles")
        .args(args)
        .output()
        .unwrap()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Every catalog the tool must know.
fn catalogs() -> Vec<Box<dyn Catalog>> {
    vec![
        Box::new(nvidia_tuned::catalog()),
        Box::new(nvidia_tuning_gke::catalog()),
        Box::new(nvidia_setup::catalog::SetupCatalog),
    ]
}

#[test]
fn list_has_one_line_per_combination_of_every_catalog() {
    let out = profiles(&["list"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = stdout(&out);
    let lines: Vec<Vec<&str>> = text.lines().skip(1).map(|l| l.split_whitespace().collect()).collect();
    let mut expected = 0;
    for catalog in catalogs() {
        for s in catalog.combinations() {
            let effective = catalog.effective(&s).unwrap();
            let os = s.os.as_ref().map_or("common".to_string(), ToString::to_string);
            let row = vec![
                catalog.package(),
                s.accelerator.as_str(),
                if s.intent.is_empty() { "-" } else { s.intent.as_str() },
                s.service.as_deref().unwrap_or("-"),
                os.as_str(),
                effective.profile.as_str(),
                if effective.needs_reboot() { "yes" } else { "no" },
            ];
            assert!(lines.contains(&row), "no line {row:?} in:\n{text}");
            expected += 1;
        }
    }
    assert_eq!(lines.len(), expected, "{text}");
    assert!(expected >= 30, "only {expected} combinations");
}

#[test]
fn show_prints_each_setting_with_its_profile_and_the_reboot() {
    let out = profiles(&[
        "show",
        "--package",
        "nvidia-tuned",
        "--accelerator",
        "h100",
        "--intent",
        "inference",
        "--os",
        "ubuntu:22.04",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = stdout(&out);
    for part in [
        "nvidia-tuned: accelerator h100 intent inference os ubuntu:22.04\n",
        "profile: nvidia-h100-inference\n",
        "needs a reboot: yes (",
        "sysctls:\n",
        "  vm.swappiness = 1  [nvidia-h100-inference",
        "  kernel.sched_latency_ns = 1000000  [nvidia-h100-inference",
        "optional: skipped with a warning where the kernel lacks it]",
        "kernel arguments:\n",
        "= iommu=pt  [nvidia-h100-performance",
        "= pci=disable_acs_redir=pci:0:0  [nvidia-acs-disable",
        "CPU governor:\n  governor = performance  [nvidia-base",
        "huge pages:\n",
    ] {
        assert!(text.contains(part), "{part:?} missing from:\n{text}");
    }
}

#[test]
fn show_lists_the_files_and_units_of_the_oci_host_steps() {
    let show = |accelerator: &str| {
        let out = profiles(&[
            "show",
            "--package",
            "nvidia-tuned",
            "--accelerator",
            accelerator,
            "--intent",
            "performance",
            "--service",
            "oci",
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        stdout(&out)
    };
    let text = show("gb300");
    for part in [
        "profile: oci-gb300-performance\n",
        "needs a reboot: yes (rdma-vfs-ready.service",
        "  net.ipv6.conf.all.disable_ipv6 = 0  [oci-gb300-performance (service/oci/service.conf)]",
        "  vm.min_free_kbytes = 65536  [nvidia-gb300-noreboot-base",
        "/etc/systemd/system/rdma-vfs-ready.service <- catalog/files/oci/rdma-vfs-ready.service",
        "/usr/local/sbin/wait-rdma-vfs.sh <- catalog/files/oci/wait-rdma-vfs.sh  [host step rdma-vfs-ready]",
        "$TOPO_PATH (default /etc/nccl/topo.xml) = catalog/files/oci/nccl-topo-gb300.xml",
        "/etc/default/grub.d/config-acs.cfg",
        "/etc/default/grub.d/99-iommu-passthrough.cfg",
    ] {
        assert!(text.contains(part), "{part:?} missing from:\n{text}");
    }
    // gb300 carries no [script] upstream: no container runtime stack-limit drop-in.
    assert!(!text.contains("containerd.service.d/containerd.conf"), "{text}");
    assert!(
        !text.contains("cmdline_"),
        "the OCI GB300 chain has no bootloader options:\n{text}"
    );
    let h100 = show("h100");
    // On h100 OCI re-enables IPv6 on the RDMA VFs (upstream's oci script, every
    // accelerator), and nothing of gb300's host steps.
    let steps: Vec<&str> = h100.lines().filter(|l| l.contains("[host step")).collect();
    assert!(
        !steps.is_empty() && steps.iter().all(|l| l.contains("[host step rdma-vf-ipv6]")),
        "h100 on OCI ships only the VF IPv6 step:\n{h100}"
    );
}

#[test]
fn unknown_values_exit_2_listing_what_is_supported() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["--accelerator", "a100", "--intent", "inference"],
            "nvidia-tuned: accelerator \"a100\" is not in the catalog; supported: h100",
        ),
        (
            &["--accelerator", "h100", "--intent", "fast"],
            "nvidia-tuned: intent \"fast\" is not in the catalog; supported: performance, inference, multiNodeTraining",
        ),
        (
            &["--accelerator", "h100", "--intent", "inference", "--service", "nope"],
            "nvidia-tuned: service \"nope\" is not in the catalog; supported: ",
        ),
        (
            &["--package", "tuning", "--accelerator", "h100", "--intent", "inference"],
            "--package \"tuning\": no such catalog; the catalogs: nvidia-setup, nvidia-tuned, nvidia-tuning-gke",
        ),
        (
            &["--accelerator", "h100", "--intent", "inference", "--os", "ubuntu"],
            "--os: OS \"ubuntu\" is not ID:VERSION",
        ),
    ];
    for (args, expected) in cases {
        let out = profiles(&[&["show"], *args].concat());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

#[test]
fn show_tells_the_later_upstream_combinations_and_where_vr200_exists() {
    let nvidia = |rest: &[&str]| {
        let mut args = vec!["show", "--package", "nvidia-tuned"];
        args.extend_from_slice(rest);
        profiles(&args)
    };
    let bcm = nvidia(&[
        "--accelerator",
        "vr200",
        "--intent",
        "inference",
        "--service",
        "bcm",
        "--os",
        "ubuntu:26.04",
    ]);
    assert_eq!(bcm.status.code(), Some(0), "{}", String::from_utf8_lossy(&bcm.stderr));
    let text = stdout(&bcm);
    assert!(text.contains("profile: bcm-vr200-inference\n"), "{text}");
    assert!(
        text.contains("needs a reboot: no"),
        "bcm's vr200 chain has no kernel arguments:\n{text}"
    );

    let generic = nvidia(&["--accelerator", "generic", "--intent", "inference", "--service", "eks"]);
    assert_eq!(
        generic.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&generic.stderr)
    );
    assert!(
        stdout(&generic).contains("profile: nvidia-generic\n"),
        "{}",
        stdout(&generic)
    );

    let elsewhere = nvidia(&[
        "--accelerator",
        "vr200",
        "--intent",
        "performance",
        "--os",
        "ubuntu:24.04",
    ]);
    assert_eq!(elsewhere.status.code(), Some(2));
    let error = String::from_utf8_lossy(&elsewhere.stderr);
    assert!(
        error.contains("accelerator vr200 intent performance os ubuntu:24.04")
            && error.contains("accelerator vr200 intent performance os ubuntu:26.04"),
        "names the combination asked and where vr200 is shipped: {error}"
    );
}

/// `profiles show` of nvidia-setup's combination `service` × `accelerator`.
fn setup_show(service: &str, accelerator: &str) -> Output {
    profiles(&[
        "show",
        "--package",
        "nvidia-setup",
        "--service",
        service,
        "--accelerator",
        accelerator,
    ])
}

#[test]
fn show_lists_a_catalog_without_intents_by_service_and_accelerator() {
    let out = setup_show("aks", "h100");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = stdout(&out);
    assert!(
        text.starts_with(
            "nvidia-setup: accelerator h100 service aks (common profiles)\nprofile: aks-h100\nneeds a reboot: no\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("  ib_umad = loaded, and at every boot  [defaults/aks-h100.conf]"),
        "{text}"
    );
    assert!(text.contains("LimitMEMLOCK=infinity"), "{text}");
    let out = setup_show("eks", "gb300");
    let text = stdout(&out);
    assert!(text.contains("needs a reboot: yes (kernel, raid0)"), "{text}");
    assert!(text.contains("6.17.0-1019-aws-64k (aarch64)"), "{text}");
    let out = setup_show("eks", "vr200");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("accelerator h100 service eks"),
        "{:?}",
        out
    );
}

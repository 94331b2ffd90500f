// SPDX-License-Identifier: Apache-2.0
//! tuning in a Debian root: the README's examples — kernel parameters on a fake
//! `/proc/sys` inside the root (this machine's kernel is never touched), user limits
//! with the root's own PAM stack, a containerd drop-in, and kernel arguments through
//! the root's real update-grub — then uninstall giving back the node as it was.
//! Without GRUB, kernel arguments fail clearly and change nothing.

use crate::{Arch, BOOKKEEPING, Node, readme};

/// The live values a fresh node starts with, on its fake `/proc/sys`.
const LIVE: &[(&str, &str)] = &[
    ("fs/inotify/max_user_instances", "128"),
    ("fs/inotify/max_user_watches", "8192"),
    ("vm/max_map_count", "65530"),
    ("net/core/somaxconn", "4096"),
    ("kernel/pid_max", "32768"),
];

fn node_with_proc(arch: Arch) -> Node {
    let node = Node::fresh_of(arch);
    for (key, value) in LIVE {
        node.write(&format!("/proc/sys/{key}"), &format!("{value}\n"));
    }
    node
}

fn example(has: &str) -> readme::Example {
    readme::of("tuning")
        .into_iter()
        .find(|e| e.configmap.contains_key(has) && (has != "sysctl.conf" || e.configmap.len() == 1))
        .unwrap_or_else(|| panic!("tuning/README.md has an example with {has}"))
}

fn run(node: &Node, ex: &readme::Example, modes: &[&str]) -> crate::Outcome {
    node.run_example("tuning", ex, modes, &[])
}

#[test]
#[ignore = "chroot tier: root and the Debian mirror, minutes; .ci/run chroot, or cargo test -p skyhook-pkg --test chroot -- --ignored"]
fn tuning_gpu_node_example_with_grub() {
    tuning_gpu_node_example_with_grub_on(Arch::Native);
}

#[test]
#[ignore = "chroot tier, an arm64 run: .ci/run chroot_arm64 (the chroot step runs x86_64 only, for CI's time)"]
fn tuning_gpu_node_example_with_grub_arm64() {
    tuning_gpu_node_example_with_grub_on(Arch::Arm64);
}

fn tuning_gpu_node_example_with_grub_on(arch: Arch) {
    let ex = example("grub.conf");
    let node = node_with_proc(arch);
    node.install_grub();
    let before = node.snapshot(BOOKKEEPING);
    let distribution_entries = node.grub_kernel_args();
    let name = &ex.name;

    run(&node, &ex, &["config"]).expect_ok().expect_output("{type: reboot}");
    assert_eq!(
        node.read("/proc/sys/vm/max_map_count").as_deref(),
        Some("262144\n"),
        "applied live"
    );
    assert_eq!(node.read("/proc/sys/net/core/somaxconn").as_deref(), Some("32768\n"));
    let sysctl = node
        .read(&format!("/etc/sysctl.d/zz-skyhook-{name}-tuning.conf"))
        .expect("sysctl drop-in");
    assert!(
        sysctl.contains("vm.max_map_count") && sysctl.contains("262144"),
        "{sysctl}"
    );
    let limits = node
        .read(&format!("/etc/security/limits.d/zz-skyhook-{name}-tuning.conf"))
        .expect("limits file");
    assert!(
        limits.contains("nofile") && limits.contains("soft") && limits.contains("hard"),
        "{limits}"
    );
    assert!(
        node.sh("grep -h '^session.*pam_limits.so' /etc/pam.d/common-session")
            .contains("pam_limits.so")
    );
    let dropin = node
        .read(&format!(
            "/etc/systemd/system/containerd.service.d/zz-skyhook-{name}-tuning.conf"
        ))
        .expect("drop-in");
    assert!(
        dropin.starts_with("# ") && dropin.ends_with(ex.configmap["service_containerd.conf"].as_str()),
        "the value verbatim below a comment header: {dropin}"
    );
    let wanted = ["hugepagesz=1G", "hugepages=4", "hugepagesz=2M", "hugepages=512"];
    // Normal entries (recovery entries take GRUB_CMDLINE_LINUX only, by GRUB's design).
    let entries: Vec<Vec<String>> = node
        .grub_kernel_args()
        .into_iter()
        .filter(|a| !a.iter().any(|x| x == "single"))
        .collect();
    assert!(!entries.is_empty());
    for args in &entries {
        let found: Vec<&str> = args
            .iter()
            .map(String::as_str)
            .filter(|a| a.starts_with("hugepage"))
            .collect();
        assert_eq!(
            found, wanted,
            "update-grub put our arguments, in order, after the distribution's: {args:?}"
        );
        assert!(
            args.iter().any(|a| a == "quiet"),
            "the distribution's arguments stay: {args:?}"
        );
    }

    // Exactly our arguments: each generated linux line is the distribution's with ours,
    // contiguous and once, where GRUB puts GRUB_CMDLINE_LINUX_DEFAULT (before the
    // `init=` of its alternative-init entries), and recovery entries are unchanged.
    let generated = node.grub_kernel_args();
    assert_eq!(generated.len(), distribution_entries.len(), "{generated:?}");
    for (now, was) in generated.iter().zip(&distribution_entries) {
        if was.iter().any(|x| x == "single") {
            assert_eq!(now, was, "a recovery entry takes none of ours");
            continue;
        }
        let at = now.iter().position(|a| a == wanted[0]).expect("our first argument");
        assert_eq!(
            &now[at..at + wanted.len()],
            wanted,
            "ours, in order, contiguous: {now:?}"
        );
        let mut rest = now.clone();
        rest.drain(at..at + wanted.len());
        assert_eq!(&rest, was, "nothing but ours was added or changed: {now:?}");
    }

    // The same again: nothing written, nothing run.
    let configured = node.snapshot(BOOKKEEPING);
    run(&node, &ex, &["config"]).expect_ok();
    configured.assert_same(&node.snapshot(BOOKKEEPING));

    // "Reboot": the kernel now runs with the generated command line.
    node.write(
        "/proc/cmdline",
        &format!("BOOT_IMAGE=/boot/vmlinuz {}\n", entries[0].join(" ")),
    );
    run(&node, &ex, &["post-interrupt-check"]).expect_ok();

    run(&node, &ex, &["uninstall"]).expect_ok();
    std::fs::remove_file(node.path("/proc/cmdline")).unwrap(); // the simulated boot, not the package's
    before.assert_same(&node.snapshot(BOOKKEEPING));
}

#[test]
#[ignore = "chroot tier: root and the Debian mirror, minutes; .ci/run chroot, or cargo test -p skyhook-pkg --test chroot -- --ignored"]
fn tuning_refuses_a_hostile_grub_conf_before_grub_sees_it() {
    let node = node_with_proc(Arch::Native);
    node.install_grub();
    let before = node.snapshot(BOOKKEEPING);
    for (line, shown) in [
        ("quiet;reboot", "';'"),
        ("hugepages=4 # note", "'#'"),
        ("a|b", "'|'"),
        ("x{y}", "'{'"),
        ("$(reboot)", "'$'"),
        ("init=`id`", "'`'"),
    ] {
        node.run(
            "tuning",
            &[
                "config",
                "--name",
                "hostile",
                "--configmap",
                &format!("grub.conf=iommu=pt\n{line}\n"),
            ],
        )
        .expect_failure()
        .expect_output("bad input (exit 2)")
        .expect_output("\"grub.conf\" line 2")
        .expect_output(shown);
        before.assert_same(&node.snapshot(BOOKKEEPING));
    }
}

#[test]
#[ignore = "chroot tier: root and the Debian mirror, minutes; .ci/run chroot, or cargo test -p skyhook-pkg --test chroot -- --ignored"]
fn tuning_without_grub_fails_clearly_and_changes_nothing() {
    tuning_without_grub_fails_clearly_and_changes_nothing_on(Arch::Native);
}

#[test]
#[ignore = "chroot tier, an arm64 run: .ci/run chroot_arm64 (the chroot step runs x86_64 only, for CI's time)"]
fn tuning_without_grub_fails_clearly_and_changes_nothing_arm64() {
    tuning_without_grub_fails_clearly_and_changes_nothing_on(Arch::Arm64);
}

fn tuning_without_grub_fails_clearly_and_changes_nothing_on(arch: Arch) {
    let node = node_with_proc(arch);
    let before = node.snapshot(BOOKKEEPING);
    run(&node, &example("grub.conf"), &["config"])
        .expect_failure()
        .expect_output("has no GRUB");
    before.assert_same(&node.snapshot(BOOKKEEPING));

    // Kernel parameters alone need no GRUB: applied live, undone by uninstall.
    let sysctl_only = example("sysctl.conf");
    run(&node, &sysctl_only, &["config"]).expect_ok();
    assert_eq!(node.read("/proc/sys/kernel/pid_max").as_deref(), Some("4194304\n"));
    run(&node, &sysctl_only, &["uninstall"]).expect_ok();
    before.assert_same(&node.snapshot(BOOKKEEPING));
}

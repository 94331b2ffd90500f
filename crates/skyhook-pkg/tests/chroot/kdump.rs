// SPDX-License-Identifier: Apache-2.0
//! kdump in a Debian root: kdump-tools installed from the mirror by apply, the README's
//! `256M` example and then a kdump.conf configured (GRUB's real update-grub generating
//! the boot configuration), and uninstall leaving the node as it was.

use crate::{APT_FOOTPRINT, Arch, BOOKKEEPING, Node, readme};

/// The README's examples: `256M`, then `512M` with a kdump.conf.
fn examples() -> (readme::Example, readme::Example) {
    let all = readme::of("kdump");
    let plain = all
        .iter()
        .find(|e| e.configmap.get("crashkernel").map(String::as_str) == Some("256M") && e.configmap.len() == 1);
    let with_conf = all
        .iter()
        .find(|e| e.configmap.contains_key("kdump.conf") && e.configmap["kdump.conf"].contains("USE_KDUMP"));
    (
        plain.expect("kdump/README.md has the 256M example").clone(),
        with_conf
            .expect("kdump/README.md has the example with a Debian kdump.conf")
            .clone(),
    )
}

fn run(node: &Node, ex: &readme::Example, modes: &[&str]) -> crate::Outcome {
    node.run_example("kdump", ex, modes, &[])
}

#[test]
#[ignore = "chroot tier: root and the Debian mirror, minutes; .ci/run chroot, or cargo test -p skyhook-pkg --test chroot -- --ignored"]
fn kdump_apply_config_and_uninstall() {
    kdump_apply_config_and_uninstall_on(Arch::Native);
}

#[test]
#[ignore = "chroot tier, an arm64 run: .ci/run chroot_arm64 (the chroot step runs x86_64 only, for CI's time)"]
fn kdump_apply_config_and_uninstall_arm64() {
    kdump_apply_config_and_uninstall_on(Arch::Arm64);
}

fn kdump_apply_config_and_uninstall_on(arch: Arch) {
    let (plain, with_conf) = examples();
    let node = Node::fresh_of(arch);
    node.install_grub();
    // The chroot has no /proc: kdump reads the node's memory from a fake meminfo (16 GiB).
    node.write(
        "/proc/meminfo",
        "MemTotal:       16384000 kB\nMemFree:         8000000 kB\n",
    );
    let ignore = [BOOKKEEPING, APT_FOOTPRINT].concat();
    let before = node.snapshot(&ignore);
    let shipped_cfg = "/etc/default/grub.d/kdump-tools.cfg";

    run(&node, &plain, &["apply"]).expect_ok();
    let kdump_tools = node
        .read("/etc/default/kdump-tools")
        .expect("kdump-tools installed its configuration");
    assert!(
        node.sh("dpkg-query -W -f='${Status}' kdump-tools")
            .contains("install ok installed")
    );
    assert_eq!(node.sh("systemctl is-enabled kdump-tools").trim(), "enabled");
    let shipped = node.read(shipped_cfg).expect("kdump-tools ships its grub drop-in");

    // 256M: exactly one crashkernel= on every kernel line, ours.
    run(&node, &plain, &["config"])
        .expect_ok()
        .expect_output("{type: reboot}");
    let entries = node.grub_kernel_args();
    assert!(!entries.is_empty(), "update-grub generated kernel entries");
    for args in &entries {
        let crash: Vec<&String> = args.iter().filter(|a| a.starts_with("crashkernel=")).collect();
        assert!(
            crash.len() <= 1 && crash.iter().all(|a| *a == "crashkernel=256M"),
            "grub.cfg kernel line {args:?}"
        );
    }
    assert!(
        entries
            .iter()
            .any(|a| a.contains(&"crashkernel=256M".to_string()) && a.contains(&"quiet".to_string()))
    );
    assert_ne!(node.read(shipped_cfg), Some(shipped.clone()));

    // Unchanged input: nothing rewritten, grub not regenerated.
    let configured = node.snapshot(BOOKKEEPING);
    run(&node, &plain, &["config"]).expect_ok();
    configured.assert_same(&node.snapshot(BOOKKEEPING));

    // The second example: another size and the service configuration.
    run(&node, &with_conf, &["config"]).expect_ok();
    assert_eq!(
        node.read("/etc/default/kdump-tools").as_deref(),
        Some(with_conf.configmap["kdump.conf"].as_str())
    );
    assert!(
        node.grub_kernel_args()
            .iter()
            .any(|a| a.contains(&"crashkernel=512M".to_string()))
    );

    // Uninstall: the package, our settings and the boot configuration all go back.
    run(&node, &with_conf, &["uninstall"]).expect_ok();
    assert!(!node.exists(shipped_cfg) || node.read(shipped_cfg) == Some(shipped));
    assert!(node.read("/etc/default/kdump-tools").is_none_or(|t| t == kdump_tools));
    before.assert_same(&node.snapshot(&ignore));
}

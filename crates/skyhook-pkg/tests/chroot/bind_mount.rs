// SPDX-License-Identifier: Apache-2.0
//! bind-mount in a Debian root, with the root's own systemd tools: two instances —
//! the README's example and a target whose name systemd must escape — through config,
//! config-check, uninstall and uninstall-check. The real `systemctl enable` (which
//! works on a root without a running systemd) enables each unit, the real
//! `systemd-escape` names the unit of each target as the package did, and the real
//! `systemd-analyze verify` accepts each unit file (it refuses a `Where=` that does not
//! match the unit's name). The mount table is the root's `/proc/1/mountinfo`, written
//! by the test (a chroot has no `/proc`): the source an xfs mount of an md device, as
//! in the README. Activation (the interrupt) and the live checks are the VM's and the
//! package tests' business: nothing is mounted here.

use crate::{Arch, BOOKKEEPING, Node, readme};

/// The mount table the node's init sees: `/` and the README's source.
const MOUNTINFO: &str = "\
22 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw
31 22 9:0 / /mnt/k8s-disks/0 rw,relatime shared:14 - xfs /dev/md0 rw,attr2,inode64
";

#[test]
#[ignore = "chroot tier: root and the Debian mirror, minutes; .ci/run chroot, or cargo test -p skyhook-pkg --test chroot -- --ignored"]
fn bind_mount_units_pass_the_real_systemd_tools() {
    bind_mount_units_pass_the_real_systemd_tools_on(Arch::Native);
}

#[test]
#[ignore = "chroot tier, an arm64 run: .ci/run chroot_arm64 (the chroot step runs x86_64 only, for CI's time)"]
fn bind_mount_units_pass_the_real_systemd_tools_arm64() {
    bind_mount_units_pass_the_real_systemd_tools_on(Arch::Arm64);
}

fn bind_mount_units_pass_the_real_systemd_tools_on(arch: Arch) {
    let readme = readme::of("bind-mount")
        .into_iter()
        .next()
        .expect("bind-mount/README.md has an SCR example");
    let mut escaped = readme.clone();
    escaped.name = "scratch".into();
    escaped
        .configmap
        .insert("target".into(), "/mnt/node-local/scratch-0".into());
    let node = Node::fresh_of(arch);
    node.write("/proc/1/mountinfo", MOUNTINFO);
    node.write("/mnt/k8s-disks/0/data.bin", "the source's data\n");
    let before = node.snapshot(BOOKKEEPING);
    let run = |ex: &readme::Example, modes: &[&str]| {
        let args = ex.args();
        let mut all: Vec<&str> = modes.to_vec();
        all.extend(args.iter().map(String::as_str));
        node.run("bind-mount", &all)
    };

    for ex in [&readme, &escaped] {
        run(ex, &["config", "config-check"]).expect_ok();
        let target = &ex.configmap["target"];
        let unit = node.sh(&format!("systemd-escape --path --suffix=mount '{target}'"));
        let unit = unit.trim();
        let file = format!("/etc/systemd/system/{unit}");
        assert!(node.exists(&file), "the unit systemd names for {target}: {unit}");
        node.sh(&format!("systemd-analyze verify '{file}' 2>&1"));
        assert_eq!(node.sh(&format!("systemctl is-enabled '{unit}'")).trim(), "enabled");
    }

    // The same again changes nothing.
    let configured = node.snapshot(BOOKKEEPING);
    run(&readme, &["config"]).expect_ok();
    run(&escaped, &["config"]).expect_ok();
    configured.assert_same(&node.snapshot(BOOKKEEPING));

    run(&escaped, &["uninstall", "uninstall-check"]).expect_ok();
    run(&readme, &["uninstall", "uninstall-check"]).expect_ok();
    before.assert_same(&node.snapshot(BOOKKEEPING));
}

// SPDX-License-Identifier: Apache-2.0
//! The RAID0 array over the NVMe instance storage (eks full entry): apply refuses
//! foreign disks before any change and otherwise enables the boot unit; the unit's
//! run (`assemble-instance-storage`, after a simulated reboot) creates, formats,
//! mounts and binds, assembles at later boots, makes the array again over the new
//! blank disks of a stop and start, and refuses foreign ones; uninstall removes the
//! unit and leaves the array. (Kills: tests/killpoints.rs.)

mod common;

use common::disks::{self, instance_storage, mount_points, new_disks, reboot};
use common::*;

/// The node of every scenario here.
fn node() -> Node {
    disks::eks_node()
}

const UNIT_FILE: &str = "/etc/systemd/system/skyhook-instance-storage.service";
const WANTS: &str = "/etc/systemd/system/multi-user.target.wants/skyhook-instance-storage.service";
const STORE: &str = "/var/lib/skyhook-packages/nvidia-setup-instance-storage";
const HELPER: &str = concat!(
    "/var/lib/skyhook-packages/nvidia-setup-instance-storage/",
    env!("CARGO_PKG_VERSION"),
    "/nvidia-setup"
);
const INTENT: &str = "/var/lib/skyhook-packages/nvidia-setup-instance-storage/intent.json";
const ARRAY_MOUNT: &str = "/mnt/k8s-disks/0";
const BOUND: [&str; 3] = ["/var/lib/kubelet", "/var/lib/containerd", "/var/log/pods"];

fn count(n: &Node, prefix: &str) -> usize {
    n.calls().iter().filter(|c| c.starts_with(prefix)).count()
}

fn array_is_up(n: &Node) {
    let points = mount_points(n);
    for p in std::iter::once(ARRAY_MOUNT).chain(BOUND) {
        assert!(points.iter().any(|m| m == p), "{p} not mounted: {points:?}");
    }
    assert_eq!(
        n.read("/mnt/k8s-disks/0/kubelet/config.yaml").as_deref(),
        Some("kind: KubeletConfiguration\n")
    );
    assert!(n.exists("/mnt/k8s-disks/0/containerd/io.containerd.metadata.v1.bolt/meta.db"));
    assert!(!n.exists("/mnt/k8s-disks/0/kubelet.partial"));
}

#[test]
fn apply_enables_the_boot_unit_and_the_reboot_builds_the_array_with_the_directories_on_it() {
    let n = node();
    let r = run(&n, "apply", 0);
    r.expect_output("interrupt needed: {type: reboot}");
    let unit = n.read(UNIT_FILE).unwrap();
    for line in [
        "Before=containerd.service kubelet.service\n",
        &format!("ExecStart={HELPER} assemble-instance-storage\n"),
        "WantedBy=multi-user.target\n",
    ] {
        assert!(unit.contains(line), "{line}: {unit}");
    }
    assert!(n.exists(WANTS), "enabled");
    assert_eq!(
        std::fs::read(n.path(HELPER)).unwrap(),
        std::fs::read(env!("CARGO_BIN_EXE_nvidia-setup")).unwrap(),
        "the helper is this binary"
    );
    assert_eq!(n.mode(HELPER), Some(0o755));
    assert_eq!(n.package_version("mdadm").as_deref(), Some("4.3-1ubuntu2"));
    assert_eq!(n.package_version("xfsprogs").as_deref(), Some("6.6.0-1ubuntu2"));
    assert_eq!(
        count(&n, "mdadm") + count(&n, "mkfs.xfs"),
        0,
        "apply builds nothing itself"
    );
    assert_eq!(n.read("/dev/nvme1n1").as_deref(), Some(""), "the disks untouched");
    run(&n, "apply-check", 0);
    run(&n, "post-interrupt-check", 1).expect_output("journalctl -u skyhook-instance-storage.service");

    assert_eq!(reboot(&n), Some(0));
    assert_eq!(
        count(
            &n,
            "mdadm --create /dev/md/kubernetes --run --level=0 --name=kubernetes --raid-devices=2 /dev/nvme1n1 /dev/nvme2n1"
        ),
        1,
        "{:?}",
        n.calls()
    );
    assert_eq!(count(&n, "mkfs.xfs -l su=8b /dev/md127"), 1, "{:?}", n.calls());
    array_is_up(&n);
    assert!(
        n.read(INTENT).unwrap().contains("\"formatted\": true"),
        "progress recorded"
    );
    run(&n, "post-interrupt-check", 0);

    // Nothing more to do: no change, no reboot asked.
    let settled = n.snapshot();
    let r = run(&n, "apply", 0);
    assert!(
        !r.output().contains("interrupt needed: {type: reboot}"),
        "{}",
        r.output()
    );
    settled.assert_same(&n.snapshot());

    // A later boot takes the array udev assembled (under a name of its own) and
    // formats and copies nothing.
    assert_eq!(reboot(&n), Some(0));
    assert_eq!(
        count(&n, "mdadm") + count(&n, "mkfs.xfs") + count(&n, "cp"),
        0,
        "{:?}",
        n.calls()
    );
    array_is_up(&n);
    run(&n, "post-interrupt-check", 0);
    // Where udev assembled nothing, the unit assembles it.
    n.clear_calls();
    assert_eq!(disks::reboot_without_udev_assembly(&n), Some(0));
    let mdadm: Vec<String> = n.calls().into_iter().filter(|c| c.starts_with("mdadm")).collect();
    assert_eq!(mdadm, ["mdadm --assemble /dev/md/kubernetes /dev/nvme1n1 /dev/nvme2n1"]);
    array_is_up(&n);
    // Where udev stopped half way (an inactive array holding one disk), the unit
    // stops it and assembles the whole.
    n.clear_calls();
    assert_eq!(disks::reboot_partly_assembled(&n), Some(0));
    let mdadm: Vec<String> = n.calls().into_iter().filter(|c| c.starts_with("mdadm")).collect();
    assert_eq!(
        mdadm,
        [
            "mdadm --stop /dev/md127",
            "mdadm --assemble /dev/md/kubernetes /dev/nvme1n1 /dev/nvme2n1"
        ]
    );
    array_is_up(&n);
    run(&n, "post-interrupt-check", 0);
}

#[test]
fn new_blank_disks_after_a_stop_and_start_get_the_array_made_again() {
    let n = node();
    run(&n, "apply", 0);
    assert_eq!(reboot(&n), Some(0));
    n.file("/mnt/k8s-disks/0/kubelet/pods/p1", "on the old array");
    new_disks(&n, &["AWS77", "AWS88"]);
    n.clear_calls();
    assert_eq!(reboot(&n), Some(0));
    assert_eq!(count(&n, "mdadm --create"), 1, "{:?}", n.calls());
    assert_eq!(count(&n, "mkfs.xfs"), 1, "{:?}", n.calls());
    run(&n, "post-interrupt-check", 0);
}

#[test]
fn a_disk_with_a_signature_not_of_this_array_is_refused_by_apply_before_any_change() {
    let cases = [
        (
            "fs ext4 1111-2222\n",
            "/dev/nvme2n1 (nvme-Amazon_EC2_NVMe_Instance_Storage_AWS22) holds a ext4 file system",
        ),
        ("pt gpt\n", "holds a gpt partition table"),
        (
            "md 99:99 other:data 2\n",
            "holds RAID metadata of another array (other:data)",
        ),
    ];
    for (signature, says) in cases {
        let n = node();
        n.file("/dev/nvme2n1", signature);
        let before = n.snapshot();
        run(&n, "apply", 2)
            .expect_output(says)
            .expect_output("nothing on the node was changed");
        before.assert_same(&n.snapshot());
    }
}

#[test]
fn an_instance_storage_name_leading_elsewhere_than_an_nvme_disk_is_refused() {
    let n = node();
    let link = n.path("/dev/disk/by-id/nvme-Amazon_EC2_NVMe_Instance_Storage_AWS22");
    std::fs::remove_file(&link).unwrap();
    std::os::unix::fs::symlink("/etc/shadow", &link).unwrap();
    let before = n.snapshot();
    run(&n, "apply", 2).expect_output("points to \"/etc/shadow\", not an NVMe disk");
    before.assert_same(&n.snapshot());
    assert_eq!(count(&n, "blkid"), 0, "nothing probed");
}

#[test]
fn the_boot_unit_refuses_a_disk_that_became_foreign_and_writes_nothing() {
    let n = node();
    run(&n, "apply", 0);
    n.file("/dev/nvme2n1", "fs ext4 1111-2222\n");
    let r = n.run("assemble-instance-storage");
    r.expect_code(2)
        .expect_output("/dev/nvme2n1 (nvme-Amazon_EC2_NVMe_Instance_Storage_AWS22) holds a ext4 file system");
    assert_eq!(reboot(&n), Some(2));
    assert_eq!(
        count(&n, "mdadm") + count(&n, "mkfs.xfs") + count(&n, "mount"),
        0,
        "{:?}",
        n.calls()
    );
    assert_eq!(n.read("/dev/nvme1n1").as_deref(), Some(""));
    run(&n, "post-interrupt-check", 1).expect_output("journalctl -u skyhook-instance-storage.service");
}

#[test]
fn one_member_beside_a_blank_disk_is_refused_not_erased() {
    let n = node();
    run(&n, "apply", 0);
    assert_eq!(reboot(&n), Some(0));
    let member = n.read("/dev/nvme1n1").unwrap();
    std::fs::remove_file(n.path("/dev/nvme2n1")).unwrap();
    n.file("/dev/nvme2n1", "");
    assert_eq!(reboot(&n), Some(1));
    assert_eq!(n.read("/dev/nvme1n1").unwrap(), member, "the member kept");
    assert_eq!(count(&n, "mdadm") + count(&n, "mkfs.xfs"), 0, "{:?}", n.calls());
    // apply says so too, before any change.
    n.file("/proc/1/mountinfo", disks::ROOT_MOUNT);
    let before = n.snapshot();
    run(&n, "apply", 1)
        .expect_output("/dev/nvme2n1 (blank)")
        .expect_output("wipefs -a");
    before.assert_same(&n.snapshot());
}

#[test]
fn one_disk_makes_a_one_disk_array() {
    let n = eks();
    n.file("/etc/chrony/chrony.conf", CHRONY_CONF);
    std::fs::create_dir_all(n.path("/etc/systemd/system/multi-user.target.wants")).unwrap();
    instance_storage(&n, &["AWS1"]);
    run(&n, "apply", 0);
    assert_eq!(reboot(&n), Some(0));
    assert_eq!(
        count(
            &n,
            "mdadm --create /dev/md/kubernetes --run --level=0 --name=kubernetes --raid-devices=1 --force /dev/nvme1n1"
        ),
        1,
        "{:?}",
        n.calls()
    );
    run(&n, "post-interrupt-check", 0);
}

#[test]
fn the_boot_unit_moves_nothing_under_a_running_kubelet() {
    let n = node();
    run(&n, "apply", 0);
    n.file("/proc/1/mountinfo", disks::ROOT_MOUNT);
    skyhook_testkit::systemd::run_unit(&n, "kubelet", 4242, skyhook_testkit::systemd::DEFAULT_STACK);
    n.run("assemble-instance-storage")
        .expect_code(1)
        .expect_output("kubelet.service is running");
    assert_eq!(count(&n, "cp") + count(&n, "mount --bind"), 0, "{:?}", n.calls());
}

#[test]
fn uninstall_removes_the_unit_and_leaves_the_array_which_a_new_apply_assembles_again() {
    let n = node();
    run(&n, "apply", 0);
    assert_eq!(reboot(&n), Some(0));
    run(&n, "uninstall", 0).expect_output("the array stays mounted at /mnt/k8s-disks/0");
    run(&n, "uninstall-check", 0);
    for path in [UNIT_FILE, WANTS, STORE] {
        assert!(!n.exists(path), "{path} left");
    }
    assert!(mount_points(&n).iter().any(|m| m == ARRAY_MOUNT), "left mounted");
    assert_eq!(reboot(&n), None, "no unit at the next boot");

    run(&n, "apply", 0);
    assert_eq!(reboot(&n), Some(0));
    assert_eq!(
        count(&n, "mdadm --create") + count(&n, "mkfs.xfs"),
        0,
        "{:?}",
        n.calls()
    );
    array_is_up(&n);
}

#[test]
fn uninstall_removes_the_enablement_link_of_a_unit_file_removed_by_hand() {
    let n = node();
    run(&n, "apply", 0);
    std::fs::remove_file(n.path(UNIT_FILE)).unwrap();
    assert!(n.path(WANTS).is_symlink());
    run(&n, "uninstall", 0);
    run(&n, "uninstall-check", 0);
    assert!(!n.path(WANTS).is_symlink(), "the dangling enablement link is gone");
}

#[test]
fn a_damaged_intent_is_named_and_nothing_is_written() {
    for damaged in ["[]\n", "{\"made\": 7}\n", "not json"] {
        let n = node();
        run(&n, "apply", 0);
        n.file(INTENT, damaged);
        n.clear_calls();
        let before = n.snapshot();
        n.run("assemble-instance-storage")
            .expect_code(1)
            .expect_output("instance-storage/intent.json is unreadable");
        run(&n, "apply", 1).expect_output("the instance storage's intent");
        before.assert_same(&n.snapshot());
        assert_eq!(
            count(&n, "mdadm") + count(&n, "mkfs.xfs"),
            0,
            "{damaged}: {:?}",
            n.calls()
        );
    }
}

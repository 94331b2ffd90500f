// SPDX-License-Identifier: Apache-2.0
//! The nvidia-setup scenario: the EKS full entry's RAID0 array over NVMe instance
//! storage, with the real mdadm, mkfs.xfs, mount and systemd, four boots.
//!
//! The machine has two blank NVMe disks (QEMU's NVMe controller with instance-store
//! serials). A udev rule of the scenario gives them the names EC2 gives its instance
//! storage (`/dev/disk/by-id/nvme-Amazon_EC2_NVMe_Instance_Storage_<serial>`, from the
//! model string QEMU's controller does not have); EFA is what the AMI would carry (a
//! dpkg package `efa`, a stand-in `dkms` listing its module: the guest builds none);
//! the kernel target is the guest's own (`NVIDIA_KERNEL`).
//!
//! 1. With an ext4 file system on one disk, apply refuses (exit 2, naming it) and
//!    changes nothing; with the disk wiped, apply (the lifecycle up to the
//!    interrupt) enables the boot unit and asks for a reboot; the disks are untouched.
//! 2. After the reboot the unit has created the array over both disks, formatted and
//!    mounted it, and bound kubelet's, containerd's and the pod logs' directories onto
//!    it (their content copied); post-interrupt-check passes; a file is written
//!    through the bind.
//! 3. A plain reboot: the array is found again (udev's own assembly, or the unit's),
//!    nothing formatted, the file is still there.
//! 4. The disks replaced by new blank ones under new serials (a stop and start): the
//!    unit makes the array again, the directories are copied again from the root disk
//!    (so the file of boot 2 is gone), post-interrupt-check passes; uninstall removes
//!    the unit and leaves the array mounted.

use crate::vm::Vm;

/// The size of each NVMe disk: mkfs.xfs wants 300 MB or more for the array.
const DISK_MIB: u64 = 256;

/// Shared by every boot.
const DEFINES: &str = r#"
kernel=$(uname -r)
unit=skyhook-instance-storage.service
array=/mnt/k8s-disks/0
marker="kubelet's state on the root disk"
# mount_of PATH: "MAJOR:MINOR ROOT FSTYPE" of the mount at PATH (the last one).
mount_of() {
    awk -v p="$1" '$5 == p { i = 7; while ($i != "-") i++; m = $3 " " $4 " " $(i + 1) } END { print m }' /proc/self/mountinfo
}
# expect_array: the unit ran, the array is RAID0 over two disks, XFS at $array, the
# three directories bound onto it.
expect_array() {
    journalctl -b -u $unit -o cat > unit-log 2>&1; keep unit-log "unit-log-$1"
    cat /proc/mdstat > mdstat; keep mdstat "mdstat-$1"
    expect_eq "the boot unit" "$(systemctl is-active $unit)" active
    ls -l /dev/md/ > md-names 2>&1 || true; keep md-names "md-names-$1"
    # The array by what holds the first disk (udev names it after its home host).
    local md; md=$(ls /sys/block/nvme0n1/holders/)
    expect_eq "the array's level" "$(cat /sys/block/$md/md/level)" raid0
    expect_eq "the array's disks" "$(ls /sys/block/$md/slaves | wc -l)" 2
    set -- $(mount_of $array)
    expect_eq "the file system at $array" "$2 $3" "/ xfs"
    local dev=$1 d
    for d in /var/lib/kubelet /var/lib/containerd /var/log/pods; do
        expect_eq "the mount at $d" "$(mount_of $d)" "$dev /$(basename $d) xfs"
    done
    expect_eq "the marker through the bind" "$(cat /var/lib/kubelet/marker)" "$marker"
}
"#;

/// Boot 1: the node as the AMI left it; apply up to the interrupt.
const INSTALL: &str = r#"
cat > /etc/udev/rules.d/61-skyhook-vm-instance-storage.rules <<'EOF'
KERNEL=="nvme*n*", ENV{DEVTYPE}=="disk", ATTRS{serial}=="?*", SYMLINK+="disk/by-id/nvme-Amazon_EC2_NVMe_Instance_Storage_$attr{serial}"
EOF
udevadm control --reload
udevadm trigger --action=add --subsystem-match=block
udevadm settle
for s in AWS1111 AWS2222; do
    wait_until "the instance-store name of $s" 30 test -e /dev/disk/by-id/nvme-Amazon_EC2_NVMe_Instance_Storage_$s
done
mkdir -p /tmp/efa/DEBIAN /opt/amazon/ofi-nccl/bin /opt/amazon/ofi-nccl/lib
printf 'Package: efa\nVersion: 2.10.0-1\nArchitecture: all\nMaintainer: VM tier <vm@localhost>\nDescription: stand-in for the EFA package\n' > /tmp/efa/DEBIAN/control
dpkg-deb -b /tmp/efa /tmp/efa.deb >/dev/null && dpkg -i /tmp/efa.deb >/dev/null || fail "the efa stand-in package"
printf '#!/bin/sh\n[ "$1 $2" = "status efa" ] && echo "efa/2.10.0, %s, x86_64: installed"\n' "$kernel" > /usr/local/sbin/dkms
chmod 755 /usr/local/sbin/dkms
mkdir -p /var/lib/kubelet /var/lib/containerd
echo "$marker" > /var/lib/kubelet/marker
echo db > /var/lib/containerd/meta.db

# A disk with a file system on it (the real blkid finds it): refused, nothing changed.
mkfs.ext4 -q -L not-ours /dev/nvme1n1
snapshot /etc /var/lib/skyhook-packages > /tmp/before-refusal
setup apply --env NVIDIA_KERNEL=$kernel > /tmp/refused 2>&1 || true
keep /tmp/refused
awk '/ ms  / && $1 == "apply" && $3 == "2"' /tmp/refused | grep -q . || fail "apply over an ext4 disk did not exit 2"
grep -q "/dev/nvme1n1 (nvme-Amazon_EC2_NVMe_Instance_Storage_AWS2222) holds a ext4 file system" /tmp/refused \
    || fail "the refusal does not name the disk"
expect_same_snapshot "after the refusal" /tmp/before-refusal /etc /var/lib/skyhook-packages
wipefs -q -a /dev/nvme1n1

setup --lifecycle --until-interrupt --env NVIDIA_KERNEL=$kernel
expect_eq "the boot unit" "$(systemctl is-enabled $unit)" enabled
[ -z "$(mount_of $array)" ] || fail "$array mounted before the reboot"
for d in /dev/nvme0n1 /dev/nvme1n1; do
    ! blkid -p "$d" >/dev/null 2>&1 || fail "$d carries a signature before the reboot"
done
"#;

/// Boot 2: the array built at boot.
const BUILT: &str = r#"
expect_array built
setup post-interrupt --env NVIDIA_KERNEL=$kernel
echo "written on the array" > /var/lib/kubelet/on-array
"#;

/// Boot 3: the same disks, the same array.
const AGAIN: &str = r#"
expect_array again
expect_eq "the file written on the array" "$(cat /var/lib/kubelet/on-array)" "written on the array"
setup post-interrupt --env NVIDIA_KERNEL=$kernel
"#;

/// Boot 4: new blank disks; then uninstall.
const NEW_DISKS: &str = r#"
for s in AWS3333 AWS4444; do
    wait_until "the instance-store name of $s" 30 test -e /dev/disk/by-id/nvme-Amazon_EC2_NVMe_Instance_Storage_$s
done
expect_array new-disks
[ ! -e /var/lib/kubelet/on-array ] || fail "the old array's file is on the new one"
setup post-interrupt --env NVIDIA_KERNEL=$kernel
setup uninstall
expect_gone /etc/systemd/system/$unit /var/lib/skyhook-packages/nvidia-setup-instance-storage
expect_eq "the array after uninstall" "$(mount_of $array | cut -d' ' -f3)" xfs
"#;

#[test]
#[ignore = "VM tier: needs root, the Debian mirror and minutes; cargo test -p skyhook-pkg --test vm -- --ignored"]
fn nvidia_setup() {
    let mut vm = Vm::new("nvidia-setup");
    vm.add_nvme("AWS1111", DISK_MIB);
    vm.add_nvme("AWS2222", DISK_MIB);
    vm.define(DEFINES)
        .package("setup", "nvidia-setup", &[("service", "eks"), ("accelerator", "h100")]);

    let install = vm.boot("install", INSTALL);
    install.expect_running();
    install
        .script
        .success()
        .expect_step("apply", 0)
        .expect_output("[interrupt] stopping here; the package said its change needs: {type: reboot}");

    let built = vm.boot("built", BUILT);
    built.expect_running();
    built.script.success().expect_step("post-interrupt-check", 0);
    assert!(
        built.file("unit-log-built").contains("created RAID0"),
        "{}",
        built.file("unit-log-built")
    );
    assert!(built.file("unit-log-built").contains("made an XFS file system"));

    let again = vm.boot("again", AGAIN);
    again.expect_running();
    again.script.success().expect_step("post-interrupt-check", 0);
    let log = again.file("unit-log-again");
    assert!(!log.contains("created RAID0") && !log.contains("made an XFS"), "{log}");

    vm.replace_nvme(0, "AWS3333", DISK_MIB);
    vm.replace_nvme(1, "AWS4444", DISK_MIB);
    let new_disks = vm.boot("new-disks", NEW_DISKS);
    new_disks.expect_running();
    new_disks
        .script
        .success()
        .expect_step("post-interrupt-check", 0)
        .expect_step("uninstall", 0)
        .expect_step("uninstall-check", 0);
    let log = new_disks.file("unit-log-new-disks");
    assert!(
        log.contains("created RAID0") && log.contains("made an XFS file system"),
        "{log}"
    );
}

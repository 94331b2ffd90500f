// SPDX-License-Identifier: Apache-2.0
//! The nvidia-setup scenario: the README's two EKS entries on one machine, six boots:
//! the kernel entry installs a second kernel that GRUB then boots, and the full
//! entry builds the RAID0 array over NVMe instance storage, with the real apt, dpkg,
//! update-grub, grub-set-default, mdadm, mkfs.xfs, mount and systemd. On x86_64
//! ([`nvidia_setup`]) the entries are eks-h100's; on arm64
//! ([`nvidia_setup_arm64`]) the kernel entry is eks-gb200's and the full entry
//! eks-gb300's, and the second kernel is the 64k-page flavour those want.
//!
//! The machine has two blank NVMe disks (QEMU's NVMe controller with instance-store
//! serials). A udev rule of the scenario gives them the names EC2 gives its instance
//! storage (`/dev/disk/by-id/nvme-Amazon_EC2_NVMe_Instance_Storage_<serial>`, from the
//! model string QEMU's controller does not have); EFA is what the AMI would carry (a
//! dpkg package `efa`, a stand-in `dkms` listing its module: the guest builds none).
//!
//! The second kernel on x86_64 is a real Debian one from the mirror: an older ABI of
//! the guest's own cloud flavour where the mirror has one (the security archive keeps
//! the previous ABIs; GRUB's first entry stays the guest's own kernel, so only the
//! saved default can boot it), else the generic flavour of the running ABI. On arm64
//! it is the tier's build of Debian's cloud kernel with 64 KiB pages
//! ([`crate::kernel64k`]: Debian builds none; its release sorts below the guest's own
//! kernel, so GRUB's first entry stays the guest's there too); `NVIDIA_KERNEL` names
//! it without its `-64k`, which the package adds on arm64. Debian splits no
//! `linux-modules-*` packages from the image and its headers pull in a compiler, so
//! a local repository in the guest holds stand-ins for `linux-headers-`,
//! `linux-modules-` and `linux-modules-extra-<release>` (empty packages under those
//! names, as apt resolves Ubuntu's); the kernel, its modules (nvme, raid0, xfs) and
//! its initrd are the real package's. The guest's apt leaves recommendations out: the
//! kernel's firmware would rebuild the running kernel's initrd as well, minutes under
//! TCG.
//!
//! 1. The kernel entry (`NVIDIA_SETUP_INSTALL_KERNEL=true`, `NVIDIA_KERNEL` the
//!    second kernel) installs it and makes it the saved default; it asks for a reboot.
//! 2. GRUB boots the second kernel (`uname -r`, and its page size: 64 KiB on arm64);
//!    the kernel entry's post-interrupt-check passes. With an ext4 file system on one
//!    disk, the full entry's apply refuses (exit 2, naming it) and changes nothing;
//!    with the disk wiped, apply (the lifecycle up to the interrupt) enables the boot unit and asks
//!    for a reboot; the disks are untouched.
//! 3. After the reboot the unit has created the array over both disks, formatted and
//!    mounted it, and bound kubelet's, containerd's and the pod logs' directories onto
//!    it (their content copied); post-interrupt-check passes; a file is written
//!    through the bind.
//! 4. A plain reboot: the array is found again (udev's own assembly, or the unit's),
//!    nothing formatted, the file is still there.
//! 5. The disks replaced by new blank ones under new serials (a stop and start): the
//!    unit makes the array again, the directories are copied again from the root disk
//!    (so the file of boot 3 is gone), post-interrupt-check passes; uninstall of the
//!    full entry removes the unit and leaves the array mounted; uninstall of the
//!    kernel entry gives GRUB its default back (the kernel stays installed).
//! 6. GRUB boots the guest's own kernel again (4 KiB pages).

use std::time::Duration;

use crate::arch::Arch;
use crate::vm::{self, Vm};

/// The size of each NVMe disk: mkfs.xfs wants 300 MB or more for the array.
const DISK_MIB: u64 = 256;

/// Shared by every boot.
const DEFINES: &str = r#"
kernel=$(uname -r)
# The guest's own kernel, the second one, and the second as NVIDIA_KERNEL names it
# (without the -64k the package adds on arm64), as boot 1 chose them.
kernels=/var/lib/skyhook-vm-kernels
read -r original target wanted < $kernels 2>/dev/null || true
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

/// Boot 1: the kernel entry installs the second kernel as the saved default.
const KERNEL: &str = r#"
# The kernel's recommendations (firmware) would rebuild the running kernel's initrd
# too: minutes of TCG that prove nothing here.
echo 'APT::Install-Recommends "false";' > /etc/apt/apt.conf.d/99skyhook-vm-no-recommends
apt-get update -q > /tmp/apt-update 2>&1 || { cat /tmp/apt-update; fail "apt-get update in the guest"; }
repo=/srv/vm-kernel-parts
mkdir -p $repo
if [ -e "$FILES/kernel.deb" ]; then
    # arm64: the tier's 64k-page kernel, served from the local repository.
    second=$(dpkg-deb -f "$FILES/kernel.deb" Package)
    second=${second#linux-image-}
    cp "$FILES/kernel.deb" $repo/linux-image.deb
else
    # The newest ABI of this flavour older than the running one that the mirror
    # has, else the generic flavour of the running ABI.
    abi=$(echo "$kernel" | cut -d- -f1-2)
    flavour=${kernel#"$abi"-}
    second=$kernel
    for p in $(apt-cache pkgnames linux-image- | sed -n "s/^linux-image-\([0-9.]*-[0-9]*-$flavour\)\$/\1/p" | sort -V); do
        [ "$(printf '%s\n%s\n' "$p" "$kernel" | sort -V | head -1)" = "$p" ] && [ "$p" != "$kernel" ] || continue
        apt-cache show --no-all-versions "linux-image-$p" >/dev/null 2>&1 && second=$p
    done
    [ "$second" != "$kernel" ] || second=$abi-amd64
fi
wanted=${second%-64k}
echo "$kernel $second $wanted" > $kernels
echo "guest: the second kernel is $second (running $kernel; NVIDIA_KERNEL=$wanted)"

# The parts Debian does not split out of its kernel package, as empty stand-ins.
for p in linux-headers linux-modules linux-modules-extra; do
    mkdir -p /tmp/$p/DEBIAN
    printf 'Package: %s-%s\nVersion: 1:0vm\nArchitecture: all\nMaintainer: VM tier <vm@localhost>\nDescription: stand-in for Ubuntu'"'"'s %s package\n' \
        "$p" "$second" "$p" > /tmp/$p/DEBIAN/control
    dpkg-deb -b /tmp/$p "$repo/$p.deb" >/dev/null
done
for f in "$repo"/*.deb; do
    dpkg-deb -f "$f"
    printf 'Filename: ./%s\nSize: %s\nSHA256: %s\n\n' "$(basename "$f")" "$(stat -c %s "$f")" "$(sha256sum < "$f" | cut -d' ' -f1)"
done > $repo/Packages
echo "deb [trusted=yes] file:$repo ./" > /etc/apt/sources.list.d/vm-kernel-parts.list

# What uninstall must give back.
cp /etc/default/grub /var/lib/skyhook-vm-default-grub
grub-editenv /boot/grub/grubenv list > /var/lib/skyhook-vm-grubenv
setup_kernel --lifecycle --until-interrupt --env NVIDIA_SETUP_INSTALL_KERNEL=true --env NVIDIA_KERNEL=$wanted
for p in linux-image linux-headers linux-modules linux-modules-extra; do
    expect_eq "the package $p-$second" "$(dpkg_status $p-$second)" installed
done
grub-editenv /boot/grub/grubenv list > grubenv; keep grubenv grubenv-kernel
grep -q "^saved_entry=.*gnulinux-$second-advanced-" grubenv || fail "no saved entry for $second: $(cat grubenv)"
# GRUB's first entry is still the running kernel: only the saved default boots the second.
first=$(awk '$1 == "linux" { sub(".*/vmlinuz-", "", $2); print $2; exit }' /boot/grub/grub.cfg)
expect_eq "the kernel of GRUB's first entry" "$first" "$kernel"
"#;

/// Boot 2: the second kernel runs; the full entry is refused over a disk with a
/// file system, then applied up to the interrupt.
const INSTALL: &str = r#"
expect_eq "the running kernel" "$kernel" "$target"
expect_eq "the page size of $kernel" "$(getconf PAGESIZE)" "$second_page_size"
setup_kernel post-interrupt --env NVIDIA_SETUP_INSTALL_KERNEL=true --env NVIDIA_KERNEL=$wanted
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
printf '#!/bin/sh\n[ "$1 $2" = "status efa" ] && echo "efa/2.10.0, %s, %s: installed"\n' "$kernel" "$(uname -m)" > /usr/local/sbin/dkms
chmod 755 /usr/local/sbin/dkms
mkdir -p /var/lib/kubelet /var/lib/containerd
echo "$marker" > /var/lib/kubelet/marker
echo db > /var/lib/containerd/meta.db

# A disk with a file system on it (the real blkid finds it): refused, nothing changed.
mkfs.ext4 -q -L not-ours /dev/nvme1n1
snapshot /etc /var/lib/skyhook-packages > /tmp/before-refusal
setup apply --env NVIDIA_KERNEL=$wanted > /tmp/refused 2>&1 || true
keep /tmp/refused
awk '/ ms  / && $1 == "apply" && $3 == "2"' /tmp/refused | grep -q . || fail "apply over an ext4 disk did not exit 2"
grep -q "/dev/nvme1n1 (nvme-Amazon_EC2_NVMe_Instance_Storage_AWS2222) holds a ext4 file system" /tmp/refused \
    || fail "the refusal does not name the disk"
expect_same_snapshot "after the refusal" /tmp/before-refusal /etc /var/lib/skyhook-packages
wipefs -q -a /dev/nvme1n1

setup --lifecycle --until-interrupt --env NVIDIA_KERNEL=$wanted
expect_eq "the boot unit" "$(systemctl is-enabled $unit)" enabled
[ -z "$(mount_of $array)" ] || fail "$array mounted before the reboot"
for d in /dev/nvme0n1 /dev/nvme1n1; do
    ! blkid -p "$d" >/dev/null 2>&1 || fail "$d carries a signature before the reboot"
done
"#;

/// Boot 3: the array built at boot.
const BUILT: &str = r#"
expect_array built
setup post-interrupt --env NVIDIA_KERNEL=$wanted
echo "written on the array" > /var/lib/kubelet/on-array
"#;

/// Boot 4: the same disks, the same array.
const AGAIN: &str = r#"
expect_array again
expect_eq "the file written on the array" "$(cat /var/lib/kubelet/on-array)" "written on the array"
setup post-interrupt --env NVIDIA_KERNEL=$wanted
"#;

/// Boot 5: new blank disks; then both entries uninstalled.
const NEW_DISKS: &str = r#"
for s in AWS3333 AWS4444; do
    wait_until "the instance-store name of $s" 30 test -e /dev/disk/by-id/nvme-Amazon_EC2_NVMe_Instance_Storage_$s
done
expect_array new-disks
[ ! -e /var/lib/kubelet/on-array ] || fail "the old array's file is on the new one"
setup post-interrupt --env NVIDIA_KERNEL=$wanted
setup uninstall
expect_gone /etc/systemd/system/$unit /var/lib/skyhook-packages/nvidia-setup-instance-storage
expect_eq "the array after uninstall" "$(mount_of $array | cut -d' ' -f3)" xfs
setup_kernel uninstall --env NVIDIA_SETUP_INSTALL_KERNEL=true --env NVIDIA_KERNEL=$wanted
cmp /etc/default/grub /var/lib/skyhook-vm-default-grub || fail "/etc/default/grub is not as before"
grub-editenv /boot/grub/grubenv list > grubenv; keep grubenv grubenv-uninstalled
cmp grubenv /var/lib/skyhook-vm-grubenv || fail "grubenv is not as before: $(cat grubenv)"
expect_eq "the kernel package after uninstall" "$(dpkg_status linux-image-$target)" installed
"#;

/// Boot 6: GRUB's default given back boots the guest's own kernel.
const GIVEN_BACK: &str = r#"
expect_eq "the running kernel" "$kernel" "$original"
expect_eq "the page size of $kernel" "$(getconf PAGESIZE)" 4096
"#;

#[test]
#[ignore = "VM tier: needs root, the Debian mirror and minutes; cargo test -p skyhook-pkg --test vm -- --ignored"]
fn nvidia_setup() {
    let mut vm = Vm::new("nvidia-setup");
    vm.define("second_page_size=4096");
    let eks = [("service", "eks"), ("accelerator", "h100")];
    scenario(vm, &eks, &eks);
}

/// The arm64 machine: eks-gb200's kernel entry installs the 64k-page kernel, and
/// eks-gb300's full entry runs on it. `.ci/run vm_arm64`.
#[test]
#[ignore = "VM tier: needs root, the Debian mirror and minutes; cargo test -p skyhook-pkg --test vm -- --ignored"]
fn nvidia_setup_arm64() {
    let mut vm = Vm::new_on("nvidia-setup-arm64", Arch::Arm64);
    vm.add_file("kernel.deb", &vm::kernel_64k())
        .define("second_page_size=65536");
    scenario(
        vm,
        &[("service", "eks"), ("accelerator", "gb200")],
        &[("service", "eks"), ("accelerator", "gb300")],
    );
}

/// The six boots, with the kernel entry's configMap `kernel_entry` and the full
/// entry's `full_entry`.
fn scenario(mut vm: Vm, kernel_entry: &[(&str, &str)], full_entry: &[(&str, &str)]) {
    vm.add_nvme("AWS1111", DISK_MIB);
    vm.add_nvme("AWS2222", DISK_MIB);
    vm.timeout(Duration::from_secs(600)); // apt and an initrd build under TCG
    vm.define(DEFINES)
        .package("setup_kernel", "nvidia-setup", kernel_entry)
        .package("setup", "nvidia-setup", full_entry);

    let kernel = vm.boot("kernel", KERNEL);
    kernel.expect_running();
    kernel
        .script
        .success()
        .expect_step("apply", 0)
        .expect_output("[interrupt] stopping here; the package said its change needs: {type: reboot}");

    let install = vm.boot("install", INSTALL);
    install.expect_running();
    install
        .script
        .success()
        .expect_step("post-interrupt-check", 0)
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

    let given_back = vm.boot("given-back", GIVEN_BACK);
    given_back.expect_running();
    given_back.script.success();
}

// SPDX-License-Identifier: Apache-2.0
//! A stand-in for `grub-probe` in a root without block devices (a chroot, an image
//! being built): the one GRUB tool that asks the kernel which disk holds a path.
//! `update-grub` (grub-mkconfig and its scripts) asks it for the root's device, file
//! system, UUID, partition map and GRUB drive; the stand-in answers for a root file
//! system on a partition of a virtio disk `/dev/vda` behind an msdos partition table,
//! as the real `grub-probe --target=…` of GRUB 2.06 (Debian bookworm's grub2-common)
//! answers in the VM tier's guests: one answer per target on standard output, ext4
//! named `ext2` as GRUB's driver is, nothing for `abstraction` (no LVM, RAID or
//! crypto) nor for `compatibility_hint` and `hints_string` (a virtio disk has no BIOS
//! drive GRUB could name: the generated grub.cfg finds the root by its UUID alone,
//! without a `set root=` line), exit 1 without a target. Made so, the grub.cfg that
//! `update-grub` writes through the stand-in is the one it writes in the booted guest.

/// The UUID of the root file system the stand-in reports: the chroot tier's nodes and
/// the VM tier's images (whose root file system is made with it) share it.
pub const ROOT_UUID: &str = "5c1e7f00-5ca1-4e5e-9a11-5ce4a7105000";

/// The stand-in's script, for a root on partition `partition` (1-based) of `/dev/vda`.
pub fn script(partition: u32) -> String {
    format!(
        r#"#!/bin/sh
# A stand-in for grub-probe (skyhook-pkg tests): the disk a real node would have,
# for a root without block devices.
for a in "$@"; do case "$a" in
  --target=device) echo /dev/vda{partition}; exit 0;;
  --target=fs) echo ext2; exit 0;;
  --target=fs_uuid) echo {ROOT_UUID}; exit 0;;
  --target=partmap) echo msdos; exit 0;;
  --target=abstraction) exit 0;;
  --target=drive) echo '(hd0,msdos{partition})'; exit 0;;
  --target=*) exit 0;;
esac; done
exit 1
"#
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn probe(partition: u32, target: &str) -> (i32, String) {
        let out = Command::new("sh")
            .args(["-c", &script(partition), "grub-probe", target, "/"])
            .output()
            .expect("sh runs");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    }

    #[test]
    fn answers_each_target_for_the_partition_it_was_made_for() {
        assert_eq!(probe(2, "--target=device"), (0, "/dev/vda2\n".into()));
        assert_eq!(probe(2, "--target=drive"), (0, "(hd0,msdos2)\n".into()));
        assert_eq!(probe(1, "--target=fs"), (0, "ext2\n".into()));
        assert_eq!(probe(1, "--target=fs_uuid"), (0, format!("{ROOT_UUID}\n")));
        assert_eq!(probe(1, "--target=abstraction"), (0, String::new()));
        assert_eq!(probe(1, "--target=compatibility_hint"), (0, String::new()));
        assert_eq!(probe(1, "--help").0, 1);
    }
}

// SPDX-License-Identifier: Apache-2.0
//! Disk images without loop devices or mounts: `mkfs.ext4 -d` fills a file system
//! from a directory (at an offset, behind a hand-written MBR, for a bootable disk),
//! and `debugfs` reads files back out of an image.

use std::fs::{self, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::path::Path;
use std::process::Command;

use crate::cache;

/// Where the first partition starts: 1 MiB, room for GRUB's core image before it
/// (BIOS boot).
pub const PARTITION_OFFSET: u64 = 1 << 20;

/// The MBR partition type of an EFI system partition.
const TYPE_ESP: u8 = 0xef;
/// The MBR partition type of a Linux file system.
const TYPE_LINUX: u8 = 0x83;

/// Where the root file system starts on a disk with an EFI system partition of
/// `esp_bytes` (or none).
pub fn root_offset(esp_bytes: Option<u64>) -> u64 {
    PARTITION_OFFSET + esp_bytes.unwrap_or(0)
}

/// An MBR for a disk of `disk_bytes`: with `esp_bytes`, an EFI system partition at
/// [`PARTITION_OFFSET`] then the Linux partition to the end of the disk; without, one
/// bootable Linux partition from [`PARTITION_OFFSET`].
pub fn mbr(disk_bytes: u64, esp_bytes: Option<u64>) -> [u8; 512] {
    let mut sector = [0u8; 512];
    sector[440..444].copy_from_slice(&0x5348_564du32.to_le_bytes()); // disk signature "MVHS"
    let sectors = |bytes: u64| (bytes / 512) as u32;
    let root = sectors(root_offset(esp_bytes));
    let mut entries = Vec::new();
    if let Some(esp) = esp_bytes {
        entries.push((0x00, TYPE_ESP, sectors(PARTITION_OFFSET), sectors(esp)));
        entries.push((0x00, TYPE_LINUX, root, sectors(disk_bytes) - root));
    } else {
        entries.push((0x80, TYPE_LINUX, root, sectors(disk_bytes) - root));
    }
    for (i, (flag, kind, start, count)) in entries.into_iter().enumerate() {
        let entry = &mut sector[446 + 16 * i..462 + 16 * i];
        entry[0] = flag; // 0x80: bootable
        entry[1..4].copy_from_slice(&[0xfe, 0xff, 0xff]); // CHS: beyond 8 GiB, use the LBA fields
        entry[4] = kind;
        entry[5..8].copy_from_slice(&[0xfe, 0xff, 0xff]);
        entry[8..12].copy_from_slice(&start.to_le_bytes());
        entry[12..16].copy_from_slice(&count.to_le_bytes());
    }
    sector[510] = 0x55;
    sector[511] = 0xaa;
    sector
}

/// A bootable raw disk of `bytes` (sparse): the MBR ([`mbr`]), an empty EFI system
/// partition when `esp_bytes` is given (the guest formats it), then an ext4 file
/// system with `uuid` and label `root` made from the tree `root`.
pub fn make_boot_disk(path: &Path, bytes: u64, esp_bytes: Option<u64>, root: &Path, uuid: &str) -> Result<(), String> {
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    file.set_len(bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    file.seek(SeekFrom::Start(0))
        .and_then(|_| file.write_all(&mbr(bytes, esp_bytes)))
        .map_err(|e| format!("{}: writing the MBR: {e}", path.display()))?;
    drop(file);
    let offset = root_offset(esp_bytes);
    let kib = (bytes - offset) / 1024;
    cache::run(
        Command::new(cache::need("mkfs.ext4", "e2fsprogs")?)
            .args(["-q", "-F", "-t", "ext4", "-L", "root", "-U", uuid])
            .arg("-E")
            .arg(format!("offset={offset}"))
            .arg("-d")
            .arg(root)
            .arg(path)
            .arg(format!("{kib}k")),
    )
    .map(drop)
}

/// A data disk (no partition table, ext4 without a journal so that `debugfs` sees
/// everything the guest wrote) of `mib` MiB labelled `label`, made from `tree`.
pub fn make_data_disk(path: &Path, mib: u64, label: &str, tree: &Path) -> Result<(), String> {
    cache::remove(path)?;
    cache::run(
        Command::new(cache::need("mkfs.ext4", "e2fsprogs")?)
            .args(["-q", "-F", "-t", "ext4", "-O", "^has_journal", "-L", label, "-d"])
            .arg(tree)
            .arg(path)
            .arg(format!("{mib}M")),
    )
    .map(drop)
}

/// Copies the directory `dir` of the file system in `image` (offset 0) into `dest`
/// (which must exist; `dest/<last component of dir>` is created).
pub fn read_dir(image: &Path, dir: &str, dest: &Path) -> Result<(), String> {
    fs::create_dir_all(dest).map_err(|e| format!("{}: {e}", dest.display()))?;
    cache::run(
        Command::new(cache::need("debugfs", "e2fsprogs")?)
            .arg("-R")
            .arg(format!("rdump {dir} {}", dest.display()))
            .arg(image),
    )
    .map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mbr_has_one_bootable_linux_partition_at_1_mib() {
        let m = mbr(4 << 30, None);
        assert_eq!(&m[510..], &[0x55, 0xaa]);
        assert_eq!(m[446], 0x80);
        assert_eq!(m[450], 0x83);
        assert_eq!(u32::from_le_bytes(m[454..458].try_into().unwrap()), 2048);
        assert_eq!(u32::from_le_bytes(m[458..462].try_into().unwrap()), (4u32 << 21) - 2048);
        assert!(m[462..510].iter().all(|b| *b == 0), "one partition only");
    }

    #[test]
    fn an_efi_disk_has_the_esp_at_1_mib_then_the_root() {
        let m = mbr(4 << 30, Some(64 << 20));
        let field = |at: usize| u32::from_le_bytes(m[at..at + 4].try_into().unwrap());
        assert_eq!((m[446], m[450], field(454), field(458)), (0, 0xef, 2048, 64 << 11));
        let root = 2048 + (64 << 11);
        assert_eq!(
            (m[462], m[466], field(470), field(474)),
            (0, 0x83, root, (4u32 << 21) - root)
        );
        assert_eq!(root_offset(Some(64 << 20)), u64::from(root) * 512);
        assert!(m[478..510].iter().all(|b| *b == 0), "two partitions only");
    }
}

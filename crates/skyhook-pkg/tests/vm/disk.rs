// SPDX-License-Identifier: Apache-2.0
//! Disk images without loop devices or mounts: `mkfs.ext4 -d` fills a file system
//! from a directory (at an offset, behind a hand-written MBR, for a bootable disk),
//! and `debugfs` reads files back out of an image.

use std::fs::{self, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::path::Path;
use std::process::Command;

use crate::cache;

/// Where the root partition starts: 1 MiB, room for GRUB's core image before it.
pub const PARTITION_OFFSET: u64 = 1 << 20;

/// An MBR with one bootable Linux partition from [`PARTITION_OFFSET`] to the end of a
/// disk of `disk_bytes`.
pub fn mbr(disk_bytes: u64) -> [u8; 512] {
    let mut sector = [0u8; 512];
    sector[440..444].copy_from_slice(&0x5348_564du32.to_le_bytes()); // disk signature "MVHS"
    let start = (PARTITION_OFFSET / 512) as u32;
    let count = (disk_bytes / 512) as u32 - start;
    let entry = &mut sector[446..462];
    entry[0] = 0x80; // bootable
    entry[1..4].copy_from_slice(&[0xfe, 0xff, 0xff]); // CHS: beyond 8 GiB, use the LBA fields
    entry[4] = 0x83; // Linux
    entry[5..8].copy_from_slice(&[0xfe, 0xff, 0xff]);
    entry[8..12].copy_from_slice(&start.to_le_bytes());
    entry[12..16].copy_from_slice(&count.to_le_bytes());
    sector[510] = 0x55;
    sector[511] = 0xaa;
    sector
}

/// A bootable raw disk of `bytes` (sparse): the MBR, then an ext4 file system with
/// `uuid` and label `root` made from the tree `root`.
pub fn make_boot_disk(path: &Path, bytes: u64, root: &Path, uuid: &str) -> Result<(), String> {
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    file.set_len(bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    file.seek(SeekFrom::Start(0))
        .and_then(|_| file.write_all(&mbr(bytes)))
        .map_err(|e| format!("{}: writing the MBR: {e}", path.display()))?;
    drop(file);
    let kib = (bytes - PARTITION_OFFSET) / 1024;
    cache::run(
        Command::new(cache::need("mkfs.ext4", "e2fsprogs")?)
            .args(["-q", "-F", "-t", "ext4", "-L", "root", "-U", uuid])
            .arg("-E")
            .arg(format!("offset={PARTITION_OFFSET}"))
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
        let m = mbr(4 << 30);
        assert_eq!(&m[510..], &[0x55, 0xaa]);
        assert_eq!(m[446], 0x80);
        assert_eq!(m[450], 0x83);
        assert_eq!(u32::from_le_bytes(m[454..458].try_into().unwrap()), 2048);
        assert_eq!(u32::from_le_bytes(m[458..462].try_into().unwrap()), (4u32 << 21) - 2048);
        assert!(m[462..510].iter().all(|b| *b == 0), "one partition only");
    }
}

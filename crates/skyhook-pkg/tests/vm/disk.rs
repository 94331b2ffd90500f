// SPDX-License-Identifier: Apache-2.0
//! Disk images without loop devices or mounts: `mkfs.ext4 -d` fills a file system
//! from a directory (at an offset, behind a hand-written MBR and the boot loader's
//! first stage, for a bootable disk), and `debugfs` reads files back out of an image.

use std::fs::{self, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
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

/// What the firmware starts on a boot disk: GRUB's first stage, made in the image's
/// root by GRUB's own tools (`image.rs`), written here where the firmware finds it.
pub enum BootCode {
    /// BIOS: GRUB's `boot.img` (one sector) and `core.img`, embedded as
    /// [`embed_bios_grub`] describes.
    Bios {
        /// `/usr/lib/grub/i386-pc/boot.img`.
        boot_img: Vec<u8>,
        /// The `grub-mkimage -O i386-pc` image (starts with diskboot.img).
        core_img: Vec<u8>,
    },
    /// UEFI: an EFI system partition of `bytes` at [`PARTITION_OFFSET`], its content
    /// the FAT file system image `esp`.
    Uefi {
        /// The FAT image (`mkfs.vfat -C`, filled with `mcopy`).
        esp: PathBuf,
        /// The partition's size (the image's, at most).
        bytes: u64,
    },
}

impl BootCode {
    /// The EFI system partition's size, for a UEFI disk.
    fn esp_bytes(&self) -> Option<u64> {
        match self {
            BootCode::Bios { .. } => None,
            BootCode::Uefi { bytes, .. } => Some(*bytes),
        }
    }
}

/// Offsets in GRUB 2.06's i386-pc images (include/grub/i386/pc/boot.h): the BIOS
/// parameter block `boot.img` keeps from the disk, the partition table and disk
/// signature likewise, the jump over the boot-drive check, the boot drive, and the
/// sector of `core.img` it loads.
const BPB: std::ops::Range<usize> = 0x03..0x5a;
const KERNEL_SECTOR: usize = 0x5c;
const BOOT_DRIVE: usize = 0x64;
const DRIVE_CHECK: usize = 0x66;
const PARTITION_TABLE: std::ops::Range<usize> = 0x1b8..0x1fe;
/// diskboot.img's first blocklist: the last 12 bytes of `core.img`'s first sector
/// (start sector u64, sector count u16, load segment u16, little-endian); the one
/// before it, the list's terminator.
const FIRST_BLOCKLIST: usize = 512 - 12;
/// Where `core.img`'s second sector is loaded: segment 0x800 (GRUB's kernel
/// segment) plus one sector.
const CORE_SEGMENT: u16 = 0x820;

/// GRUB for BIOS on a disk whose first sector is `mbr`: the new first sector and the
/// `core.img` to write from sector 1, as `grub-bios-setup --no-rs-codes` (GRUB 2.06,
/// util/setup.c) embeds them in the gap before an msdos partition on a hard disk:
/// `boot.img` with the disk's BIOS parameter block, partition table and disk
/// signature, the boot-drive check's jump replaced by two NOPs, boot drive 0xff (the
/// one the BIOS passes), `core.img` at sector 1; `core.img` padded to whole sectors,
/// its first blocklist naming the rest (sector 2 on, segment 0x820), then the
/// terminator. Fails when `core.img` does not fit before `first_partition` (a sector
/// number).
pub fn embed_bios_grub(
    mbr: &[u8; 512],
    boot_img: &[u8],
    core_img: &[u8],
    first_partition: u64,
) -> Result<([u8; 512], Vec<u8>), String> {
    let mut boot: [u8; 512] = boot_img
        .try_into()
        .map_err(|_| format!("boot.img is {} bytes, not one sector", boot_img.len()))?;
    let sectors = core_img.len().div_ceil(512);
    if sectors < 2 || sectors as u64 >= first_partition || sectors > usize::from(u16::MAX) {
        return Err(format!(
            "core.img of {} bytes does not fit in the {} sectors before the first partition",
            core_img.len(),
            first_partition.saturating_sub(1)
        ));
    }
    boot[BPB].copy_from_slice(&mbr[BPB]);
    boot[PARTITION_TABLE].copy_from_slice(&mbr[PARTITION_TABLE]);
    boot[DRIVE_CHECK..DRIVE_CHECK + 2].copy_from_slice(&[0x90, 0x90]);
    boot[BOOT_DRIVE] = 0xff;
    boot[KERNEL_SECTOR..KERNEL_SECTOR + 8].copy_from_slice(&1u64.to_le_bytes());
    let mut core = core_img.to_vec();
    core.resize(sectors * 512, 0);
    let rest = u16::try_from(sectors - 1).expect("checked above");
    let block = &mut core[FIRST_BLOCKLIST..512];
    block[..8].copy_from_slice(&2u64.to_le_bytes());
    block[8..10].copy_from_slice(&rest.to_le_bytes());
    block[10..12].copy_from_slice(&CORE_SEGMENT.to_le_bytes());
    core[FIRST_BLOCKLIST - 12..FIRST_BLOCKLIST].fill(0);
    Ok((boot, core))
}

/// A bootable raw disk of `bytes` (sparse): the MBR ([`mbr`]) and the boot code
/// (`boot`), then an ext4 file system with `uuid` and label `root` made from the tree
/// `root`.
pub fn make_boot_disk(path: &Path, bytes: u64, boot: &BootCode, root: &Path, uuid: &str) -> Result<(), String> {
    let esp_bytes = boot.esp_bytes();
    let offset = root_offset(esp_bytes);
    let table = mbr(bytes, esp_bytes);
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    file.set_len(bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut write_at = |at: u64, data: &[u8], what: &str| {
        file.seek(SeekFrom::Start(at))
            .and_then(|_| file.write_all(data))
            .map_err(|e| format!("{}: writing {what}: {e}", path.display()))
    };
    match boot {
        BootCode::Bios { boot_img, core_img } => {
            let (first, core) = embed_bios_grub(&table, boot_img, core_img, offset / 512)?;
            write_at(0, &first, "GRUB's boot.img and the MBR")?;
            write_at(512, &core, "GRUB's core.img")?;
        }
        BootCode::Uefi { esp, bytes } => {
            let fat = fs::read(esp).map_err(|e| format!("{}: {e}", esp.display()))?;
            if fat.len() as u64 > *bytes {
                return Err(format!(
                    "{} is larger than the {bytes}-byte EFI system partition",
                    esp.display()
                ));
            }
            write_at(0, &table, "the MBR")?;
            write_at(PARTITION_OFFSET, &fat, "the EFI system partition")?;
        }
    }
    drop(file);
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

    #[test]
    fn grub_is_embedded_as_grub_bios_setup_does() {
        let table = mbr(4 << 30, None);
        let boot_img: Vec<u8> = (0..512).map(|i| (i % 251) as u8).collect();
        let core_img: Vec<u8> = vec![0xab; 3 * 512 + 100];
        let (first, core) = embed_bios_grub(&table, &boot_img, &core_img, 2048).unwrap();
        // The disk's signature and partition table survive; the code and the boot
        // signature (0x55aa, which every real boot.img ends with) are boot.img's.
        assert_eq!(&first[0x1b8..0x1fe], &table[0x1b8..0x1fe]);
        assert_eq!(&first[0x1fe..], &boot_img[0x1fe..]);
        assert_eq!(&first[..3], &boot_img[..3]);
        assert_eq!(&first[0x03..0x5a], &table[0x03..0x5a]);
        assert_eq!(&first[0x66..0x68], &[0x90, 0x90]);
        assert_eq!(first[0x64], 0xff);
        assert_eq!(u64::from_le_bytes(first[0x5c..0x64].try_into().unwrap()), 1);
        assert_eq!(&first[0x68..0x1b8], &boot_img[0x68..0x1b8]);
        // core.img: padded to four sectors, the first blocklist names sectors 2..5.
        assert_eq!(core.len(), 4 * 512);
        assert_eq!(u64::from_le_bytes(core[500..508].try_into().unwrap()), 2);
        assert_eq!(u16::from_le_bytes(core[508..510].try_into().unwrap()), 3);
        assert_eq!(u16::from_le_bytes(core[510..512].try_into().unwrap()), 0x820);
        assert!(core[488..500].iter().all(|b| *b == 0), "the terminator");
        assert_eq!(&core[512..3 * 512 + 100], &core_img[512..]);
        assert!(core[3 * 512 + 100..].iter().all(|b| *b == 0));
    }

    #[test]
    fn a_core_image_larger_than_the_gap_is_refused() {
        let table = mbr(4 << 30, None);
        let err = embed_bios_grub(&table, &[0; 512], &vec![0; 2048 * 512], 2048).unwrap_err();
        assert!(err.contains("does not fit"), "{err}");
        assert!(embed_bios_grub(&table, &[0; 511], &[0; 4096], 2048).is_err());
    }
}

// SPDX-License-Identifier: Apache-2.0
//! What is on the NVMe instance storage: the disks EC2 exposes by model
//! (`/dev/disk/by-id/*NVMe_Instance_Storage_*`, as upstream's and the EKS AMI's
//! `setup-local-disks` find them) and, per disk, what its first blocks carry, read
//! with util-linux's low-level probe (`blkid -p -o export DEV`: `TYPE`, `PTTYPE`,
//! `LABEL`, `UUID` lines; exit 2 when it finds no signature at all).
//!
//! A disk is [`Signature::Blank`], a member of this package's array (RAID metadata
//! named [`ARRAY_NAME`], the name upstream's step and the AMI's script give theirs,
//! so an array either made is taken over), or foreign ([`Signature::foreign`]):
//! anything else, which is never written to.

use std::path::Path;

use skyhook_core::error::excerpt;
use skyhook_core::host::command::Cmd;
use skyhook_core::{Error, Host, Result};

/// Where EC2 exposes disks by model and serial.
const BY_ID: &str = "/dev/disk/by-id";
/// The marker of EC2's instance-store model string in a by-id name.
const INSTANCE_STORAGE: &str = "NVMe_Instance_Storage_";
/// The array's name in its RAID metadata (mdadm's `--name`; blkid shows it as the
/// members' `LABEL`, prefixed with the home host: `ip-10-0-0-1:kubernetes`).
pub const ARRAY_NAME: &str = "kubernetes";

/// An instance-store disk: its by-id name and the device it points to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disk {
    /// The by-id name (`nvme-Amazon_EC2_NVMe_Instance_Storage_AWS1234`).
    pub by_id: String,
    /// The device (`/dev/nvme1n1`).
    pub device: String,
}

/// What a disk's first blocks carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signature {
    /// No signature blkid knows.
    Blank,
    /// A member of the array named [`ARRAY_NAME`], with the array's UUID.
    Member {
        /// The array's UUID (blkid's `UUID` of a member).
        uuid: String,
    },
    /// A file system of this type (`xfs`).
    FileSystem(String),
    /// Anything else: a partition table, another array's metadata.
    Other(String),
}

impl Signature {
    /// What a disk carries that is not this array's, `None` for a blank disk or a member.
    pub fn foreign(&self) -> Option<String> {
        match self {
            Signature::Blank | Signature::Member { .. } => None,
            Signature::FileSystem(fs) => Some(format!("a {fs} file system")),
            Signature::Other(what) => Some(what.clone()),
        }
    }
}

/// The instance-store disks, sorted by by-id name; partitions left out.
pub fn disks(host: &Host) -> Result<Vec<Disk>> {
    let mut found = Vec::new();
    for name in host.list_dir(BY_ID)? {
        if !name.contains(INSTANCE_STORAGE) || name.contains("-part") {
            continue;
        }
        let link = Path::new(BY_ID).join(&name);
        let device = host.resolve_links(&link)?.display().to_string();
        if !is_nvme_namespace(&device) {
            return Err(Error::input(format!(
                "disks: {} points to {}, not an NVMe disk (/dev/nvmeXnY); an instance-store name that leads \
                 elsewhere is not trusted, so nothing was changed. Check the udev rules that make {BY_ID}",
                link.display(),
                excerpt(&device)
            )));
        }
        if found.iter().any(|d: &Disk| d.device == device) {
            continue;
        }
        found.push(Disk { by_id: name, device });
    }
    found.sort_by(|a, b| a.by_id.cmp(&b.by_id));
    Ok(found)
}

/// Whether `device` is a whole NVMe namespace (`/dev/nvme1n1`, not a partition).
fn is_nvme_namespace(device: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    device
        .strip_prefix("/dev/nvme")
        .and_then(|rest| rest.split_once('n'))
        .is_some_and(|(controller, namespace)| digits(controller) && digits(namespace))
}

/// What the disks together allow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Layout {
    /// Every disk blank: the array is created over them.
    Blank,
    /// Every disk a member of the one array with this UUID: it is assembled.
    Members(String),
}

/// Reads every disk's signature: the layout the array comes from, or the refusal
/// naming the disks (a foreign signature is bad input, exit 2; members of the array
/// beside blank disks, or of several arrays, exit 1).
pub fn layout(host: &Host, disks: &[Disk]) -> Result<Layout> {
    let mut foreign = Vec::new();
    let mut members = Vec::new();
    let mut blank = Vec::new();
    for disk in disks {
        match signature(host, &disk.device)? {
            Signature::Blank => blank.push(disk.device.clone()),
            Signature::Member { uuid } => members.push((disk.device.clone(), uuid)),
            other => foreign.push(format!(
                "{} ({}) holds {}",
                disk.device,
                disk.by_id,
                other.foreign().unwrap_or_default()
            )),
        }
    }
    if !foreign.is_empty() {
        return Err(Error::input(format!(
            "disks: {}; the RAID0 array over the instance storage is built only over blank disks or its own \
             members, so nothing was written to any disk. If that data is not needed, wipe it (`wipefs -a DEV`) \
             and try again",
            foreign.join("; ")
        )));
    }
    let uuids: std::collections::BTreeSet<&str> = members.iter().map(|(_, u)| u.as_str()).collect();
    match (uuids.len(), blank.is_empty()) {
        (0, _) => Ok(Layout::Blank),
        (1, true) => Ok(Layout::Members(members[0].1.clone())),
        _ => {
            let mut described: Vec<String> = members.iter().map(|(d, u)| format!("{d} (member of {u})")).collect();
            described.extend(blank.iter().map(|d| format!("{d} (blank)")));
            Err(Error::action(format!(
                "disks: the instance storage holds parts of {} array(s) named {ARRAY_NAME} beside {} blank disk(s): \
                 {}. A RAID0 array missing a disk has lost its data, but nothing here erases what it did not find \
                 blank: wipe the listed members (`wipefs -a DEV`) to have the array made again, or put the missing \
                 disk back",
                uuids.len(),
                blank.len(),
                described.join(", ")
            )))
        }
    }
}

/// Probes `device` (a disk or the array) with `blkid -p -o export`.
pub fn signature(host: &Host, device: &str) -> Result<Signature> {
    if !host.exists(device) {
        return Err(Error::action(format!(
            "disks: {device} does not exist (a disk that went away?); nothing is written to the instance storage"
        )));
    }
    let out = host.run(&Cmd::new("blkid").args(["-p", "-o", "export", device]))?;
    match out.code {
        Some(0) => Ok(classify(&out.stdout)),
        Some(2) => Ok(Signature::Blank),
        _ => Err(Error::action(format!(
            "disks: `blkid -p -o export {device}` {} ({}); the disk's signature cannot be read, so nothing is \
             written to it. Check the device (`lsblk {device}`, `dmesg`)",
            out.status_text(),
            out.diagnostics()
        ))),
    }
}

/// What blkid's `KEY=value` lines say.
fn classify(export: &str) -> Signature {
    let value = |key: &str| {
        export
            .lines()
            .find_map(|l| l.strip_prefix(key).and_then(|v| v.strip_prefix('=')))
            .map(str::trim)
    };
    let ours = |label: &str| label == ARRAY_NAME || label.rsplit_once(':').is_some_and(|(_, n)| n == ARRAY_NAME);
    match (value("TYPE"), value("PTTYPE")) {
        (Some("linux_raid_member"), _) => match (value("LABEL"), value("UUID")) {
            (Some(label), Some(uuid)) if ours(label) => Signature::Member { uuid: uuid.to_string() },
            (label, _) => Signature::Other(format!(
                "RAID metadata of another array ({})",
                label.unwrap_or("no name")
            )),
        },
        (Some(fs), _) => Signature::FileSystem(fs.to_string()),
        (None, Some(table)) => Signature::Other(format!("a {table} partition table")),
        (None, None) => Signature::Other("a signature blkid reports without a type".to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_whole_nvme_namespaces_are_disks() {
        for good in ["/dev/nvme1n1", "/dev/nvme12n3"] {
            assert!(is_nvme_namespace(good), "{good}");
        }
        for bad in [
            "/dev/nvme1n1p1",
            "/dev/nvme1",
            "/etc/shadow",
            "/dev/sda",
            "/dev/nvmen1",
            "/dev/nvme1n",
        ] {
            assert!(!is_nvme_namespace(bad), "{bad}");
        }
    }

    #[test]
    fn blkid_export_lines_are_classified() {
        let member =
            "DEVNAME=/dev/nvme1n1\nUUID=1b2c\nUUID_SUB=9f\nLABEL=ip-10-0-0-1:kubernetes\nTYPE=linux_raid_member\n";
        assert_eq!(classify(member), Signature::Member { uuid: "1b2c".into() });
        assert_eq!(
            classify("LABEL=kubernetes\nUUID=7\nTYPE=linux_raid_member\n"),
            Signature::Member { uuid: "7".into() }
        );
        assert_eq!(
            classify("LABEL=host:data\nUUID=7\nTYPE=linux_raid_member\n"),
            Signature::Other("RAID metadata of another array (host:data)".into())
        );
        assert_eq!(
            classify("LABEL=host:kubernetes-old\nUUID=7\nTYPE=linux_raid_member\n"),
            Signature::Other("RAID metadata of another array (host:kubernetes-old)".into())
        );
        assert_eq!(
            classify("UUID=5\nTYPE=ext4\nUSAGE=filesystem\n"),
            Signature::FileSystem("ext4".into())
        );
        assert_eq!(
            classify("PTUUID=ab\nPTTYPE=gpt\n"),
            Signature::Other("a gpt partition table".into())
        );
    }
}

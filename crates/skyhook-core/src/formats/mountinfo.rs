// SPDX-License-Identifier: Apache-2.0
//! `/proc/<pid>/mountinfo` (proc_pid_mountinfo(5)): the mounts of a mount namespace,
//! one line each, in mount order. A line is
//! `id parent major:minor root mount-point options [optional…] - fstype source super-options`;
//! the root, the mount point and the source escape space, tab, newline and `\` as
//! three octal digits (`\040`). Later lines mount over earlier ones.

use std::path::{Component, Path};

use crate::error::{Error, Result};
use crate::host::Host;

/// Where the host's mount table is read: the mount namespace of the host's init,
/// the one systemd mounts in and workloads see (a step's own namespace may be the
/// agent container's).
pub const HOST_MOUNTINFO: &str = "/proc/1/mountinfo";

/// Reads and parses the host's mount table; an absent or malformed one fails (exit 1).
pub fn read_host(host: &Host) -> Result<MountTable> {
    let Some(text) = host.read_to_string(HOST_MOUNTINFO)? else {
        return Err(Error::action(format!(
            "{HOST_MOUNTINFO} is missing: the package needs the host's mount table (is /proc mounted on the host?)"
        )));
    };
    MountTable::parse(&text).map_err(|bad| {
        let b = &bad[0];
        Error::action(format!(
            "{HOST_MOUNTINFO} line {} cannot be read: {} ({} malformed line(s)); the kernel writes this file, so \
             check what is mounted over /proc",
            b.line,
            b.reason,
            bad.len()
        ))
    })
}

/// One mount of a namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// The mount's id.
    pub id: u64,
    /// The id of the mount it sits on.
    pub parent: u64,
    /// The device (`major:minor`, `st_dev` of its files).
    pub device: String,
    /// The directory of its file system mounted here (`/` for a whole file system,
    /// the bound directory for a bind mount), unescaped.
    pub root: String,
    /// Where it is mounted, unescaped.
    pub mount_point: String,
    /// The per-mount options (`rw,relatime`).
    pub options: Vec<String>,
    /// The file system type (`xfs`).
    pub fstype: String,
    /// The mount source (`/dev/md0`, `tmpfs`), unescaped.
    pub source: String,
    /// The per-superblock options (`rw,attr2`).
    pub super_options: Vec<String>,
}

impl Mount {
    /// Whether writes are refused: `ro` among the per-mount or the superblock options.
    pub fn read_only(&self) -> bool {
        self.options.iter().chain(&self.super_options).any(|o| o == "ro")
    }

    /// Whether the per-mount options say `rw` and the superblock is not read-only.
    pub fn read_write(&self) -> bool {
        self.options.iter().any(|o| o == "rw") && !self.read_only()
    }
}

/// A line the parser cannot read, with its number (1-based) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadLine {
    /// Line number, 1-based.
    pub line: usize,
    /// Why it is refused.
    pub reason: String,
}

/// The mounts of one namespace, in mount order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MountTable {
    /// Every mount, in file order.
    pub mounts: Vec<Mount>,
}

/// Undoes the kernel's octal escapes (`\040` → space); any other `\` is kept.
pub fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && i + 3 < bytes.len() && bytes[i + 1..i + 4].iter().all(|b| (b'0'..=b'7').contains(b)) {
            let v = (bytes[i + 1] - b'0') as u32 * 64 + (bytes[i + 2] - b'0') as u32 * 8 + (bytes[i + 3] - b'0') as u32;
            if v <= 0xff {
                out.push(v as u8);
                i += 4;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn parse_line(line: &str) -> Result<Mount, String> {
    let fields: Vec<&str> = line.split(' ').collect();
    let dash = fields
        .iter()
        .position(|f| *f == "-")
        .ok_or("no '-' separator before the file system type")?;
    if dash < 6 {
        return Err(format!("{dash} fields before the '-' separator; at least 6 expected"));
    }
    if fields.len() < dash + 4 {
        return Err("fewer than 3 fields after the '-' separator".into());
    }
    let number = |s: &str, what: &str| {
        s.parse::<u64>()
            .map_err(|_| format!("the {what} {s:?} is not a number"))
    };
    let device = fields[2];
    match device.split_once(':') {
        Some((a, b)) if a.parse::<u64>().is_ok() && b.parse::<u64>().is_ok() => {}
        _ => return Err(format!("the device {device:?} is not major:minor")),
    }
    let list = |s: &str| s.split(',').filter(|o| !o.is_empty()).map(String::from).collect();
    Ok(Mount {
        id: number(fields[0], "mount id")?,
        parent: number(fields[1], "parent id")?,
        device: device.to_string(),
        root: unescape(fields[3]),
        mount_point: unescape(fields[4]),
        options: list(fields[5]),
        fstype: fields[dash + 1].to_string(),
        source: unescape(fields[dash + 2]),
        super_options: list(fields[dash + 3]),
    })
}

/// Whether `path` is `dir` or lies below it, component by component (`/mnt/a` is
/// under `/mnt`, not under `/mn`).
pub fn is_under(path: &str, dir: &str) -> bool {
    let mut p = Path::new(path).components().filter(|c| !matches!(c, Component::CurDir));
    Path::new(dir)
        .components()
        .filter(|c| !matches!(c, Component::CurDir))
        .all(|d| p.next() == Some(d))
}

impl MountTable {
    /// Parses mountinfo text; every malformed line is reported.
    pub fn parse(text: &str) -> Result<MountTable, Vec<BadLine>> {
        let mut mounts = Vec::new();
        let mut bad = Vec::new();
        for (i, line) in text.lines().enumerate() {
            if line.is_empty() {
                continue;
            }
            match parse_line(line) {
                Ok(m) => mounts.push(m),
                Err(reason) => bad.push(BadLine { line: i + 1, reason }),
            }
        }
        if bad.is_empty() {
            Ok(MountTable { mounts })
        } else {
            Err(bad)
        }
    }

    /// The mount visible at exactly `path` (the last one mounted there), if any.
    pub fn at(&self, path: &str) -> Option<&Mount> {
        self.mounts.iter().rev().find(|m| m.mount_point == path)
    }

    /// The mount whose file system holds `path` (as `findmnt -T` answers): the last
    /// mounted of those whose mount point is `path` or one of its ancestors, the
    /// deepest mount point winning.
    pub fn covering(&self, path: &str) -> Option<&Mount> {
        let mut best: Option<&Mount> = None;
        for m in &self.mounts {
            if is_under(path, &m.mount_point)
                && best.is_none_or(|b| {
                    Path::new(&m.mount_point).components().count() >= Path::new(&b.mount_point).components().count()
                })
            {
                best = Some(m);
            }
        }
        best
    }

    /// Whether the mount at `target` shows the same directory of the same file
    /// system as the mount at `source` (a bind mount of `source`'s mount root).
    pub fn is_bind_of(&self, target: &str, source: &str) -> bool {
        match (self.at(target), self.at(source)) {
            (Some(t), Some(s)) => t.device == s.device && t.root == s.root,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
22 1 253:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw
25 22 0:5 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw
40 22 9:127 / /mnt/k8s-disks/0 rw,noatime shared:30 - xfs /dev/md127 rw,attr2,inode64
41 22 253:1 /srv/ro /mnt/ro ro,relatime shared:31 - ext4 /dev/vda1 rw
42 22 0:40 / /mnt/with\\040space rw master:2 - tmpfs tmpfs rw
43 22 9:127 / /mnt/data rw,noatime shared:30 - xfs /dev/md127 rw,attr2,inode64
";

    #[test]
    fn parses_every_field_and_unescapes_paths() {
        let t = MountTable::parse(SAMPLE).unwrap();
        assert_eq!(t.mounts.len(), 6);
        let m = &t.mounts[2];
        assert_eq!((m.id, m.parent), (40, 22));
        assert_eq!(m.device, "9:127");
        assert_eq!(m.root, "/");
        assert_eq!(m.mount_point, "/mnt/k8s-disks/0");
        assert_eq!(m.options, ["rw", "noatime"]);
        assert_eq!((m.fstype.as_str(), m.source.as_str()), ("xfs", "/dev/md127"));
        assert_eq!(t.mounts[4].mount_point, "/mnt/with space");
        assert_eq!(t.mounts[3].root, "/srv/ro");
    }

    #[test]
    fn optional_fields_may_be_absent_or_many() {
        let t = MountTable::parse("1 0 8:1 / / rw - ext4 /dev/sda1 rw\n2 1 8:2 / /a rw shared:1 master:2 propagate_from:3 - xfs /dev/sda2 rw\n").unwrap();
        assert_eq!(t.mounts[0].fstype, "ext4");
        assert_eq!(t.mounts[1].fstype, "xfs");
    }

    #[test]
    fn malformed_lines_are_reported_by_number() {
        let bad =
            MountTable::parse("1 0 8:1 / / rw - ext4 /dev/sda1 rw\ngarbage\n3 1 x / /b rw - ext4 s rw\n").unwrap_err();
        assert_eq!(bad.iter().map(|b| b.line).collect::<Vec<_>>(), [2, 3]);
        assert!(bad[1].reason.contains("major:minor"), "{bad:?}");
    }

    #[test]
    fn read_only_comes_from_either_option_list() {
        let t = MountTable::parse(SAMPLE).unwrap();
        assert!(t.at("/mnt/ro").unwrap().read_only());
        assert!(!t.at("/mnt/k8s-disks/0").unwrap().read_only());
        let sb = MountTable::parse("1 0 8:1 / /x rw - ext4 /dev/sda1 ro\n").unwrap();
        assert!(sb.mounts[0].read_only() && !sb.mounts[0].read_write());
    }

    #[test]
    fn covering_is_the_deepest_latest_mount_point_component_wise() {
        let t = MountTable::parse(SAMPLE).unwrap();
        assert_eq!(t.covering("/mnt/k8s-disks/0/x").unwrap().id, 40);
        assert_eq!(t.covering("/mnt/k8s-disks/00").unwrap().id, 22);
        assert_eq!(t.covering("/etc").unwrap().id, 22);
        let over =
            MountTable::parse("1 0 8:1 / / rw - ext4 a rw\n2 1 8:2 / /m rw - ext4 b rw\n3 1 8:3 / /m ro - ext4 c rw\n")
                .unwrap();
        assert_eq!(over.covering("/m/x").unwrap().id, 3);
        assert_eq!(over.at("/m").unwrap().id, 3);
    }

    #[test]
    fn a_bind_shows_the_same_device_and_root() {
        let t = MountTable::parse(SAMPLE).unwrap();
        assert!(t.is_bind_of("/mnt/data", "/mnt/k8s-disks/0"));
        assert!(!t.is_bind_of("/mnt/ro", "/"), "same device, another directory");
        assert!(!t.is_bind_of("/mnt/none", "/mnt/k8s-disks/0"));
    }

    #[test]
    fn is_under_compares_components() {
        assert!(is_under("/a/b", "/a"));
        assert!(is_under("/a", "/a"));
        assert!(is_under("/a", "/"));
        assert!(!is_under("/ab", "/a"));
    }
}

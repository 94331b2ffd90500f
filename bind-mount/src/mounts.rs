// SPDX-License-Identifier: Apache-2.0
//! The host's mount table and the questions the package asks of it. The table is
//! read from `/proc/1/mountinfo`: the mount namespace of the host's init, the one
//! systemd mounts in and workloads see (the step's own namespace may be the agent
//! container's). Emptiness and symlinks are looked at through the host root.

use skyhook_core::error::excerpt;
use skyhook_core::formats::mountinfo::{HOST_MOUNTINFO, Mount, MountTable, read_host};
use skyhook_core::{Host, Result};

use crate::input::Input;

/// Where the host's mount table is read (core's [`HOST_MOUNTINFO`]).
pub const MOUNTINFO: &str = HOST_MOUNTINFO;

/// Reads and parses the host's mount table; an absent or malformed one fails (exit 1).
pub fn read(host: &Host) -> Result<MountTable> {
    read_host(host)
}

/// Why the source is not an exact, read-write mount point matching the assertions.
pub fn source_problems(table: &MountTable, input: &Input) -> Vec<String> {
    let source = &input.source;
    let Some(m) = table.at(source) else {
        let on = table
            .covering(source)
            .map_or("nothing".to_string(), |m| excerpt(&m.mount_point));
        return vec![format!(
            "source {} is not a mount point (it lies on the mount at {on}): the package exposes an existing \
             mount and never mounts storage itself; mount the source first",
            excerpt(source)
        )];
    };
    let mut problems = Vec::new();
    if !m.read_write() {
        problems.push(format!("source {} is not mounted read-write", excerpt(source)));
    }
    if let Some(fs) = &input.fstype
        && &m.fstype != fs
    {
        problems.push(format!(
            "source {} has file system {}, expected-source-fstype says {}",
            excerpt(source),
            excerpt(&m.fstype),
            excerpt(fs)
        ));
    }
    if let Some(p) = &input.device_prefix
        && !m.source.starts_with(p.as_str())
    {
        problems.push(format!(
            "source {} is mounted from {}, expected-source-device-prefix says {}",
            excerpt(source),
            excerpt(&m.source),
            excerpt(p)
        ));
    }
    problems
}

/// The mount holding `path` or, when `path` does not exist yet, its nearest existing
/// ancestor (what a new directory would be created on).
pub fn holding<'t>(host: &Host, table: &'t MountTable, path: &str) -> Option<&'t Mount> {
    let mut probe = std::path::Path::new(path);
    while !host.exists(probe) {
        probe = probe.parent()?;
    }
    table.covering(&probe.to_string_lossy())
}

/// Why `target` would be (or is) on a read-only mount.
pub fn read_only_problem(host: &Host, table: &MountTable, target: &str) -> Option<String> {
    match holding(host, table, target) {
        None => Some(format!("target {} is not on any mounted file system", excerpt(target))),
        Some(m) if !m.read_write() => Some(format!(
            "target {} is on the read-only mount at {}: a bind mount there cannot be prepared or used for writing",
            excerpt(target),
            excerpt(&m.mount_point)
        )),
        Some(_) => None,
    }
}

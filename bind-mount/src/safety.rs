// SPDX-License-Identifier: Apache-2.0
//! The refusals before any change: every reason the desired bind mount cannot be
//! prepared safely, collected in one pass so the operator sees them all.

use skyhook_core::error::excerpt;
use skyhook_core::formats::mountinfo::MountTable;
use skyhook_core::{Host, Result};

use crate::fstab;
use crate::identity::Instance;
use crate::input::Input;
use crate::mounts;
use crate::receipt::Receipt;
use crate::unit;

/// The other places systemd loads a unit or its drop-ins from (systemd.unit(5),
/// including the generators' output, where fstab's units appear).
pub const OTHER_UNIT_DIRS: [&str; 8] = [
    "/run/systemd/transient",
    "/run/systemd/generator.early",
    "/run/systemd/system",
    "/run/systemd/generator",
    "/usr/local/lib/systemd/system",
    "/usr/lib/systemd/system",
    "/lib/systemd/system",
    "/run/systemd/generator.late",
];

/// What the target is now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetState {
    /// Already the bind mount of the source (an earlier interrupt activated it).
    Bound,
    /// An empty directory, or absent (to be created).
    Ready {
        /// Whether the directory must be created.
        create: bool,
    },
}

/// Whether `path` is an empty directory reached without a symbolic link.
pub fn is_empty_dir(host: &Host, path: &str) -> Result<bool> {
    Ok(host.read_link(path)?.is_none() && host.is_dir(path) && host.list_dir(path)?.is_empty())
}

/// The first component of `path` (itself included) that is a symbolic link.
pub fn linked_component(host: &Host, path: &str) -> Result<Option<String>> {
    let mut at = String::new();
    for c in path.split('/').filter(|c| !c.is_empty()) {
        at.push('/');
        at.push_str(c);
        if host.read_link(&at)?.is_some() {
            return Ok(Some(at));
        }
    }
    Ok(None)
}

/// The target's state, or why it cannot be used: a different mount, a symbolic
/// link on its path, not a directory, on a read-only mount, not empty.
pub fn target(host: &Host, table: &MountTable, input: &Input, problems: &mut Vec<String>) -> Result<TargetState> {
    let t = &input.target;
    if let Some(m) = table.at(t) {
        if !table.is_bind_of(t, &input.source) {
            problems.push(format!(
                "target {} is already a mount point ({} from {}), not the bind mount of {}: the package never \
                 mounts over another mount",
                excerpt(t),
                excerpt(&m.fstype),
                excerpt(&m.source),
                excerpt(&input.source)
            ));
        } else if !m.read_write() {
            problems.push(format!(
                "target {} is the bind mount of the source but read-only",
                excerpt(t)
            ));
        }
        return Ok(TargetState::Bound);
    }
    if let Some(link) = linked_component(host, t)? {
        problems.push(format!(
            "target {}: {} is a symbolic link; the package never follows a link to where it mounts",
            excerpt(t),
            excerpt(&link)
        ));
        return Ok(TargetState::Ready { create: false });
    }
    problems.extend(mounts::read_only_problem(host, table, t));
    if !host.exists(t) {
        return Ok(TargetState::Ready { create: true });
    }
    if !host.is_dir(t) {
        problems.push(format!("target {} exists and is not a directory", excerpt(t)));
    } else if !host.list_dir(t)?.is_empty() {
        problems.push(format!(
            "target {} is not empty: a bind mount over it would hide its data; empty it or choose another target",
            excerpt(t)
        ));
    }
    Ok(TargetState::Ready { create: false })
}

/// Why the unit name is not free for this instance: a unit file of another owner, a
/// link, a unit or drop-in directory of that name elsewhere, an fstab entry.
pub fn unit_name(host: &Host, instance: &Instance, input: &Input, problems: &mut Vec<String>) -> Result<()> {
    let name = &input.unit;
    match unit::read(host, name) {
        Err(e) => problems.push(e.to_string()),
        Ok(Some(text)) if !unit::is_owned_by(&text, instance) => problems.push(format!(
            "{} exists and is not this instance's ({}): another package instance or the administrator owns \
             that mount unit; two instances must name distinct targets",
            unit::path(name),
            instance.id()
        )),
        Ok(_) => {}
    }
    let dropins = format!("{}.d", unit::path(name));
    if host.exists(&dropins) {
        problems.push(format!(
            "{dropins} exists: drop-ins of another owner would change the package's unit"
        ));
    }
    for dir in OTHER_UNIT_DIRS {
        for candidate in [format!("{dir}/{name}"), format!("{dir}/{name}.d")] {
            if host.exists(&candidate) {
                problems.push(format!(
                    "{candidate} exists: systemd already knows a unit {name} from outside {}; the package never \
                     competes with it",
                    unit::UNIT_DIR
                ));
            }
        }
    }
    if let Some(line) = fstab::owner(host, &input.target)? {
        problems.push(format!(
            "{} line {line} already mounts target {}: /etc/fstab owns it; remove that entry or choose another target",
            fstab::FSTAB,
            excerpt(&input.target)
        ));
    }
    Ok(())
}

/// Why a change of source or target cannot go ahead: the previous target is still
/// mounted (a live bind mount is never moved or unmounted by the package).
pub fn path_change(table: &MountTable, previous: Option<&Receipt>, input: &Input) -> Option<String> {
    let r = previous?;
    let changed = r.source != input.source || r.target != input.target;
    (changed && table.at(&r.target).is_some()).then(|| {
        format!(
            "the configuration changed ({} -> {} becomes {} -> {}) while the previous target {} is still mounted: \
             uninstall the package and recycle the node before changing source or target",
            excerpt(&r.source),
            excerpt(&r.target),
            excerpt(&input.source),
            excerpt(&input.target),
            excerpt(&r.target)
        )
    })
}

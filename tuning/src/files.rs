// SPDX-License-Identifier: Apache-2.0
//! Removing the package's files: each removal is recorded in the state's
//! footprint (pruning the directories the package created), and what it asks for
//! next (a daemon-reload and a restart per unit, a boot regeneration) follows from
//! the kind of each file removed.

use std::collections::BTreeSet;

use skyhook_core::{Host, Result};

use crate::paths::{FileKind, Managed};
use crate::state::State;

/// What removing some of the package's files asks for.
#[derive(Debug, Default)]
pub struct Removed {
    /// Units whose drop-in went: daemon-reload, and a restart of each.
    pub units: BTreeSet<String>,
    /// A GRUB drop-in went: the boot configuration must be regenerated.
    pub grub: bool,
    /// The modprobe.d file went: the modules it kept out may load again on demand.
    pub modprobe: bool,
}

/// Removes `files` (recorded in `state`), pruning the directories the package created.
pub fn remove(host: &Host, state: &mut State, files: &[Managed]) -> Result<Removed> {
    let mut removed = Removed::default();
    for f in files {
        if state.footprint.remove(host, &f.path)? {
            log::info!("removed {} ({})", f.path.display(), f.kind.describe());
            match &f.kind {
                FileKind::DropIn(unit) => {
                    removed.units.insert(unit.clone());
                }
                FileKind::Grub => removed.grub = true,
                FileKind::Modprobe => removed.modprobe = true,
                FileKind::Sysctl | FileKind::Limits | FileKind::Other => {}
            }
        }
    }
    Ok(removed)
}

/// The units among `files` (their drop-ins change: daemon-reload is due).
pub fn units<'a>(files: impl IntoIterator<Item = &'a FileKind>) -> BTreeSet<String> {
    files
        .into_iter()
        .filter_map(FileKind::unit)
        .map(str::to_string)
        .collect()
}

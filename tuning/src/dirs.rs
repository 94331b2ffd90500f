// SPDX-License-Identifier: Apache-2.0
//! Directories a tuning entry created that another entry's files still filled when
//! it was uninstalled (`/etc/security/limits.d`, say): kept in the shared ledger and
//! removed once empty.

use std::collections::BTreeSet;
use std::path::PathBuf;

use skyhook_core::records::footprint::Footprint;
use skyhook_core::{Host, Result};

use crate::ledger::{self, Ledger};

/// Takes over `dirs` (created by an entry being uninstalled, still holding other
/// entries' files), then removes every recorded directory that is empty.
pub fn hand_over(host: &Host, dirs: &BTreeSet<PathBuf>) -> Result<()> {
    let store = ledger::store(host);
    if dirs.is_empty() && !store.exists() {
        // Nothing recorded; an interrupted clear may still have left empty directories.
        return store.clear();
    }
    let mut ledger: Ledger = store.load()?;
    ledger.dirs.extend(dirs.iter().cloned());
    let mut fp = Footprint {
        files: Default::default(),
        dirs: std::mem::take(&mut ledger.dirs),
    };
    fp.prune(host)?;
    ledger.dirs = fp.dirs;
    store.save_or_clear(&ledger)
}

// SPDX-License-Identifier: Apache-2.0
//! What the tuning entries of a node share, kept in one ledger in the core state
//! store (`/var/lib/skyhook-packages/tuning/_shared/state.json`; `_` never occurs in
//! a package name): the pam_limits lines added and the entries that need them
//! ([`crate::pam`]), the directories to remove once empty ([`crate::dirs`]), and the
//! kernel parameters entries set live with who holds each ([`crate::owners`],
//! [`crate::live`]; nvidia-tuning-gke's entries included, it runs this engine).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use skyhook_core::Host;
use skyhook_core::formats::pam::Appended;
use skyhook_core::records::state::{Record, StateStore};

use crate::owners::Holders;

/// What the node's tuning entries share.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Ledger {
    /// Text appended to PAM files.
    pub added: Vec<Appended>,
    /// The tuning entries (package names) that need pam_limits.
    pub users: BTreeSet<String>,
    /// Directories created by a tuning entry, to remove once empty.
    pub dirs: BTreeSet<PathBuf>,
    /// The kernel parameters entries set live, with who holds each ([`crate::owners`]).
    pub sysctl: BTreeMap<String, Holders>,
}

impl Record for Ledger {
    fn is_empty(&self) -> bool {
        self.added.is_empty() && self.users.is_empty() && self.dirs.is_empty() && self.sysctl.is_empty()
    }
}

/// The ledger's store.
pub fn store(host: &Host) -> StateStore<'_> {
    skyhook_core::records::tuning_ledger::store(host)
}

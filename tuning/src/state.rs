// SPDX-License-Identifier: Apache-2.0
//! What this package did on the node, kept in the core state store
//! (`/var/lib/skyhook-packages/tuning/<name>/state.json`): the files it wrote and
//! the directories it created, the kernel parameters it changed live with their
//! values from before, its kernel arguments, and work that must still be finished
//! when a run was interrupted.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use skyhook_core::boot::ArgsRecord;
use skyhook_core::records::footprint::Footprint;
use skyhook_core::records::state::Record;

/// A kernel parameter this package changed live.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiveChange {
    /// The value it set.
    pub set: String,
    /// The value before its first change, restored on removal.
    pub original: String,
}

/// Work that a run started and must be finished by the next one.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Pending {
    /// Drop-ins changed: `systemctl daemon-reload` is due.
    pub daemon_reload: bool,
    /// The kernel arguments changed: the boot configuration must be regenerated.
    pub boot_config: bool,
}

impl Pending {
    /// Whether nothing is pending.
    pub fn is_empty(&self) -> bool {
        !self.daemon_reload && !self.boot_config
    }
}

/// The package's state on one node.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct State {
    /// Files written and directories created.
    pub footprint: Footprint,
    /// Kernel parameters changed live, by key (path form, `vm/swappiness`).
    pub sysctl: BTreeMap<String, LiveChange>,
    /// The kernel arguments and how they were applied.
    pub grub: ArgsRecord,
    /// Unfinished work.
    pub pending: Pending,
    /// The bash package version this node was migrated from, if any.
    pub migrated_from: Option<String>,
}

impl State {
    /// Whether nothing is recorded (the state file can go).
    pub fn is_empty(&self) -> bool {
        self.footprint.is_empty() && self.sysctl.is_empty() && self.grub.is_empty() && self.pending.is_empty()
    }
}

impl Record for State {
    fn is_empty(&self) -> bool {
        State::is_empty(self)
    }
}

// SPDX-License-Identifier: Apache-2.0
//! What the host steps changed, kept outside the copy dir
//! (`/var/lib/skyhook-packages/nvidia-tuned-host-steps/<name>/state.json`): each file
//! a step wrote or had written, with its original (absent, or its bytes and mode), the
//! directories created for them, the units enabled, whether the boot configuration
//! still has to be regenerated (for these steps' drop-ins and for the services' GRUB
//! drop-ins, [`crate::grub`]) and what GRUB was last generated from for the services'
//! drop-ins ([`BootInputs`]), and on RHEL-like hosts the kernel arguments the PCIe
//! ACS correction and the IOMMU workaround put on the boot configuration through
//! core's [`OwnArgs`](skyhook_core::boot::OwnArgs) ([`Changes::kernel_args`], with
//! each entry's originals). Every entry is saved *before* the change
//! it covers, so a killed run, its rerun and uninstall (with or without the configMap)
//! know what may have been left, and giving a file back restores it byte for byte.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use skyhook_core::boot::ArgsRecord;
use skyhook_core::records::footprint::Footprint;
use skyhook_core::records::original::SavedFile;
use skyhook_core::records::state::{Record, StateStore};
use skyhook_core::{Host, Interrupt, Result};

/// The state kind of the host steps' record.
pub const STATE_KIND: &str = "nvidia-tuned-host-steps";

/// A file a step changed, with the step's name and the file as it was before.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Taken {
    /// The step that changed it (`nccl-topo`, `rdma-vfs-ready`, …).
    pub step: String,
    /// The file before the first change.
    pub original: SavedFile,
}

/// The record.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Changes {
    /// Files changed, by host path.
    pub files: BTreeMap<PathBuf, Taken>,
    /// Directories created for them.
    pub dirs: Footprint,
    /// Units enabled.
    pub units: BTreeSet<String>,
    /// Whether a GRUB drop-in changed since the boot configuration was regenerated.
    pub regenerate: bool,
    /// What the boot configuration was last generated from while a service's GRUB
    /// drop-in (eks, aks, rke2) was deployed; `None` otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grub: Option<BootInputs>,
    /// On RHEL-like hosts: the host steps' kernel arguments on the boot entries
    /// (grubby) or in `/etc/default/grub`, with what they replaced
    /// ([`super::boot_args`]).
    #[serde(skip_serializing_if = "ArgsRecord::is_empty")]
    pub kernel_args: ArgsRecord,
}

/// What a service's GRUB drop-ins hand to GRUB when it is generated: the arguments
/// tuned writes to `/etc/tuned/bootcmdline`, as the chain asks them and as tuned wrote
/// them. A difference from what the record holds means GRUB is to be regenerated.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct BootInputs {
    /// The `[bootloader]` options of the chain's profiles (`<profile> [section] option=value`).
    pub args: Vec<String>,
    /// `/etc/tuned/bootcmdline` as it was (`None`: absent).
    pub bootcmdline: Option<String>,
}

impl Record for Changes {
    fn is_empty(&self) -> bool {
        self.files.is_empty()
            && self.dirs.is_empty()
            && self.units.is_empty()
            && !self.regenerate
            && self.grub.is_none()
            && self.kernel_args.is_empty()
    }
}

/// The record, loaded, with the host and store it is saved to.
pub struct Ledger<'h> {
    host: &'h Host,
    store: StateStore<'h>,
    /// What is recorded.
    pub changes: Changes,
}

impl<'h> Ledger<'h> {
    /// Loads the record of SCR entry `name` on `host`.
    pub fn load(host: &'h Host, name: &str) -> Result<Self> {
        let store = StateStore::new(host, STATE_KIND, name);
        let changes = store.load()?;
        Ok(Ledger { host, store, changes })
    }

    /// The host.
    pub fn host(&self) -> &'h Host {
        self.host
    }

    /// Saves the record (or clears it when empty).
    pub fn save(&self) -> Result<()> {
        self.store.save_or_clear(&self.changes)
    }

    /// Records `path` as changed by `step` (its original, the directories it needs),
    /// saved before the change; a path already recorded keeps its first original.
    /// With `own`, the path is the package's own (a file found there, such as the bash
    /// version's, is taken over): giving it back removes it.
    pub fn take(&mut self, step: &str, path: &Path, own: bool) -> Result<()> {
        if self.changes.files.contains_key(path) {
            return Ok(());
        }
        let mut original = SavedFile::capture(self.host, path)?;
        if own {
            original = SavedFile {
                existed: false,
                mode: None,
                text: None,
                base64: None,
                ..original
            };
        }
        self.changes.dirs.claim(self.host, path);
        self.changes.dirs.files.remove(path);
        self.changes.files.insert(
            path.to_path_buf(),
            Taken {
                step: step.to_string(),
                original,
            },
        );
        self.save()
    }

    /// Makes `path` hold `bytes` with `mode` for `step` (`own`: see [`Ledger::take`]);
    /// returns whether it wrote.
    pub fn write(&mut self, step: &str, path: &Path, bytes: &[u8], mode: u32, own: bool) -> Result<bool> {
        self.take(step, path, own)?;
        Ok(self.host.write(path, bytes, mode)?)
    }

    /// The paths recorded for `step`.
    pub fn paths_of(&self, step: &str) -> Vec<PathBuf> {
        self.changes
            .files
            .iter()
            .filter(|(_, t)| t.step == step)
            .map(|(p, _)| p.clone())
            .collect()
    }

    /// Puts `path` back as it was (removing it when it was absent), forgets it and
    /// removes the directories created for it once empty; returns whether it changed.
    pub fn give_back(&mut self, path: &Path) -> Result<bool> {
        let Some(taken) = self.changes.files.get(path) else {
            return Ok(false);
        };
        let changed = taken.original.restore(self.host)?;
        self.changes.files.remove(path);
        self.changes.dirs.prune(self.host)?;
        self.save()?;
        Ok(changed)
    }

    /// Gives back every path of `step` except `keep`; returns whether any changed.
    pub fn give_back_step(&mut self, step: &str, keep: &[&Path]) -> Result<bool> {
        let mut changed = false;
        for path in self.paths_of(step) {
            if !keep.contains(&path.as_path()) {
                changed |= self.give_back(&path)?;
            }
        }
        Ok(changed)
    }

    /// Takes back the GRUB drop-in(s) `step` wrote, owing a regeneration first;
    /// returns [`Interrupt::Reboot`] when one changed (the kernel command line of the
    /// next boot differs), logging `done` under the step's name.
    pub fn give_back_boot_drop_in(&mut self, step: &str, done: &str) -> Result<Interrupt> {
        if self.paths_of(step).is_empty() {
            return Ok(Interrupt::NoOp);
        }
        self.owe_regeneration()?;
        if self.give_back_step(step, &[])? {
            log::info!("{step}: {done} (needs a reboot)");
            return Ok(Interrupt::Reboot);
        }
        Ok(Interrupt::NoOp)
    }

    /// Records that the boot configuration must be regenerated (before the change).
    pub fn owe_regeneration(&mut self) -> Result<()> {
        if !self.changes.regenerate {
            self.changes.regenerate = true;
            self.save()?;
        }
        Ok(())
    }

    /// Records that the boot configuration was regenerated.
    pub fn regenerated(&mut self) -> Result<()> {
        self.changes.regenerate = false;
        self.save()
    }

    /// Records what GRUB was generated from for the services' drop-ins, and saves (a
    /// record left empty is cleared, also where a killed run's clear was cut short).
    pub fn set_grub(&mut self, inputs: Option<BootInputs>) -> Result<()> {
        self.changes.grub = inputs;
        self.save()
    }
}

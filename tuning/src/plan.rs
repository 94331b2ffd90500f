// SPDX-License-Identifier: Apache-2.0
//! config's plan: everything config will change on the node, computed from the
//! validated configMap, the state and the host before anything changes, and the
//! state that records it as intended (so a run killed half way is finished by the
//! next one).

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};

use skyhook_core::boot::{BootConfig, OwnArgs};
use skyhook_core::{Host, Result, Step};

use crate::files;
use crate::grub;
use crate::input::{Desired, WantedFile};
use crate::live::{Live, Set};
use crate::owners::{self, Holders};
use crate::paths::{FileKind, Managed, Paths};
use crate::state::{LiveChange, State};

/// A file to write: its path and what it must hold.
#[derive(Debug, Clone, Copy)]
pub struct FileWrite<'a> {
    /// Where.
    pub path: &'a Path,
    /// What.
    pub file: &'a WantedFile,
}

/// The kernel arguments' part of the plan: the host's boot configuration and this
/// entry's GRUB drop-in.
#[derive(Debug)]
pub struct BootPlan {
    /// The host's boot configuration.
    pub config: BootConfig,
    /// The entry's GRUB drop-in.
    pub drop_in: PathBuf,
    /// The drop-in's comment lines.
    pub header: String,
    /// The boot configuration does not carry the wanted arguments yet.
    pub change: bool,
}

impl BootPlan {
    /// The kernel arguments this entry owns on `host`.
    pub fn own<'a>(&'a self, host: &'a Host) -> OwnArgs<'a> {
        OwnArgs {
            host,
            boot: &self.config,
            drop_in: &self.drop_in,
            header: &self.header,
        }
    }
}

/// Everything config changes.
#[derive(Debug)]
pub struct Plan<'a> {
    /// Files whose content or mode differs from what the configMap asks for.
    pub writes: Vec<FileWrite<'a>>,
    /// Files of an earlier configMap (or of the bash package) no key asks for any more.
    pub removes: Vec<Managed>,
    /// Kernel parameters to set live.
    pub sets: Vec<Set<'a>>,
    /// Kernel parameters this package changed that no key sets any more: put back.
    pub restores: BTreeMap<String, LiveChange>,
    /// The kernel arguments, when the boot configuration is concerned at all.
    pub boot: Option<BootPlan>,
    /// A bash package's GRUB drop-in is among the removals.
    pub legacy_grub: bool,
    /// Units whose drop-in is written or removed.
    pub changed_units: BTreeSet<String>,
}

impl<'a> Plan<'a> {
    /// The plan that makes the node match `desired` (`files` and `live` derived
    /// from it), given what `state` records. Fails, before any change, on a host
    /// without GRUB when the kernel arguments are concerned.
    pub fn compute(
        step: &Step,
        paths: &Paths,
        desired: &Desired,
        files: &'a BTreeMap<PathBuf, WantedFile>,
        live: &'a [Live],
        state: &State,
    ) -> Result<Self> {
        let host = &step.host;
        let mut writes = Vec::new();
        for (path, file) in files {
            if !host.has_content(path, file.content.as_bytes(), 0o644)? {
                writes.push(FileWrite { path, file });
            }
        }
        let grub_path = paths.grub();
        let removes: Vec<Managed> = state
            .footprint
            .files
            .iter()
            .filter(|p| !files.contains_key(*p) && **p != grub_path)
            .map(|p| paths.managed(p))
            .collect();
        let legacy_grub = removes.iter().any(|m| m.kind == FileKind::Grub);
        let changed_units = files::units(
            writes
                .iter()
                .map(|w| &w.file.kind)
                .chain(removes.iter().map(|m| &m.kind)),
        );
        let boot = plan_boot(step, paths, desired, state, legacy_grub)?;
        Ok(Plan {
            writes,
            removes,
            sets: differing(live),
            restores: restores(state, live),
            boot,
            legacy_grub,
            changed_units,
        })
    }

    /// `state` with this plan recorded as intended: the files to write claimed,
    /// the live values to change with their values from before (the first holder's
    /// original when another entry `me` is not holds the key, see [`owners`]), the
    /// daemon-reload and boot regeneration pending.
    pub fn intent(
        &self,
        host: &Host,
        desired: &Desired,
        state: &State,
        held: &BTreeMap<String, Holders>,
        me: &str,
    ) -> State {
        let mut intent = state.clone();
        for w in &self.writes {
            intent.footprint.claim(host, w.path);
        }
        if let Some(b) = &self.boot
            && !desired.grub.is_empty()
            && matches!(b.config, BootConfig::GrubDropIns { .. })
        {
            intent.footprint.claim(host, &b.drop_in);
        }
        for s in &self.sets {
            let a = &s.live.entry.a;
            intent
                .sysctl
                .entry(a.key.as_path_str().to_string())
                .and_modify(|c| c.set = a.value.clone())
                .or_insert_with(|| LiveChange {
                    set: a.value.clone(),
                    // Another entry holding the key found its original: ours is theirs.
                    original: owners::handed_over(held.get(a.key.as_path_str()), me)
                        .unwrap_or(&s.current)
                        .to_string(),
                });
        }
        intent.pending.daemon_reload |= !self.changed_units.is_empty();
        intent.pending.boot_config |= self.boot.as_ref().is_some_and(|b| b.change) || self.legacy_grub;
        intent
    }
}

/// The entries of `live` whose live value differs from the wanted one.
fn differing(live: &[Live]) -> Vec<Set<'_>> {
    live.iter()
        .filter_map(|l| {
            let current = l.current.as_ref()?;
            (!skyhook_core::formats::sysctl::same_value(current, &l.entry.a.value)).then(|| Set {
                live: l,
                current: current.clone(),
            })
        })
        .collect()
}

/// The kernel parameters `state` records as changed that `live` no longer sets.
fn restores(state: &State, live: &[Live]) -> BTreeMap<String, LiveChange> {
    let wanted: HashSet<&str> = live.iter().map(|l| l.entry.a.key.as_path_str()).collect();
    state
        .sysctl
        .iter()
        .filter(|(k, _)| !wanted.contains(k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The kernel arguments' plan, when they are concerned: the configMap has some,
/// the state records some, the drop-in exists, a bash package's drop-in goes, or
/// a regeneration is pending.
fn plan_boot(
    step: &Step,
    paths: &Paths,
    desired: &Desired,
    state: &State,
    legacy_grub: bool,
) -> Result<Option<BootPlan>> {
    let host = &step.host;
    let drop_in = paths.grub();
    let concerned = !desired.grub.is_empty()
        || !state.grub.is_empty()
        || host.exists(&drop_in)
        || legacy_grub
        || state.pending.boot_config;
    if !concerned {
        return Ok(None);
    }
    let mut boot = BootPlan {
        config: grub::boot_config(step)?,
        drop_in,
        header: paths.header(grub::KEY),
        change: false,
    };
    boot.change = !boot.own(host).is_current(&state.grub, &desired.grub)?;
    Ok(Some(boot))
}

// SPDX-License-Identifier: Apache-2.0
//! Making the node hold exactly the planned profiles and scripts, and remembering
//! what was deployed so that the next config removes what the configMap dropped and
//! uninstall removes everything this package put there (and nothing else).
//!
//! The state is recorded before any file is written: a step killed half way leaves a
//! record that covers every file it may have written.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use skyhook_core::records::footprint::Footprint;
use skyhook_core::records::receipt::InstallReceipt;
use skyhook_core::records::state::{Record, StateStore};
use skyhook_core::{ConfigMaps, Host, Result};

use crate::input::{PROFILE_KEY, SCRIPT_SUFFIX, SCRIPTS_DIR};
use crate::layout::Tuned;
use crate::plan::{Item, Plan};

/// What this package deployed on the node (`/var/lib/skyhook-packages/tuned/<name>/state.json`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    /// Every file and link this package deployed (host paths), and the directories it
    /// created or owns (each custom profile's directory), removed again once empty.
    #[serde(flatten)]
    pub footprint: Footprint,
    /// The bootloader options in effect after the last config (see [`Plan::bootloader`]);
    /// `None` before the first config.
    #[serde(default)]
    pub bootloader: Option<Vec<String>>,
    /// Whether tuned was installed before apply, and what apply installed with it;
    /// recorded before the install starts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install: Option<InstallReceipt>,
    /// The packages apply installed, as versions before the install receipt recorded
    /// them (read only: uninstall removes them when no receipt is recorded).
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub packages: BTreeSet<String>,
}

impl Record for State {
    fn is_empty(&self) -> bool {
        self.footprint.is_empty() && self.bootloader.is_none() && self.install.is_none() && self.packages.is_empty()
    }
}

impl State {
    /// The install receipt, or one made of what an earlier version recorded.
    pub fn receipt(&self) -> InstallReceipt {
        self.install.clone().unwrap_or_else(|| InstallReceipt {
            preinstalled: false,
            added: self.packages.iter().cloned().collect(),
            ..InstallReceipt::default()
        })
    }
}

/// What a deployment changed.
#[derive(Debug, Default)]
pub struct Changes {
    /// Paths written or re-linked.
    pub written: Vec<PathBuf>,
    /// Paths removed.
    pub removed: Vec<PathBuf>,
}

impl Changes {
    /// Whether anything changed on the node.
    pub fn any(&self) -> bool {
        !self.written.is_empty() || !self.removed.is_empty()
    }
}

/// Whether `path` holds `expected`: a file with that content (whatever its mode), or
/// a link with that target.
pub fn holds(host: &Host, path: &Path, expected: &Item) -> Result<bool> {
    Ok(match expected {
        Item::Link { target } => host.read_link(path)?.as_deref() == Some(target.as_path()),
        Item::File { content, .. } => {
            host.read_link(path)?.is_none() && host.read(path)?.as_deref() == Some(content.as_slice())
        }
    })
}

/// Removes `path` when it [`holds`] `expected`; returns whether it did. The copy's
/// directory was made by the deployment that left the copy: it is taken over, to be
/// removed once empty.
fn remove_if_same(host: &Host, footprint: &mut Footprint, path: &Path, expected: &Item) -> Result<bool> {
    if !holds(host, path, expected)? {
        return Ok(false);
    }
    if let Some(dir) = path.parent() {
        footprint.adopt_dir(dir);
    }
    if footprint.remove(host, path)? {
        log::info!(
            "removed {}: a copy of a configMap key left by an earlier deployment (the bash package, or a \
             tuned upgrade that moved the profile directory)",
            path.display()
        );
        return Ok(true);
    }
    Ok(false)
}

/// The places where earlier deployments (the bash package, this package under the
/// other profile layout) may have left a copy of a configMap key, with that copy's
/// expected content. Tolerant of any configMap: used by uninstall too.
pub fn legacy_copies(configmaps: &ConfigMaps, tuned: Option<&Tuned>) -> Vec<(PathBuf, Item)> {
    let mut out = Vec::new();
    for (key, raw) in configmaps.iter() {
        if key == PROFILE_KEY {
            continue;
        }
        let file = Item::File {
            content: raw.to_vec(),
            mode: 0,
        };
        if let Some(name) = key.strip_suffix(SCRIPT_SUFFIX) {
            let scripts = Path::new(SCRIPTS_DIR);
            out.push((scripts.join(key), file.clone()));
            if !name.is_empty() && name != "." && name != ".." {
                out.push((scripts.join(name), file));
                out.push((scripts.join(key), Item::Link { target: name.into() }));
            }
        } else {
            let mut dirs: BTreeSet<PathBuf> = Tuned::legacy_dirs().iter().map(|d| d.to_path_buf()).collect();
            dirs.extend(tuned.map(|t| t.user_dir.clone()));
            for dir in dirs {
                out.push((dir.join(key).join("tuned.conf"), file.clone()));
            }
        }
    }
    out
}

/// Deploys `plan`: writes what differs, removes what an earlier run deployed and the
/// plan no longer holds, and removes stale copies of the same keys at legacy paths.
/// Every path is claimed in the state before it is written.
pub fn apply(host: &Host, store: &StateStore, plan: &Plan, configmaps: &ConfigMaps, tuned: &Tuned) -> Result<Changes> {
    let mut state: State = store.load()?;
    let previous = state.footprint.files.clone();
    for path in plan.items.keys() {
        state.footprint.claim(host, path);
    }
    for dir in &plan.profile_dirs {
        state.footprint.adopt_dir(dir);
    }
    store.save(&state)?;

    let mut changes = Changes::default();
    for (path, item) in &plan.items {
        let wrote = match item {
            Item::File { content, mode } => host.write(path, content, *mode)?,
            Item::Link { target } => host.symlink(target, path)?,
        };
        if wrote {
            log::info!("deployed {}", path.display());
            changes.written.push(path.clone());
        }
    }
    for stale in previous.iter().filter(|p| !plan.items.contains_key(*p)) {
        if state.footprint.remove(host, stale)? {
            log::info!("removed {} (its configMap key is gone)", stale.display());
            changes.removed.push(stale.clone());
        }
    }
    for (path, expected) in legacy_copies(configmaps, Some(tuned)) {
        if !plan.items.contains_key(&path) && remove_if_same(host, &mut state.footprint, &path, &expected)? {
            changes.removed.push(path);
        }
    }
    state.footprint.prune(host)?;
    store.save(&state)?;
    if !changes.any() {
        log::info!("every profile and script is already deployed as the configMap says; nothing rewritten");
    }
    Ok(changes)
}

/// Records the bootloader options now in effect.
pub fn record_bootloader(store: &StateStore, options: Vec<String>) -> Result<()> {
    let mut state: State = store.load()?;
    state.bootloader = Some(options);
    store.save(&state)?;
    Ok(())
}

/// Removes every file this package deployed (and copies of the current configMap keys
/// that earlier deployments left), then the directories it created. The state is
/// kept (with no files) until [`StateStore::clear`].
pub fn remove_all(host: &Host, store: &StateStore, configmaps: &ConfigMaps) -> Result<Changes> {
    let mut state: State = store.load()?;
    let mut changes = Changes::default();
    for path in state.footprint.files.clone() {
        if state.footprint.remove(host, &path)? {
            log::info!("removed {}", path.display());
            changes.removed.push(path);
        }
    }
    store.save(&state)?;
    for (path, expected) in legacy_copies(configmaps, None) {
        if remove_if_same(host, &mut state.footprint, &path, &expected)? {
            changes.removed.push(path);
        }
    }
    state.footprint.prune(host)?;
    store.save(&state)?;
    Ok(changes)
}

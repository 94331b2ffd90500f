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
use skyhook_core::records::state::StateStore;
use skyhook_core::{ConfigMaps, Host, Result};

use crate::layout::Tuned;
use crate::plan::{Item, PROFILE_KEY, Plan, SCRIPT_SUFFIX, SCRIPTS_DIR};

/// What this package deployed on the node (`/var/lib/skyhook-packages/tuned/<name>/state.json`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    /// Every file and link this package deployed (host paths).
    #[serde(default)]
    pub files: BTreeSet<PathBuf>,
    /// Directories this package created (removed again once empty).
    #[serde(default)]
    pub dirs: BTreeSet<PathBuf>,
    /// The bootloader options in effect after the last config (see [`Plan::bootloader`]);
    /// `None` before the first config.
    #[serde(default)]
    pub bootloader: Option<Vec<String>>,
    /// The distribution packages apply installed (tuned and the dependencies pulled in
    /// with it), removed again by uninstall.
    #[serde(default)]
    pub packages: BTreeSet<String>,
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

/// The ancestors of `path` that do not exist yet, deepest first.
fn missing_dirs(host: &Host, path: &Path) -> Vec<PathBuf> {
    path.ancestors()
        .skip(1)
        .take_while(|d| !host.exists(d))
        .map(Path::to_path_buf)
        .collect()
}

/// Removes a deployed file or link; for a profile's `tuned.conf`, also its profile
/// directory once empty (it may have been created by tuned's own migration of
/// `/etc/tuned/<name>` to `/etc/tuned/profiles/<name>`, so the state may not list it).
fn remove_deployed(host: &Host, path: &Path) -> Result<bool> {
    let removed = host.remove(path)?;
    if path.file_name().is_some_and(|n| n == "tuned.conf")
        && let Some(dir) = path.parent()
        && host.remove_empty_dir(dir)?
    {
        log::info!("removed the empty profile directory {}", dir.display());
    }
    Ok(removed)
}

/// Removes the recorded directories that are empty and hold nothing still planned.
fn prune_dirs(host: &Host, state: &mut State, keep: &BTreeSet<PathBuf>, changes: &mut Changes) -> Result<()> {
    let mut dirs: Vec<PathBuf> = state.dirs.iter().cloned().collect();
    dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
    for dir in dirs {
        if keep.iter().any(|k| k.starts_with(&dir)) {
            continue;
        }
        if !host.exists(&dir) {
            state.dirs.remove(&dir);
        } else if host.remove_empty_dir(&dir)? {
            log::info!(
                "removed the directory {} (created by this package, now empty)",
                dir.display()
            );
            state.dirs.remove(&dir);
            changes.removed.push(dir);
        }
    }
    Ok(())
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

/// Removes `path` when it [`holds`] `expected`; returns whether it did.
fn remove_if_same(host: &Host, path: &Path, expected: &Item) -> Result<bool> {
    if holds(host, path, expected)? && remove_deployed(host, path)? {
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
pub fn apply(host: &Host, store: &StateStore, plan: &Plan, configmaps: &ConfigMaps, tuned: &Tuned) -> Result<Changes> {
    let mut state: State = store.load()?;
    let previous = state.files.clone();
    let planned: BTreeSet<PathBuf> = plan.items.keys().cloned().collect();
    for path in &planned {
        state.dirs.extend(missing_dirs(host, path));
    }
    state.files.extend(planned.iter().cloned());
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
    for stale in previous.difference(&planned) {
        if remove_deployed(host, stale)? {
            log::info!("removed {} (its configMap key is gone)", stale.display());
            changes.removed.push(stale.clone());
        }
    }
    for (path, expected) in legacy_copies(configmaps, Some(tuned)) {
        if !planned.contains(&path) && remove_if_same(host, &path, &expected)? {
            changes.removed.push(path);
        }
    }
    prune_dirs(host, &mut state, &planned, &mut changes)?;
    state.files = planned;
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
    for path in &state.files {
        if remove_deployed(host, path)? {
            log::info!("removed {}", path.display());
            changes.removed.push(path.clone());
        }
    }
    state.files.clear();
    store.save(&state)?;
    for (path, expected) in legacy_copies(configmaps, None) {
        if remove_if_same(host, &path, &expected)? {
            changes.removed.push(path);
        }
    }
    let scripts = Path::new(SCRIPTS_DIR);
    if changes.removed.iter().any(|p| p.parent() == Some(scripts)) && host.remove_empty_dir(scripts)? {
        log::info!("removed the directory {SCRIPTS_DIR} (now empty)");
        state.dirs.remove(scripts);
    }
    prune_dirs(host, &mut state, &BTreeSet::new(), &mut changes)?;
    store.save(&state)?;
    Ok(changes)
}

// SPDX-License-Identifier: Apache-2.0
//! What the bash nvidia-tuned (0.x) left on a node, removed so that an upgraded
//! node carries only this package's files and uninstall leaves nothing of either:
//! its base profiles under `/usr/lib/tuned/<name>/`, every workload and service
//! profile it copied to `/etc/tuned/<name>/` (all combinations, not only the active
//! one), and the scripts beside them; with tuned 2.23 and later the same under
//! `/usr/lib/tuned/profiles/` and `/etc/tuned/profiles/`, tuned's directories there.
//! Only the manifest's file names in directories of the catalog's own profile names
//! are touched, never a path this package deploys, and a directory only when that
//! leaves it empty.

use std::collections::BTreeSet;
use std::path::PathBuf;

use skyhook_core::{Host, Result};

use crate::catalog::Catalog;

/// Every profile name the bash package could have deployed.
fn names(catalog: &Catalog) -> BTreeSet<String> {
    let m = &catalog.manifest;
    let mut out: BTreeSet<String> = catalog.base_profiles().into_iter().collect();
    // Every profile of the catalog (nvidia-generic, nvidia-vr200-noreboot-base, …),
    // which the bash package copied whichever the combination.
    out.extend(
        catalog
            .paths()
            .filter_map(|p| p.strip_prefix("profiles/")?.strip_suffix(".conf")?.rsplit('/').next())
            .filter(|name| *name != "service")
            .map(String::from),
    );
    for a in &m.accelerators {
        for i in &m.intents {
            out.insert(format!("nvidia-{a}-{i}"));
            out.extend(m.services.keys().map(|s| format!("{s}-{a}-{i}")));
        }
    }
    out
}

/// Removes the bash package's files except those in `keep` (this package's own);
/// returns the paths removed.
pub fn remove(host: &Host, catalog: &Catalog, keep: &BTreeSet<PathBuf>) -> Result<Vec<PathBuf>> {
    let legacy = &catalog.manifest.legacy;
    let mut removed = Vec::new();
    for name in names(catalog) {
        for dir in legacy.dirs.iter().map(|d| d.join(&name)) {
            if !host.is_dir(&dir) {
                continue;
            }
            for file in legacy.files.iter().map(|f| dir.join(f)) {
                if !keep.contains(&file) && host.exists(&file) && host.remove(&file)? {
                    removed.push(file);
                }
            }
            if !keep.iter().any(|k| k.starts_with(&dir)) {
                host.remove_empty_dir(&dir)?;
            }
        }
    }
    for path in &removed {
        log::info!("removed {} (left by the bash nvidia-tuned)", path.display());
    }
    Ok(removed)
}

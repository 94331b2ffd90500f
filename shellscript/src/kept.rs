// SPDX-License-Identifier: Apache-2.0
//! The uninstall scripts, kept on the node. Older operators run uninstall from a
//! stub package, without the configMap: the `uninstall.sh` and `uninstall_check.sh`
//! of the SCR would then be missing exactly when they are needed. So every other
//! stage keeps a copy of each (or removes the copy when the SCR no longer has the
//! key) under `/var/lib/skyhook-packages/shellscript/<name>/`; uninstall and
//! uninstall-check run the configMap's script when there is one (current operators)
//! and the kept copy otherwise. A successful uninstall-check removes the copies.

use std::path::PathBuf;

use skyhook_core::{Mode, Result, Step};

use crate::input::script;

/// The stages whose scripts are kept.
pub const KEPT: [Mode; 2] = [Mode::Uninstall, Mode::UninstallCheck];

/// Where the script of `mode` is kept, as a host path.
pub fn path(step: &Step, mode: Mode) -> PathBuf {
    step.state().dir().join(script::key(mode))
}

/// Outside the uninstall stages: makes the kept copies match the configMap.
pub fn refresh(step: &Step) -> Result<()> {
    if KEPT.contains(&step.mode()) {
        return Ok(());
    }
    for mode in KEPT {
        let kept = path(step, mode);
        match step.configmaps.bytes(&script::key(mode)) {
            Some(raw) => {
                step.state().save_file(&script::key(mode), raw)?;
            }
            None => {
                step.host.remove(&kept)?;
            }
        }
    }
    remove_empty_dirs(step)
}

/// The script of an uninstall stage from the copy kept when the configMap lacks
/// it: its bytes and its real path; `None` when nothing is kept either.
pub fn script(step: &Step) -> Result<Option<(Vec<u8>, PathBuf)>> {
    if !KEPT.contains(&step.mode()) {
        return Ok(None);
    }
    let kept = path(step, step.mode());
    let Some(raw) = step.host.read(&kept)? else {
        return Ok(None);
    };
    log::info!(
        "no configMap key {:?} (older operators uninstall without the configMap): running the copy kept at {} \
         when the SCR last had it",
        script::key(step.mode()),
        kept.display()
    );
    Ok(Some((raw, step.host.path(&kept)?)))
}

/// After a successful uninstall-check: the copies are no longer needed.
pub fn forget(step: &Step) -> Result<()> {
    for mode in KEPT {
        step.host.remove(path(step, mode))?;
    }
    remove_empty_dirs(step)
}

fn remove_empty_dirs(step: &Step) -> Result<()> {
    step.state().prune()
}

// SPDX-License-Identifier: Apache-2.0
//! Nodes tuned by the bash package (1.x), and files at this package's paths that no
//! state records (the bash package's, or those of a run killed before it saved).
//!
//! The bash package wrote, for package name `<name>`:
//! - `/etc/sysctl.d/999-<name>-tuning.conf`: `sysctl.conf` verbatim (values set
//!   live with `sysctl -p`; their earlier values were never recorded);
//! - `/etc/security/limits.d/999-<name>-tuning.conf`: `* hard <item> <value>` lines;
//! - `session required pam_limits.so` appended to each `/etc/pam.d/common-session*`
//!   that lacked that exact text;
//! - `/etc/systemd/system/<unit>.service.d/999-<name>-tuning.conf`: each
//!   `service_<unit>.conf` verbatim (`<unit>` cut at the first `_` or `.`);
//! - `/etc/default/grub.d/999-<name>-tuning.cfg`: `GRUB_CMDLINE_LINUX_DEFAULT=" <args>"`,
//!   replacing the distribution's default, then `update-grub`.
//!
//! This package before 2.1.0 used the same `999-` names for the last three files.
//! Since 2.1.0 every file is named `zz-skyhook-<name>-tuning.*`, which is read after
//! the others of its directory.
//!
//! The upgrade takes all of it over: the files become this package's (config then
//! writes them under the new names and removes the old ones), the pam_limits lines
//! are recorded as added, and the sysctl and user limits files are moved to their
//! new names at once (config moves the service and GRUB drop-ins, reporting the
//! restart or reboot that asks for).

use std::path::{Path, PathBuf};

use skyhook_core::runtime::context::PreviousVersion;
use skyhook_core::{Checklist, Outcome, Result, Step};

use crate::ledger::{self, Ledger};
use crate::pam;
use crate::paths::{FileKind, Managed, Paths, SYSTEMD_DIR};
use crate::state::State;

/// Every file of this entry on the node, at the paths this package or the bash
/// package uses, that exists, with its kind.
pub fn scan(host: &skyhook_core::Host, paths: &Paths) -> Result<Vec<Managed>> {
    let managed = |path: PathBuf, kind: FileKind| Managed { path, kind };
    let mut candidates = vec![
        managed(paths.sysctl(), FileKind::Sysctl),
        managed(paths.ulimit(), FileKind::Limits),
        managed(paths.grub(), FileKind::Grub),
    ];
    let dirs = host.list_dir(SYSTEMD_DIR)?;
    let dropins = |file: &str| -> Vec<Managed> {
        dirs.iter()
            .filter(|d| d.ends_with(".d"))
            .map(|d| {
                let kind = match d.strip_suffix(".service.d") {
                    Some(unit) if !unit.is_empty() => FileKind::DropIn(unit.to_string()),
                    _ => FileKind::Other,
                };
                managed(Path::new(SYSTEMD_DIR).join(d).join(file), kind)
            })
            .collect()
    };
    candidates.extend(dropins(&paths.dropin_file_name()));
    for name in &paths.legacy_names {
        candidates.push(managed(Paths::legacy_sysctl(name), FileKind::Sysctl));
        candidates.push(managed(Paths::legacy_ulimit(name), FileKind::Limits));
        candidates.push(managed(Paths::legacy_grub(name), FileKind::Grub));
        candidates.extend(dropins(&Paths::legacy_dropin_file_name(name)));
    }
    candidates.sort_by(|a, b| a.path.cmp(&b.path));
    candidates.dedup_by(|a, b| a.path == b.path);
    let mut found: Vec<Managed> = candidates.into_iter().filter(|m| host.exists(&m.path)).collect();
    found.extend(crate::modprobe::on_node(host, paths)?);
    Ok(found)
}

/// Whether the user limits file at `path` was written by the bash package (it
/// lacks this package's header).
fn is_bash_limits(host: &skyhook_core::Host, paths: &Paths, path: &Path) -> Result<bool> {
    Ok(host
        .read_to_string(path)?
        .is_some_and(|t| !t.starts_with(&paths.comment(crate::ulimit::KEY))))
}

/// Takes over what [`scan`] finds and `state` does not record: the file becomes
/// this package's; a drop-in directory holding nothing else becomes removable; the
/// bash package's pam_limits lines are recorded. Returns whether anything was new.
pub fn adopt(host: &skyhook_core::Host, paths: &Paths, state: &mut State) -> Result<bool> {
    let mut adopted = false;
    for Managed { path: file, kind } in scan(host, paths)? {
        if kind == FileKind::Limits && is_bash_limits(host, paths, &file)? {
            pam::adopt_bash_lines(host, &paths.name)?;
        }
        if state.footprint.files.contains(&file) {
            continue;
        }
        log::info!(
            "taking over {} ({}), left by an earlier version of this package",
            file.display(),
            kind.describe()
        );
        state.footprint.adopt(&file);
        if let Some(dir) = file.parent()
            && kind.unit().is_some()
            && host.list_dir(dir)?.len() == 1
        {
            state.footprint.adopt_dir(dir);
        }
        adopted = true;
    }
    Ok(adopted)
}

/// upgrade: migrates a node from the bash package (or any earlier version).
///
/// The migration's intent (the files taken over, the version migrated from) is
/// saved before the first change, and every later step is decided from what is on
/// the node, so a rerun after a kill at any instant finishes the migration exactly
/// as an uninterrupted run does.
pub fn upgrade(step: &Step, paths: &Paths) -> Result<Outcome> {
    let host = &step.host;
    let previous = step
        .ctx
        .upgrade
        .as_ref()
        .map_or(PreviousVersion::Unknown, |u| u.previous.clone());
    log::info!("upgrading from {previous}");
    let store = step.state();
    let mut state: State = store.load()?;
    if adopt(host, paths, &mut state)? && state.migrated_from.is_none() {
        state.migrated_from = Some(previous.to_string());
    }
    if !state.is_empty() {
        store.save(&state)?;
    }
    move_to_new_names(step, paths, &mut state)?;
    if state.is_empty() {
        log::info!("nothing of an earlier version found on this node: nothing to migrate");
        store.clear()?;
    } else {
        store.save(&state)?;
    }
    Ok(Outcome::done())
}

/// The files upgrade moves from their name before 2.1.0 (`999-…`, the bash
/// package's too) to the name that is read last, for each name of this entry: the
/// sysctl file and the user limits file, which change nothing running (the values
/// are live already; limits apply to the sessions opened next). Service drop-ins and
/// the GRUB drop-in are moved by config, which reports the restart or the
/// regeneration and reboot that asks for.
fn moved_by_upgrade(paths: &Paths) -> Vec<(PathBuf, PathBuf, FileKind)> {
    paths
        .legacy_names
        .iter()
        .flat_map(|name| {
            [
                (Paths::legacy_sysctl(name), paths.sysctl(), FileKind::Sysctl),
                (Paths::legacy_ulimit(name), paths.ulimit(), FileKind::Limits),
            ]
        })
        .collect()
}

/// Moves each file of [`moved_by_upgrade`] to its new name: writes it there (claimed
/// and saved first) unless a file is there, then removes the old one and forgets
/// it, also when a killed run already removed it.
fn move_to_new_names(step: &Step, paths: &Paths, state: &mut State) -> Result<()> {
    let host = &step.host;
    for (old, new, kind) in moved_by_upgrade(paths) {
        if let Some(content) = host.read(&old)?
            && !host.exists(&new)
        {
            state.footprint.claim(host, &new);
            step.state().save(state)?;
            host.write(&new, &content, 0o644)?;
            log::info!(
                "moved {} ({}) to {}, which is read after the other files there",
                old.display(),
                kind.describe(),
                new.display()
            );
        }
        state.footprint.remove(host, &old)?;
    }
    Ok(())
}

/// upgrade-check: nothing of the bash package is left that this package does not
/// know about, and its sysctl file is out of the way.
pub fn upgrade_check(step: &Step, paths: &Paths) -> Result<Outcome> {
    let host = &step.host;
    let state: State = step.state().load()?;
    let mut c = Checklist::new();
    for (old, new, kind) in moved_by_upgrade(paths) {
        c.expect(!host.exists(&old), || {
            format!(
                "{} ({}) still has its old name (the bash package's, and this package's before 2.1.0), which \
                 is read before files such as {}, which then win; upgrade moves it to {}: run upgrade again",
                old.display(),
                kind.describe(),
                if kind == FileKind::Sysctl {
                    "cloud-optimization.conf"
                } else {
                    "nofile.conf"
                },
                new.display()
            )
        });
    }
    for Managed { path: file, kind } in scan(host, paths)? {
        c.expect(state.footprint.files.contains(&file), || {
            format!(
                "{} is not recorded in {}: config would not remove it when its key goes; run upgrade again",
                file.display(),
                step.state().file().display()
            )
        });
        if kind == FileKind::Limits && is_bash_limits(host, paths, &file)? {
            let ledger: Ledger = ledger::store(host).load()?;
            let bash_line = host.list_dir("/etc/pam.d")?.iter().any(|f| {
                f.starts_with("common-session")
                    && host
                        .read_to_string(Path::new("/etc/pam.d").join(f))
                        .ok()
                        .flatten()
                        .is_some_and(|t| t.lines().any(|l| l == pam::BASH_LINE))
            });
            c.expect(!bash_line || ledger.users.contains(&paths.name), || {
                "the pam_limits line the bash package added to /etc/pam.d/common-session* is not recorded: \
                 uninstall would leave it; run upgrade again"
                    .to_string()
            });
        }
    }
    c.finish()?;
    Ok(Outcome::done())
}

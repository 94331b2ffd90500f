// SPDX-License-Identifier: Apache-2.0
//! config: make the node match the configMap, exactly, all or nothing.
//!
//! 1. Parse and validate every key, and check every sysctl key against the kernel:
//!    any problem is bad input (exit 2) and nothing changes.
//! 2. Plan: files to write and to remove (what an earlier config or the bash
//!    package wrote and the configMap no longer lists), kernel parameters to set
//!    live and to restore, kernel arguments, pam_limits. A host without GRUB is
//!    refused here, still before any change.
//! 3. Record the intent in the state (claimed files and directories, the values
//!    from before, pending daemon-reload and boot regeneration), so a run killed
//!    half way is finished by the next one.
//! 4. Set kernel parameters live (undone if the kernel refuses one), write and
//!    remove files, pam_limits, one `daemon-reload` if any drop-in changed, the kernel
//!    arguments with one boot regeneration; record the result.
//!
//! Nothing differing means nothing written and nothing run. The end of the log says
//! which interrupt each change needs.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};

use skyhook_core::boot::OwnArgs;
use skyhook_core::error::bad_line;
use skyhook_core::sysctl::{self as ksysctl, Key};
use skyhook_core::systemd::Systemd;
use skyhook_core::{Error, Host, HostError, Interrupt, Outcome, Result, Step};

use crate::grub;
use crate::input::Desired;
use crate::legacy;
use crate::paths::Paths;
use crate::shared;
use crate::state::{LiveChange, State};
use crate::sysctl::{self, Live};

/// What removing some of the package's files asks for.
#[derive(Debug, Default)]
pub struct Removed {
    /// Units whose drop-in went: daemon-reload, and a restart of each.
    pub units: BTreeSet<String>,
    /// A GRUB drop-in went: the boot configuration must be regenerated.
    pub grub: bool,
}

/// Removes `files` (recorded in `state`), pruning the directories the package created.
pub fn remove_files(host: &Host, state: &mut State, files: &[PathBuf]) -> Result<Removed> {
    let mut removed = Removed::default();
    for f in files {
        if state.footprint.remove(host, f)? {
            log::info!("removed {}", f.display());
            if let Some(unit) = Paths::unit_of(f) {
                removed.units.insert(unit);
            }
            if f.starts_with(skyhook_core::boot::defaults::DROP_IN_DIR) {
                removed.grub = true;
            }
        }
    }
    Ok(removed)
}

/// Puts back the value a kernel parameter had before this package changed it,
/// unless someone else changed it since (then it is left alone, with a warning).
pub fn restore_live(host: &Host, key: &str, change: &LiveChange) -> Result<()> {
    let key = Key::parse(key).map_err(|why| Error::action(format!("state holds a bad sysctl key {key:?}: {why}")))?;
    match ksysctl::read(host, &key)? {
        Some(now) if ksysctl::same_value(&now, &change.set) => match ksysctl::write(host, &key, &change.original) {
            Ok(()) => log::info!("{key}: restored {:?} (was {:?})", change.original, change.set),
            Err(e) => log::warn!("{key}: cannot restore {:?}: {e}", change.original),
        },
        Some(now) => log::warn!(
            "{key} is {now:?}, not the {:?} this package set: changed by something else since, left as it is",
            change.set
        ),
        None => log::info!("{key} no longer exists in this kernel: nothing to restore"),
    }
    Ok(())
}

/// A kernel parameter to set live.
struct Set<'a> {
    live: &'a Live,
    current: String,
}

/// The kernel's refusal of a value, as the operator must read it.
fn refusal(live: &Live, e: HostError) -> Error {
    let a = &live.entry.a;
    let invalid = match &e {
        HostError::Io { source, .. } => {
            source.kind() == std::io::ErrorKind::InvalidInput || matches!(source.raw_os_error(), Some(34 | 75))
        }
        _ => false,
    };
    if invalid {
        Error::input(bad_line(
            sysctl::KEY,
            a.line,
            &live.entry.text,
            format!(
                "the kernel refused {} = {}: {e}; nothing on the node was changed",
                a.key, a.value
            ),
        ))
    } else {
        Error::action(format!(
            "cannot set {} (configMap key {:?} line {}): {e}; the values set before it were put back and nothing \
             else was changed",
            a.key,
            sysctl::KEY,
            a.line
        ))
    }
}

/// Sets `sets` live; on a refusal (of a key without `-`), puts back what was set and fails.
fn apply_live(host: &Host, sets: &[Set<'_>], state: &mut State, before: &State) -> Result<usize> {
    let mut done: Vec<&Set<'_>> = Vec::new();
    for s in sets {
        let a = &s.live.entry.a;
        match ksysctl::write(host, &a.key, &a.value) {
            Ok(()) => done.push(s),
            Err(e) if a.ignore_failure => {
                log::warn!(
                    "{} line {}: cannot set {} = {}: {e}; ignored as its '-' prefix asks",
                    sysctl::KEY,
                    a.line,
                    a.key,
                    a.value
                );
                let k = a.key.as_path_str();
                match before.sysctl.get(k) {
                    Some(old) => state.sysctl.insert(k.to_string(), old.clone()),
                    None => state.sysctl.remove(k),
                };
            }
            Err(e) => {
                for d in done.iter().rev() {
                    if let Err(e) = ksysctl::write(host, &d.live.entry.a.key, &d.current) {
                        log::error!("{}: cannot put back {:?}: {e}", d.live.entry.a.key, d.current);
                    }
                }
                return Err(refusal(s.live, e));
            }
        }
    }
    Ok(done.len())
}

/// config.
pub fn config(step: &Step) -> Result<Outcome> {
    let host = &step.host;
    let paths = Paths::from_ctx(&step.ctx);
    let desired = Desired::parse(&step.configmaps)?;
    let live = match &desired.sysctl {
        Some(c) => sysctl::read_live(host, c)?,
        None => Vec::new(),
    };
    let store = step.state();
    let before: State = store.load()?;
    let mut state = before.clone();
    legacy::adopt(host, &paths, &mut state)?;

    // Plan.
    let files = desired.files(&paths);
    let grub_path = paths.grub();
    let mut writes: Vec<(&PathBuf, &str, &str)> = Vec::new();
    for (path, (key, content)) in &files {
        if !host.has_content(path, content.as_bytes(), 0o644)? {
            writes.push((path, key, content));
        }
    }
    let removes: Vec<PathBuf> = state
        .footprint
        .files
        .iter()
        .filter(|p| !files.contains_key(*p) && **p != grub_path)
        .cloned()
        .collect();
    let sets: Vec<Set<'_>> = live
        .iter()
        .filter_map(|l| {
            l.current
                .as_ref()
                .filter(|c| !ksysctl::same_value(c, &l.entry.a.value))
                .map(|c| Set {
                    live: l,
                    current: c.clone(),
                })
        })
        .collect();
    let wanted_keys: HashSet<&str> = live.iter().map(|l| l.entry.a.key.as_path_str()).collect();
    let restores: BTreeMap<String, LiveChange> = state
        .sysctl
        .iter()
        .filter(|(k, _)| !wanted_keys.contains(k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let header = paths.header(grub::KEY);
    let legacy_grub = removes
        .iter()
        .any(|p| p.starts_with(skyhook_core::boot::defaults::DROP_IN_DIR));
    let boot = if !desired.grub.is_empty()
        || !state.grub.is_empty()
        || host.exists(&grub_path)
        || legacy_grub
        || state.pending.boot_config
    {
        Some(grub::boot_config(host)?)
    } else {
        None
    };
    let own = |boot| OwnArgs {
        host,
        boot,
        drop_in: &grub_path,
        header: &header,
    };
    let grub_change = match &boot {
        Some(b) => !own(b).is_current(&state.grub, &desired.grub)?,
        None => false,
    };
    let changed_units: BTreeSet<String> = writes
        .iter()
        .filter_map(|(p, _, _)| Paths::unit_of(p))
        .chain(removes.iter().filter_map(|p| Paths::unit_of(p)))
        .collect();

    // Record the intent.
    let mut intent = state.clone();
    for (p, _, _) in &writes {
        intent.footprint.claim(host, p);
    }
    if !desired.grub.is_empty() && matches!(boot, Some(skyhook_core::boot::BootConfig::GrubDropIns { .. })) {
        intent.footprint.claim(host, &grub_path);
    }
    for s in &sets {
        let a = &s.live.entry.a;
        intent
            .sysctl
            .entry(a.key.as_path_str().to_string())
            .and_modify(|c| c.set = a.value.clone())
            .or_insert_with(|| LiveChange {
                set: a.value.clone(),
                original: s.current.clone(),
            });
    }
    intent.pending.daemon_reload |= !changed_units.is_empty();
    intent.pending.boot_config |= grub_change || legacy_grub;
    store.save_or_clear(&intent)?;

    // Act: kernel parameters first, so that a refused value changes nothing else.
    let applied = match apply_live(host, &sets, &mut intent, &before) {
        Ok(n) => n,
        Err(e) => {
            store.save_or_clear(&before)?;
            return Err(e);
        }
    };
    for (k, change) in &restores {
        restore_live(host, k, change)?;
        intent.sysctl.remove(k);
    }
    for (p, key, content) in &writes {
        host.write(p, content.as_bytes(), 0o644)?;
        log::info!("wrote {} (configMap key {key})", p.display());
    }
    let removed = remove_files(host, &mut intent, &removes)?;
    shared::hand_over_dirs(host, &Default::default())?;
    let pam_changed = if desired.ulimit.is_some() {
        shared::ensure(host, &paths.name)?
    } else {
        shared::release(host, &paths.name)?
    };
    if intent.pending.daemon_reload {
        Systemd::new(host).daemon_reload()?;
        intent.pending.daemon_reload = false;
    }
    let mut grub_changed = false;
    if let Some(b) = &boot
        && intent.pending.boot_config
    {
        if !grub::apply(&own(b), &mut intent, &desired.grub, |s| store.save_or_clear(s))? {
            b.regenerate(host)?;
        }
        grub_changed = true;
        if desired.grub.is_empty() {
            intent.footprint.remove(host, &grub_path)?;
        }
        intent.pending.boot_config = false;
    }
    store.save_or_clear(&intent)?;

    // Report what each change needs.
    let mut needs = Vec::new();
    let sysctl_written = writes.iter().any(|(_, key, _)| *key == sysctl::KEY);
    if applied > 0 || !restores.is_empty() || sysctl_written {
        log::info!(
            "{}: {applied} kernel parameter(s) set live, {} put back{}: applied live, no interrupt needed",
            sysctl::KEY,
            restores.len(),
            if sysctl_written { ", drop-in written" } else { "" }
        );
        needs.push(Interrupt::NoOp);
    }
    for (p, key, _) in &writes {
        match Paths::unit_of(p) {
            Some(unit) => {
                let i = Interrupt::service([unit.as_str()]);
                log::info!("{key}: drop-in for {unit}.service changed: needs {i}");
                needs.push(i);
            }
            None if *key == crate::ulimit::KEY => {
                log::info!("{key}: applies to sessions opened from now on: no interrupt needed")
            }
            None => {}
        }
    }
    for unit in &removed.units {
        let i = Interrupt::service([unit.as_str()]);
        log::info!("drop-in for {unit}.service removed (its key is gone): needs {i}");
        needs.push(i);
    }
    if pam_changed {
        log::info!("pam_limits session stack changed: applies to sessions opened from now on, no interrupt needed");
    }
    if grub_changed && desired.grub.is_empty() {
        log::warn!(
            "{}",
            skyhook_core::interrupt::removed_key_keeps_until_reboot(grub::KEY, "this package's kernel arguments")
        );
        needs.push(Interrupt::Reboot);
    } else if grub_changed {
        log::info!(
            "{}: kernel command line changed: needs {}",
            grub::KEY,
            Interrupt::Reboot
        );
        needs.push(Interrupt::Reboot);
    }
    let nothing = writes.is_empty()
        && removes.is_empty()
        && applied == 0
        && restores.is_empty()
        && !pam_changed
        && !grub_changed
        && changed_units.is_empty();
    if nothing {
        log::info!("the node already matches the configMap: nothing written, nothing run");
    }
    Ok(Outcome::needs(Interrupt::covering(needs)))
}

/// Whether `path` is one of the package's own kinds of file (for messages).
pub fn describe(path: &Path) -> &'static str {
    if Paths::unit_of(path).is_some() {
        "service drop-in"
    } else if path.starts_with("/etc/sysctl.d") {
        "sysctl file"
    } else if path.starts_with("/etc/security") {
        "user limits file"
    } else {
        "GRUB drop-in"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sysctl::SysctlConf;

    fn live() -> Live {
        let conf = SysctlConf::parse("vm.swappiness = 10\nvm.dirty_ratio = lots\n").unwrap();
        Live {
            entry: conf.entries[1].clone(),
            current: Some("20".into()),
        }
    }

    #[test]
    fn a_value_the_kernel_refuses_is_bad_input_naming_the_line() {
        let e = refusal(
            &live(),
            HostError::io(
                "write",
                "/proc/sys/vm/dirty_ratio",
                std::io::Error::from_raw_os_error(22),
            ),
        );
        assert_eq!(e.exit_code(), 2);
        let m = e.to_string();
        assert!(
            m.contains("\"sysctl.conf\" line 2 (\"vm.dirty_ratio = lots\"): the kernel refused vm.dirty_ratio = lots"),
            "{m}"
        );
    }

    #[test]
    fn a_write_the_host_forbids_is_an_action_failure() {
        let e = refusal(
            &live(),
            HostError::io(
                "write",
                "/proc/sys/vm/dirty_ratio",
                std::io::Error::from_raw_os_error(1),
            ),
        );
        assert_eq!(e.exit_code(), 1);
        assert!(e.to_string().contains("values set before it were put back"), "{e}");
    }
}

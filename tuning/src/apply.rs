// SPDX-License-Identifier: Apache-2.0
//! config: make the node match the configMap, exactly, all or nothing.
//!
//! 1. Parse and validate every key, and check every sysctl key against the kernel:
//!    any problem is bad input (exit 2) and nothing changes. A `hugepagesz=` or
//!    `default_hugepagesz=` of `grub.conf` the running kernel cannot register is
//!    refused (exit 1: the node decides), also before any change.
//! 2. Plan: files to write and to remove (what an earlier config or the bash
//!    package wrote and the configMap no longer lists), kernel parameters to set
//!    live and to restore, kernel arguments, pam_limits. A host without GRUB is
//!    refused here, still before any change, and so is a preset's modprobe.d file
//!    that someone else wrote ([`crate::modprobe::refuse_foreign`]).
//! 3. Record the intent in the state (claimed files and directories, the values
//!    from before, pending daemon-reload and boot regeneration), so a run killed
//!    half way is finished by the next one.
//! 4. Set kernel parameters live (undone if the kernel refuses one), write and
//!    remove files, pam_limits, one `daemon-reload` if any drop-in changed, the kernel
//!    arguments with one boot regeneration, then unload the modules `modprobe.conf`
//!    keeps out that nothing uses ([`crate::modules`]); record the result.
//!
//! Nothing differing means nothing written and nothing run. The end of the log says
//! which interrupt each change needs.

use skyhook_core::boot::hugepages;
use skyhook_core::host::systemd::Systemd;
use skyhook_core::records::state::StateStore;
use skyhook_core::{Host, Interrupt, Outcome, Result, Step};

use crate::files::{self, Removed};
use crate::input::Desired;
use crate::ledger::{self, Ledger};
use crate::paths::{FileKind, Paths};
use crate::plan::{BootPlan, Plan};
use crate::state::State;
use crate::{dirs, grub, legacy, live, modprobe, modules, pam, sysctl};

/// config, with the files named by `paths`.
pub fn config(step: &Step, paths: &Paths) -> Result<Outcome> {
    let host = &step.host;
    let desired = Desired::parse(&step.configmaps)?;
    hugepages::refuse_unregistrable(host, grub::KEY, &desired.grub)?;
    let live = live::read(host, desired.sysctl.as_ref())?;
    let store = step.state();
    let before: State = store.load()?;
    let mut state = before.clone();
    legacy::adopt(host, paths, &mut state)?;
    if desired.modprobe.is_some() {
        modprobe::refuse_foreign(host, paths, &state)?;
    }

    let files = desired.files(paths);
    let plan = Plan::compute(step, paths, &desired, &files, &live, &state)?;
    let me = paths.entry();
    let held = ledger::store(host).load::<Ledger>()?.sysctl;
    let mut intent = plan.intent(host, &desired, &state, &held, &me);
    store.save_or_clear(&intent)?;
    // Kernel parameters first, so that a refused value changes nothing else.
    let applied = match live::apply(host, &plan.sets, &plan.restores, &mut intent, &before, &me) {
        Ok(n) => n,
        Err(e) => {
            store.save_or_clear(&before)?;
            return Err(e);
        }
    };
    let done = apply(host, &store, paths, &desired, &plan, &mut intent, applied)?;
    store.save_or_clear(&intent)?;
    Ok(Outcome::needs(report(&plan, &done)))
}

/// What applying a plan did.
struct Done {
    /// Kernel parameters set live.
    applied: usize,
    /// What the removals ask for.
    removed: Removed,
    /// A PAM session stack file changed.
    pam_changed: bool,
    /// The kernel arguments changed in the boot configuration.
    grub_changed: bool,
    /// The change took every kernel argument of this entry away (grub.conf removed).
    grub_removed: bool,
    /// What became of the loaded modules `modprobe.conf` keeps out.
    unloads: modules::Unloads,
    /// Modules given options by a modprobe.d file written now that are loaded:
    /// the options apply when they are next loaded.
    options_loaded: Vec<String>,
}

/// Carries out the rest of `plan` once its kernel parameters are set and put back
/// (`applied` of them set), recording the result in `intent`: files,
/// pam_limits, one daemon-reload, the kernel arguments with one boot regeneration.
fn apply(
    host: &Host,
    store: &StateStore<'_>,
    paths: &Paths,
    desired: &Desired,
    plan: &Plan<'_>,
    intent: &mut State,
    applied: usize,
) -> Result<Done> {
    for w in &plan.writes {
        host.write(w.path, w.file.content.as_bytes(), 0o644)?;
        log::info!("wrote {} (configMap key {})", w.path.display(), w.file.key);
    }
    let removed = files::remove(host, intent, &plan.removes)?;
    dirs::hand_over(host, &Default::default())?;
    let pam_changed = pam::sync(host, &paths.name, desired.ulimit.is_some())?;
    if intent.pending.daemon_reload {
        Systemd::new(host).daemon_reload()?;
        intent.pending.daemon_reload = false;
    }
    let grub_changed = match &plan.boot {
        Some(b) if intent.pending.boot_config => apply_boot(host, store, b, desired, intent)?,
        _ => false,
    };
    // Last, once the modprobe.d file is in place: nothing can load them again.
    let (unloads, options_loaded) = match &desired.modprobe {
        Some(m) => {
            let written = plan.writes.iter().any(|w| w.file.kind == FileKind::Modprobe);
            let loaded = modules::loaded(host)?;
            let options_loaded = match written {
                true => m
                    .with_options()
                    .into_iter()
                    .filter(|o| modules::find(&loaded, o).is_some())
                    .map(str::to_string)
                    .collect(),
                false => Vec::new(),
            };
            (modules::unload_kept_out(host, m)?, options_loaded)
        }
        None => (modules::Unloads::default(), Vec::new()),
    };
    Ok(Done {
        applied,
        removed,
        pam_changed,
        grub_changed,
        grub_removed: grub_changed && desired.grub.is_empty(),
        unloads,
        options_loaded,
    })
}

/// Puts the wanted kernel arguments in the boot configuration and regenerates it
/// (once); the pending regeneration is cleared only after it succeeded.
fn apply_boot(
    host: &Host,
    store: &StateStore<'_>,
    b: &BootPlan,
    desired: &Desired,
    intent: &mut State,
) -> Result<bool> {
    if !grub::apply(&b.own(host), intent, &desired.grub, |s| store.save_or_clear(s))? {
        b.config.regenerate(host)?;
    }
    if desired.grub.is_empty() {
        intent.footprint.remove(host, &b.drop_in)?;
    }
    intent.pending.boot_config = false;
    Ok(true)
}

/// Logs what each change needs and returns the interrupt covering them all.
fn report(plan: &Plan<'_>, done: &Done) -> Interrupt {
    let mut needs = Vec::new();
    let sysctl_written = plan.writes.iter().any(|w| w.file.kind == FileKind::Sysctl);
    if done.applied > 0 || !plan.restores.is_empty() || sysctl_written {
        log::info!(
            "{}: {} kernel parameter(s) set live, {} put back{}: applied live, no interrupt needed",
            sysctl::KEY,
            done.applied,
            plan.restores.len(),
            if sysctl_written { ", drop-in written" } else { "" }
        );
        needs.push(Interrupt::NoOp);
    }
    for w in &plan.writes {
        match &w.file.kind {
            FileKind::DropIn(unit) => {
                let i = Interrupt::service([unit.as_str()]);
                log::info!("{}: drop-in for {unit}.service changed: needs {i}", w.file.key);
                needs.push(i);
            }
            FileKind::Limits => log::info!(
                "{}: applies to sessions opened from now on: no interrupt needed",
                w.file.key
            ),
            FileKind::Modprobe => {
                log::info!(
                    "{}: {} written: applies to modules loaded from now on",
                    w.file.key,
                    w.path.display()
                );
                needs.push(Interrupt::NoOp);
            }
            FileKind::Sysctl | FileKind::Grub | FileKind::Other => {}
        }
    }
    if !done.unloads.removed.is_empty() {
        needs.push(Interrupt::NoOp);
    }
    for (module, why) in &done.unloads.left {
        log::info!(
            "{}: {module} stays loaded until the node reboots ({why}): needs {}",
            modprobe::KEY,
            Interrupt::Reboot
        );
        needs.push(Interrupt::Reboot);
    }
    for module in &done.options_loaded {
        log::info!(
            "{}: {module} is loaded: its options apply when it is next loaded: needs {} (or reload the module)",
            modprobe::KEY,
            Interrupt::Reboot
        );
        needs.push(Interrupt::Reboot);
    }
    if done.removed.modprobe {
        log::info!(
            "modprobe.d file removed (its key is gone): the modules it kept out load again on demand (none is loaded \
             now), loaded modules keep their options until reloaded: no interrupt needed"
        );
    }
    for unit in &done.removed.units {
        let i = Interrupt::service([unit.as_str()]);
        if plan.writes.iter().any(|w| w.file.kind.unit() == Some(unit.as_str())) {
            log::info!(
                "drop-in for {unit}.service moved from its name before 2.1.0 (999-…) to one read after \
                 override.conf and the other drop-ins: needs {i}"
            );
        } else {
            log::info!("drop-in for {unit}.service removed (its key is gone): needs {i}");
        }
        needs.push(i);
    }
    if done.pam_changed {
        log::info!("pam_limits session stack changed: applies to sessions opened from now on, no interrupt needed");
    }
    if done.grub_changed && done.grub_removed {
        log::warn!(
            "{}",
            skyhook_core::runtime::interrupt::removed_key_keeps_until_reboot(
                grub::KEY,
                "this package's kernel arguments"
            )
        );
        needs.push(Interrupt::Reboot);
    } else if done.grub_changed {
        log::info!(
            "{}: kernel command line changed: needs {}",
            grub::KEY,
            Interrupt::Reboot
        );
        needs.push(Interrupt::Reboot);
    }
    if nothing_changed(plan, done) {
        log::info!("the node already matches the configMap: nothing written, nothing run");
    }
    Interrupt::covering(needs)
}

/// Whether config changed nothing at all.
fn nothing_changed(plan: &Plan<'_>, done: &Done) -> bool {
    plan.writes.is_empty()
        && plan.removes.is_empty()
        && done.applied == 0
        && plan.restores.is_empty()
        && !done.pam_changed
        && !done.grub_changed
        && plan.changed_units.is_empty()
        && done.unloads.removed.is_empty()
}

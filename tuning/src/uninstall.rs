// SPDX-License-Identifier: Apache-2.0
//! uninstall and uninstall-check: every file this package (or the bash package
//! under the same name) wrote goes, the kernel parameters it changed live get their
//! earlier values back, pam_limits goes if this package added it and no other tuning
//! entry needs it, systemd is reloaded and the boot configuration regenerated when
//! their files went, and the state is forgotten.

use skyhook_core::boot::{BootConfig, OwnArgs};
use skyhook_core::host::systemd::Systemd;
use skyhook_core::records::state::StateStore;
use skyhook_core::{Checklist, Host, Interrupt, Outcome, Result, Step};

use crate::ledger::{self, Ledger};
use crate::paths::{FileKind, Managed, Paths};
use crate::state::State;
use crate::{dirs, files, grub, legacy, live, pam};

/// uninstall.
pub fn uninstall(step: &Step, paths: &Paths) -> Result<Outcome> {
    let host = &step.host;
    let store = step.state();
    let mut state: State = store.load()?;
    // The ledger the entries share is read again below; a damaged one stops the
    // step here, before anything is undone.
    ledger::store(host).load::<Ledger>()?;
    legacy::adopt(host, paths, &mut state)?;
    let grub_path = paths.grub();
    let files: Vec<Managed> = state
        .footprint
        .files
        .iter()
        .filter(|p| **p != grub_path)
        .map(|p| paths.managed(p))
        .collect();
    let needs_boot = !state.grub.is_empty()
        || host.exists(&grub_path)
        || state.pending.boot_config
        || files.iter().any(|m| m.kind == FileKind::Grub);
    let boot = if needs_boot {
        Some(grub::boot_config(step)?)
    } else {
        None
    };

    // Record what must be finished if this run is interrupted.
    state.pending.daemon_reload |= files.iter().any(|m| m.kind.unit().is_some());
    state.pending.boot_config |= needs_boot;
    store.save_or_clear(&state)?;

    let changes = std::mem::take(&mut state.sysctl);
    live::give_back_all(host, &changes, &paths.entry())?;
    store.save_or_clear(&state)?;
    let removed = files::remove(host, &mut state, &files)?;
    pam::release(host, &paths.name)?;
    if state.pending.daemon_reload {
        Systemd::new(host).daemon_reload()?;
        state.pending.daemon_reload = false;
    }
    let mut needs: Vec<Interrupt> = removed.units.iter().map(|u| Interrupt::service([u.as_str()])).collect();
    if let Some(b) = &boot {
        remove_kernel_args(host, &store, paths, b, &mut state)?;
        needs.push(Interrupt::Reboot);
    }
    for u in &removed.units {
        log::info!("drop-in for {u}.service removed: the running service keeps its settings until it restarts");
    }
    if removed.modprobe {
        log::info!(
            "modprobe.d file removed: the modules it kept out load again on demand (none is loaded now), loaded \
             modules keep their options until reloaded"
        );
    }
    state.footprint.prune(host)?;
    dirs::hand_over(host, &state.footprint.dirs)?;
    if !state.footprint.files.is_empty() {
        log::warn!(
            "could not remove: {}",
            state
                .footprint
                .files
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    store.clear()?;
    Ok(Outcome::needs(Interrupt::covering(needs)))
}

/// Takes the entry's kernel arguments out of the boot configuration `b` and
/// regenerates it (once); the pending regeneration is cleared only after it succeeded.
fn remove_kernel_args(
    host: &Host,
    store: &StateStore<'_>,
    paths: &Paths,
    b: &BootConfig,
    state: &mut State,
) -> Result<()> {
    let grub_path = paths.grub();
    let header = paths.header(grub::KEY);
    let own = OwnArgs {
        host,
        boot: b,
        drop_in: &grub_path,
        header: &header,
    };
    if !grub::apply(&own, state, &[], |s| store.save_or_clear(s))? {
        b.regenerate(host)?;
    }
    state.footprint.remove(host, &grub_path)?;
    state.pending.boot_config = false;
    log::info!("kernel arguments removed from the boot configuration: the running kernel keeps them until a reboot");
    Ok(())
}

/// uninstall-check.
pub fn uninstall_check(step: &Step, paths: &Paths) -> Result<Outcome> {
    let host = &step.host;
    let store = step.state();
    let mut c = Checklist::new();
    for m in legacy::scan(host, paths)? {
        c.fail(format!(
            "{} ({}) is still there: run uninstall",
            m.path.display(),
            m.kind.describe()
        ));
    }
    c.expect(!store.exists(), || {
        format!(
            "{} still exists: uninstall did not finish (it records what is left to undo); run uninstall",
            store.file().display()
        )
    });
    let ledger: Ledger = ledger::store(host).load()?;
    if ledger.users.is_empty() {
        let marked = pam::marked(host)?;
        c.expect(marked.is_empty(), || {
            format!(
                "the pam_limits line this package added is still in {}: run uninstall",
                marked.join(", ")
            )
        });
    } else {
        c.skip("pam_limits: other tuning entries on this node still use it");
    }
    c.finish()?;
    Ok(Outcome::done())
}

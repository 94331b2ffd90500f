// SPDX-License-Identifier: Apache-2.0
//! uninstall and uninstall-check. Uninstall disables and removes this instance's
//! units and never unmounts: a live target stays mounted until the node is
//! recycled. It works from the receipt, else from the configMap, else (an older
//! operator's uninstall of an instance that never installed) it only sweeps units
//! carrying this instance's exact owner marker: a clean no-op.

use skyhook_core::error::excerpt;
use skyhook_core::host::systemd::Systemd;
use skyhook_core::{Checklist, Error, Host, Outcome, Result, Step};

use crate::apply::retire;
use crate::identity::Instance;
use crate::input::Input;
use crate::{mounts, receipt, unit};

/// Removes unit `name` when it is this instance's. Another owner's unit at a name
/// the receipt recorded fails (`strict`); at a name only the configMap gives, it is
/// left alone.
fn remove(host: &Host, instance: &Instance, name: &str, strict: bool) -> Result<()> {
    match unit::read(host, name)? {
        None => Ok(()),
        Some(text) if unit::is_owned_by(&text, instance) => retire(host, name),
        Some(_) if strict => Err(Error::action(format!(
            "{} no longer carries the owner marker of {}: refusing to remove another owner's unit; \
             find out who replaced it",
            unit::path(name),
            instance.id()
        ))),
        Some(_) => {
            log::info!("{} belongs to another owner: left alone", unit::path(name));
            Ok(())
        }
    }
}

/// Warns when `target` is still mounted.
fn warn_mounted(host: &Host, target: &str) -> Result<()> {
    if mounts::read(host)?.at(target).is_some() {
        log::warn!(
            "{} remains mounted on purpose (workloads may use it); recycle the node to complete the rollback",
            excerpt(target)
        );
    }
    Ok(())
}

/// Removes the directories config created (innermost first) that are still empty
/// directories and no mount point; one in use stays, said in the log.
fn remove_created(host: &Host, created: &[String]) -> Result<()> {
    if created.is_empty() {
        return Ok(());
    }
    let table = mounts::read(host)?;
    for dir in created.iter().rev() {
        if table.at(dir).is_some() || host.read_link(dir)?.is_some() {
            log::info!("{} is kept: it is a mount point or a link now", excerpt(dir));
        } else if host.remove_empty_dir(dir)? {
            log::info!("removed the directory {} that config created", excerpt(dir));
        } else if host.exists(dir) {
            log::info!("{} is kept: it is not empty", excerpt(dir));
        }
    }
    Ok(())
}

/// uninstall.
pub fn uninstall(step: &Step) -> Result<Outcome> {
    let instance = Instance::of(step)?;
    let host = &step.host;
    let store = receipt::store(host, &instance);
    let (target, name, strict, created) = match receipt::load(host, &instance)? {
        Some(mut r) => {
            if !r.uninstalling {
                r.uninstalling = true;
                store.save(&r)?;
            }
            (Some(r.target), Some(r.unit), true, r.created)
        }
        None => match Input::read(&step.configmaps)? {
            Some(i) => (Some(i.target), Some(i.unit), false, Vec::new()),
            None => (None, None, false, Vec::new()),
        },
    };
    if let Some(name) = &name {
        remove(host, &instance, name, strict)?;
    }
    for other in unit::owned(host, &instance)? {
        retire(host, &other)?;
    }
    Systemd::new(host).daemon_reload()?;
    if let Some(t) = &target {
        warn_mounted(host, t)?;
    }
    remove_created(host, &created)?;
    store.clear()?;
    match name {
        Some(n) => log::info!("removed the persistent definition {n} of {}", instance.id()),
        None => log::info!("no receipt and no configMap: {} installed nothing here", instance.id()),
    }
    Ok(Outcome::done())
}

/// uninstall-check: no receipt, no unit of this instance, the configMap's unit not
/// left enabled.
pub fn uninstall_check(step: &Step) -> Result<Outcome> {
    let instance = Instance::of(step)?;
    let host = &step.host;
    let mut c = Checklist::new();
    let store = receipt::store(host, &instance);
    c.expect(!store.exists(), || {
        format!(
            "the receipt {} still exists: run uninstall again",
            store.file().display()
        )
    });
    let owned = unit::owned(host, &instance)?;
    c.expect(owned.is_empty(), || {
        format!(
            "units of {} remain in {}: {}; run uninstall again",
            instance.id(),
            unit::UNIT_DIR,
            owned.join(", ")
        )
    });
    if let Some(input) = Input::read(&step.configmaps)? {
        if !host.exists(unit::path(&input.unit)) {
            c.expect(!Systemd::new(host).is_enabled(&input.unit)?, || {
                format!(
                    "{} is still enabled without its unit file: `systemctl disable {}`",
                    input.unit, input.unit
                )
            });
        }
        warn_mounted(host, &input.target)?;
    }
    c.finish()?;
    Ok(Outcome::done())
}

// SPDX-License-Identifier: Apache-2.0
//! apply, config and upgrade: prepare the persistent bind mount. Everything is
//! checked first (input: exit 2; the node: exit 1, every reason listed); then the
//! target directory, the unit, the retirement of this instance's previous unit, the
//! receipt, and `systemctl enable`. The unit is not started: the SCR's interrupt
//! activates it while workloads are drained.

use skyhook_core::error::{bounded_list, excerpt};
use skyhook_core::host::systemd::Systemd;
use skyhook_core::{Error, Host, Interrupt, Outcome, Result, Step};

use crate::identity::Instance;
use crate::input::Input;
use crate::receipt::{self, Receipt};
use crate::safety::{self, TargetState};
use crate::{mounts, unit};

/// Disables and removes this instance's unit `name` (never stops it: a live mount
/// stays mounted).
pub fn retire(host: &Host, name: &str) -> Result<()> {
    Systemd::new(host).disable(name).map_err(|e| {
        Error::action(format!(
            "could not disable {name} ({e}); its unit file and the receipt are kept so a rerun can finish"
        ))
    })?;
    host.remove(unit::path(name))?;
    log::info!("removed {}", unit::path(name));
    Ok(())
}

/// `target` and each of its ancestors that does not exist, outermost first: the
/// directories config creates for it.
fn missing_dirs(host: &Host, target: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut at = target;
    while !at.is_empty() && !host.exists(at) {
        out.push(at.to_string());
        at = at.rsplit_once('/').map_or("", |(parent, _)| parent);
    }
    out.reverse();
    out
}

/// apply / config / upgrade.
pub fn install(step: &Step) -> Result<Outcome> {
    let input = Input::parse(&step.configmaps)?;
    let instance = Instance::of(step)?;
    let host = &step.host;
    let table = mounts::read(host)?;
    let previous = receipt::load(host, &instance)?;

    let mut problems = mounts::source_problems(&table, &input);
    problems.extend(safety::path_change(&table, previous.as_ref(), &input));
    let state = safety::target(host, &table, &input, &mut problems)?;
    safety::unit_name(host, &instance, &input, &mut problems)?;
    if !problems.is_empty() {
        return Err(Error::action(format!(
            "refusing to prepare the bind mount {} -> {} (nothing was changed):\n{}",
            excerpt(&input.source),
            excerpt(&input.target),
            bounded_list(&problems).join("\n")
        )));
    }

    let store = receipt::store(host, &instance);
    let mut created = previous.as_ref().map(|r| r.created.clone()).unwrap_or_default();
    if state == (TargetState::Ready { create: true }) {
        // Recorded before they are made, so that a step killed in between still
        // knows them; the rest of an earlier receipt stays as it was until the unit
        // is written (a path change keeps its old target until then).
        for dir in missing_dirs(host, &input.target) {
            if !created.contains(&dir) {
                created.push(dir);
            }
        }
        let pending = match &previous {
            Some(p) => Receipt {
                created: created.clone(),
                ..p.clone()
            },
            None => Receipt {
                instance: instance.id(),
                source: input.source.clone(),
                target: input.target.clone(),
                unit: input.unit.clone(),
                uninstalling: false,
                created: created.clone(),
            },
        };
        store.save(&pending)?;
        host.create_dir(&input.target, 0o755)?;
    }
    host.write(
        unit::path(&input.unit),
        unit::render(&instance, &input)?.as_bytes(),
        0o644,
    )?;
    for other in unit::owned(host, &instance)? {
        if other != input.unit {
            retire(host, &other)?;
        }
    }
    store.save(&Receipt {
        instance: instance.id(),
        source: input.source.clone(),
        target: input.target.clone(),
        unit: input.unit.clone(),
        uninstalling: false,
        created,
    })?;
    let systemd = Systemd::new(host);
    systemd.daemon_reload()?;
    systemd.enable(&input.unit)?;
    if state == TargetState::Bound {
        log::info!(
            "{} already binds {} at {}: nothing to activate",
            input.unit,
            input.source,
            input.target
        );
        return Ok(Outcome::done());
    }
    log::info!(
        "prepared {} ({} at {}); the SCR's interrupt activates it (a restart of {} or a reboot)",
        input.unit,
        input.source,
        input.target,
        input.unit
    );
    Ok(Outcome::needs(Interrupt::service([input.unit])))
}

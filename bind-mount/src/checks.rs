// SPDX-License-Identifier: Apache-2.0
//! The checks. apply-, config- and upgrade-check verify the prepared definition
//! (source, receipt, unit text, enabled, target empty or already the bind mount,
//! never read-only); post-interrupt-check also verifies the live bind mount. They
//! verify, never repair, and list every unmet expectation.

use skyhook_core::error::excerpt;
use skyhook_core::host::systemd::Systemd;
use skyhook_core::{Checklist, Outcome, Result, Step};

use crate::identity::Instance;
use crate::input::Input;
use crate::{mounts, receipt, safety, unit};

/// The prepared checks, into `c`; returns the input for the active check.
fn prepared(step: &Step, c: &mut Checklist) -> Result<Input> {
    let input = Input::parse(&step.configmaps)?;
    let instance = Instance::of(step)?;
    let host = &step.host;
    let table = mounts::read(host)?;
    c.expect_none(mounts::source_problems(&table, &input));
    let r = receipt::load(host, &instance)?;
    c.expect(
        r.as_ref().is_some_and(|r| {
            !r.uninstalling && r.source == input.source && r.target == input.target && r.unit == input.unit
        }),
        || {
            format!(
                "the receipt of {} does not record {} -> {} ({}): run the action mode again",
                instance.id(),
                excerpt(&input.source),
                excerpt(&input.target),
                r.as_ref().map_or("none".into(), |r| format!(
                    "it records {} -> {}",
                    excerpt(&r.source),
                    excerpt(&r.target)
                ))
            )
        },
    );
    let want = unit::render(&instance, &input)?;
    match unit::read(host, &input.unit) {
        Err(e) => c.fail(e.to_string()),
        Ok(have) => {
            c.expect(have.as_deref() == Some(want.as_str()), || {
                format!(
                    "{} {}: run the action mode again",
                    unit::path(&input.unit),
                    if have.is_some() {
                        "differs from the desired unit"
                    } else {
                        "is missing"
                    }
                )
            });
        }
    }
    c.expect(Systemd::new(host).is_enabled(&input.unit)?, || {
        format!("{} is not enabled: run the action mode again", input.unit)
    });
    if table.at(&input.target).is_some() {
        c.expect(
            table.is_bind_of(&input.target, &input.source) && table.at(&input.target).is_some_and(|m| m.read_write()),
            || {
                format!(
                    "the mounted target {} is not the read-write bind mount of {}",
                    excerpt(&input.target),
                    excerpt(&input.source)
                )
            },
        );
    } else {
        if let Some(p) = mounts::read_only_problem(host, &table, &input.target) {
            c.fail(p);
        }
        c.expect(safety::is_empty_dir(host, &input.target)?, || {
            format!(
                "the inactive target {} is not an empty directory: activation would refuse (AssertDirectoryNotEmpty)",
                excerpt(&input.target)
            )
        });
    }
    Ok(input)
}

/// apply-check, config-check, upgrade-check: the prepared definition.
pub fn prepared_check(step: &Step) -> Result<Outcome> {
    let mut c = Checklist::new();
    prepared(step, &mut c)?;
    c.finish()?;
    Ok(Outcome::done())
}

/// post-interrupt-check: the prepared definition, the unit active and the target the
/// live bind mount of the source.
pub fn active_check(step: &Step) -> Result<Outcome> {
    let mut c = Checklist::new();
    let input = prepared(step, &mut c)?;
    match Systemd::new(&step.host).is_active(&input.unit)? {
        Some(active) => {
            c.expect(active, || {
                format!(
                    "{} is not active: see `systemctl status {}` (a non-empty target fails its assertion)",
                    input.unit, input.unit
                )
            });
        }
        None => c.skip(format!(
            "whether {} is active: systemd is not running on this host",
            input.unit
        )),
    }
    let table = mounts::read(&step.host)?;
    c.expect(table.is_bind_of(&input.target, &input.source), || {
        format!(
            "{} is not the live bind mount of {}",
            excerpt(&input.target),
            excerpt(&input.source)
        )
    });
    c.finish()?;
    Ok(Outcome::done())
}

// SPDX-License-Identifier: Apache-2.0
//! The check modes: apply-check and upgrade-check (tuned's own), config-check and
//! post-interrupt-check (tuned's checks of the same request and this package's own).

use skyhook_core::{ConfigMaps, Error, Outcome, Result, Step};
use tuned::checks::Verify;

use crate::catalog::Catalog;
use crate::plan::{Desired, engine};
use crate::{grub, host_steps, main_conf, runtime_limits, sysctl_conflicts};

/// apply-check and upgrade-check: tuned installed and its service enabled.
pub fn install_check(step: &Step) -> Result<Outcome> {
    tuned::checks::install_check(&engine(step, ConfigMaps::default())).map(|()| Outcome::done())
}

/// config-check: an interrupt still owed may excuse `tuned-adm verify`.
pub fn config_check(step: &Step) -> Result<Outcome> {
    check(step, Verify::InterruptMayExcuse)
}

/// post-interrupt-check: everything verified.
pub fn post_interrupt_check(step: &Step) -> Result<Outcome> {
    check(step, Verify::Required)
}

/// config-check / post-interrupt-check: tuned's checks of the same request (after
/// the reboot, each huge page pool of the chain reserved for its size), the
/// tuned-main.conf options, the limits the container runtime runs with, and the
/// sysctls a tuning entry sets to another value.
fn check(step: &Step, verify: Verify) -> Result<Outcome> {
    let catalog = Catalog::embedded();
    let desired = Desired::read(step, &catalog)?;
    let engine_result = tuned::checks::config_check_with(&engine(step, desired.configmaps()), verify, &desired.files());
    let host_plan = host_steps::Plan::read(step, desired.rendered.host.clone(), desired.spcx_cc)?;
    let mut unmet = host_steps::check(step, &host_plan, verify == Verify::Required)?;
    unmet.extend(grub::regeneration::Regeneration::read(step, &desired, &catalog, false)?.unmet(step)?);
    unmet.extend(runtime_limits::unmet(&step.host, &desired, verify)?);
    unmet.extend(sysctl_conflicts::unmet(&step.host, &desired)?);
    if !main_conf::holds(&step.host, &catalog.manifest.tuned_main)? {
        unmet.push(format!(
            "{} does not set {:?} (config sets it)",
            main_conf::MAIN_CONF,
            catalog.manifest.tuned_main
        ));
    }
    with_unmet(engine_result, unmet)
}

/// The engine's check result with this package's own unmet expectations added.
pub(crate) fn with_unmet(engine_result: Result<()>, extra: Vec<String>) -> Result<Outcome> {
    if extra.is_empty() {
        return engine_result.map(|()| Outcome::done());
    }
    let mut unmet = match engine_result {
        Err(Error::Check(v)) => v,
        Err(e) => return Err(e),
        Ok(()) => Vec::new(),
    };
    unmet.extend(extra);
    Err(Error::Check(unmet))
}

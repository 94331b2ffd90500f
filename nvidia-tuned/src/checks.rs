// SPDX-License-Identifier: Apache-2.0
//! The check modes: apply-check and upgrade-check (tuned's own), config-check and
//! post-interrupt-check (tuned's checks of the same request, and this package's own
//! added by tuned's engine: [`Checks`]).

use skyhook_core::{Outcome, Result, Step};
use tuned::engine::{self, EngineRequest, Extension, Plain, Verify};

use crate::catalog::Catalog;
use crate::plan::Desired;
use crate::{grub, host_steps, main_conf, runtime_limits, sysctl_conflicts};

/// apply-check and upgrade-check: tuned installed and its service enabled.
pub fn install_check(step: &Step) -> Result<Outcome> {
    engine::run(step, &EngineRequest::default(), &mut Plain)
}

/// config-check: an interrupt still owed may excuse `tuned-adm verify`.
pub fn config_check(step: &Step) -> Result<Outcome> {
    check(step)
}

/// post-interrupt-check: everything verified.
pub fn post_interrupt_check(step: &Step) -> Result<Outcome> {
    check(step)
}

/// config-check / post-interrupt-check: tuned's checks of the same request (after
/// the reboot, each huge page pool of the chain reserved for its size), then
/// [`Checks`].
fn check(step: &Step) -> Result<Outcome> {
    let catalog = Catalog::embedded();
    let desired = Desired::read(step, &catalog)?;
    let request = desired.engine_request();
    engine::run(
        step,
        &request,
        &mut Checks {
            catalog: &catalog,
            desired: &desired,
        },
    )
}

/// This package's checks after tuned's: the host steps, the GRUB regeneration, the
/// limits the container runtime runs with, the sysctls a tuning entry sets to
/// another value, and the tuned-main.conf options.
pub struct Checks<'a> {
    /// The catalog rendered.
    pub catalog: &'a Catalog,
    /// What config makes of the node.
    pub desired: &'a Desired,
}

impl Extension for Checks<'_> {
    fn unmet(&mut self, step: &Step, verify: Verify) -> Result<Vec<String>> {
        let (catalog, desired) = (self.catalog, self.desired);
        let host_plan = host_steps::Plan::read(step, desired.rendered.host.clone(), desired.spcx_cc)?;
        let mut unmet = host_steps::check(step, &host_plan, verify == Verify::Required)?;
        unmet.extend(grub::regeneration::Regeneration::read(step, desired, catalog, false)?.unmet(step)?);
        unmet.extend(runtime_limits::unmet(&step.host, desired, verify)?);
        unmet.extend(sysctl_conflicts::unmet(&step.host, desired)?);
        if !main_conf::holds(&step.host, &catalog.manifest.tuned_main)? {
            unmet.push(format!(
                "{} does not set {:?} (config sets it)",
                main_conf::MAIN_CONF,
                catalog.manifest.tuned_main
            ));
        }
        Ok(unmet)
    }
}

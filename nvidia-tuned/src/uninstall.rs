// SPDX-License-Identifier: Apache-2.0
//! uninstall and uninstall-check, from this package's records and the catalog alone:
//! this package's part ([`Uninstall`]) runs inside tuned's engine flow.

use skyhook_core::{Outcome, Result, Step};
use tuned::engine::{self, EngineRequest, Extension};

use crate::catalog::Catalog;
use crate::plan::main_conf_store;
use crate::{grub, host_steps, legacy, main_conf};

/// uninstall: after tuned's records are read, tuned-main.conf back as it was, then
/// tuned's uninstall (service, every deployed profile and file, the packages apply
/// installed), then what the bash version left. Works without the configMap (older
/// operators): all of it goes by this package's records and the catalog.
pub fn uninstall(step: &Step) -> Result<Outcome> {
    engine::run(step, &EngineRequest::default(), &mut Uninstall::new())
}

/// uninstall-check: tuned's, and no recorded tuned-main.conf original left.
pub fn uninstall_check(step: &Step) -> Result<Outcome> {
    engine::run(step, &EngineRequest::default(), &mut Uninstall::new())
}

/// This package's part of uninstall and uninstall-check, run by tuned's engine.
pub struct Uninstall {
    catalog: Catalog,
    /// Whether tuned's own uninstall regenerates GRUB (read before it).
    tuned_regenerates: bool,
}

impl Uninstall {
    /// With the embedded catalog.
    pub fn new() -> Self {
        Uninstall {
            catalog: Catalog::embedded(),
            tuned_regenerates: false,
        }
    }
}

impl Default for Uninstall {
    fn default() -> Self {
        Self::new()
    }
}

impl Extension for Uninstall {
    /// Every record read before any change (a damaged one stops the step first), the
    /// host steps taken back, the GRUB regeneration owed, tuned-main.conf restored.
    fn before_uninstall(&mut self, step: &Step) -> Result<()> {
        main_conf::read_record(&main_conf_store(step))?;
        let host_needs = host_steps::uninstall(step)?;
        if host_needs != skyhook_core::Interrupt::NoOp {
            log::info!(
                "uninstall took back the host steps' kernel arguments (GRUB drop-ins, or the boot entries' on RHEL-like hosts): the node's boot settings return at the next boot (needs a reboot)"
            );
        }
        self.tuned_regenerates = grub::regeneration::uninstall_prepare(step, &self.catalog)?;
        main_conf::restore(&step.host, &main_conf_store(step), &self.catalog.manifest.tuned_main)?;
        Ok(())
    }

    /// After tuned's: what the bash version left, GRUB regenerated when owed.
    fn after_uninstall(&mut self, step: &Step) -> Result<()> {
        legacy::remove(&step.host, &self.catalog, &Default::default())?;
        grub::regeneration::uninstall_finish(step, self.tuned_regenerates)
    }

    /// The host steps taken back, and no recorded tuned-main.conf original left.
    fn uninstall_unmet(&mut self, step: &Step) -> Result<Vec<String>> {
        let store = main_conf_store(step);
        let mut unmet = host_steps::uninstall_unmet(step)?;
        if store.exists() {
            unmet.push(format!(
                "the record of {} ({}) still exists: uninstall did not finish",
                main_conf::MAIN_CONF,
                store.file().display()
            ));
        }
        Ok(unmet)
    }
}

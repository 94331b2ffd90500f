// SPDX-License-Identifier: Apache-2.0
//! uninstall and uninstall-check, from this package's records and the catalog alone.

use skyhook_core::os::pkgmgr::Retry;
use skyhook_core::{ConfigMaps, Outcome, Result, Step};

use crate::catalog::Catalog;
use crate::checks::with_unmet;
use crate::plan::{engine, main_conf_store};
use crate::{grub, host_steps, legacy, main_conf};

/// uninstall: tuned-main.conf back as it was, then tuned's uninstall (service,
/// every deployed profile and file, the packages apply installed), then what the
/// bash version left. Works without the configMap (older operators): all of it goes
/// by this package's records and the catalog.
pub fn uninstall(step: &Step) -> Result<Outcome> {
    // tuned's uninstall reads these first; read them before any change here too,
    // with every record: a damaged one stops the step before anything is undone.
    Retry::from_env()?;
    step.family()?;
    tuned::uninstall::read_record(&engine(step, ConfigMaps::default()))?;
    main_conf::read_record(&main_conf_store(step))?;
    let host_needs = host_steps::uninstall(step)?;
    if host_needs != skyhook_core::Interrupt::NoOp {
        log::info!(
            "uninstall took back the host steps' kernel arguments (GRUB drop-ins, or the boot entries' on RHEL-like hosts): the node's boot settings return at the next boot (needs a reboot)"
        );
    }
    let catalog = Catalog::embedded();
    let tuned_regenerates = grub::regeneration::uninstall_prepare(step, &catalog)?;
    main_conf::restore(&step.host, &main_conf_store(step), &catalog.manifest.tuned_main)?;
    let outcome = tuned::uninstall::uninstall(&engine(step, ConfigMaps::default()))?;
    legacy::remove(&step.host, &catalog, &Default::default())?;
    grub::regeneration::uninstall_finish(step, tuned_regenerates)?;
    Ok(outcome)
}

/// uninstall-check: tuned's, and no recorded tuned-main.conf original left.
pub fn uninstall_check(step: &Step) -> Result<Outcome> {
    let store = main_conf_store(step);
    let engine_result = tuned::uninstall::uninstall_check(&engine(step, ConfigMaps::default()));
    let mut unmet = host_steps::uninstall_unmet(step)?;
    if store.exists() {
        unmet.push(format!(
            "the record of {} ({}) still exists: uninstall did not finish",
            main_conf::MAIN_CONF,
            store.file().display()
        ));
    }
    with_unmet(engine_result, unmet)
}

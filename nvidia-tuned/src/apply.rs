// SPDX-License-Identifier: Apache-2.0
//! The modes that change the node: apply and upgrade ([`install`]: tuned's own, on
//! this package's kind) and config.

use skyhook_core::host::systemd::Systemd;
use skyhook_core::{ConfigMaps, Outcome, Result, Step};

use crate::catalog::Catalog;
use crate::plan::{Desired, engine, main_conf_store};
use crate::{grub, grub_d, host_steps, legacy, main_conf};

/// apply and upgrade: tuned installed, enabled and started (tuned's own apply).
pub fn install(step: &Step) -> Result<Outcome> {
    tuned::apply::install(&engine(step, ConfigMaps::default()))
}

/// config: choose and render, refuse a huge page size the running kernel cannot
/// register, hand the request to tuned (validation, deploy,
/// reconcile, activation), set tuned-main.conf's options (restarting tuned when they
/// change), regenerate GRUB for the services' drop-ins, run the host steps, say which
/// interrupt the change needs.
pub fn config(step: &Step) -> Result<Outcome> {
    let catalog = Catalog::embedded();
    let desired = Desired::read(step, &catalog)?;
    // Before any change (the GRUB ledger, the host steps): a huge page size the
    // running kernel cannot register (gb200's 512M on a 4k or 16k kernel).
    tuned::bootloader::refuse_unregistrable_hugepages(&step.host, &desired.bootloader_chain())?;
    let mut host_plan = host_steps::Plan::read(step, desired.rendered.host.clone(), desired.spcx_cc)?;
    grub_d::refuse_on_rhel_like(step, &desired)?;
    host_plan.preflight(step)?;
    let regeneration = grub::regeneration::Regeneration::read(step, &desired, &catalog, true)?;
    let files_need = desired.files_interrupt(&step.host)?;
    regeneration.prepare(step)?;
    let outcome = tuned::config_with(&engine(step, desired.configmaps()), &desired.files())?;
    let layout = tuned::layout::Tuned::detect(step)?;
    let ours = desired
        .rendered
        .profiles
        .iter()
        .map(|p| layout.profile_file(&p.name))
        .collect();
    legacy::remove(&step.host, &catalog, &ours)?;
    let options = &catalog.manifest.tuned_main;
    let store = main_conf_store(step);
    if main_conf::apply(&step.host, &store, options)? {
        let systemd = Systemd::new(&step.host);
        if systemd.is_running() {
            systemd.restart(tuned::service::TUNED)?;
            log::info!("restarted tuned so that it reads {}", main_conf::MAIN_CONF);
        } else {
            log::info!(
                "systemd is not running: tuned reads {} when it starts",
                main_conf::MAIN_CONF
            );
        }
        main_conf::restarted(&store)?;
    }
    let grub_needs = regeneration.finish(step)?;
    let host_needs = host_steps::apply(step, &host_plan)?;
    let needs = outcome
        .interrupt
        .unwrap_or(skyhook_core::Interrupt::NoOp)
        .combine(files_need)
        .combine(grub_needs)
        .combine(host_needs);
    Ok(Outcome::needs(needs))
}

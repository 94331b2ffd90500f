// SPDX-License-Identifier: Apache-2.0
//! The modes that change the node: apply and upgrade ([`install`]: tuned's own, on
//! this package's kind) and config, this package's work inside tuned's engine flow
//! ([`Config`]: its preflight before tuned changes anything, its finish after
//! activation).

use skyhook_core::{Interrupt, Outcome, Result, Step};
use tuned::engine::{self, Activated, EngineRequest, Extension, Plain};

use crate::catalog::Catalog;
use crate::plan::{Desired, main_conf_store};
use crate::{grub, grub_d, host_steps, legacy, main_conf};

/// apply and upgrade: tuned installed, enabled and started (tuned's own apply).
pub fn install(step: &Step) -> Result<Outcome> {
    engine::run(step, &EngineRequest::default(), &mut Plain)
}

/// config: choose and render, then tuned's config with [`Config`] inside it: refuse
/// a huge page size the running kernel cannot register, hand the request to tuned
/// (validation, deploy, reconcile, activation), set tuned-main.conf's options
/// (tuned restarted when they change), regenerate GRUB for the services' drop-ins,
/// run the host steps, say which interrupt the change needs.
pub fn config(step: &Step) -> Result<Outcome> {
    let catalog = Catalog::embedded();
    let desired = Desired::read(step, &catalog)?;
    let request = desired.engine_request();
    engine::run(step, &request, &mut Config::new(&catalog, &desired))
}

/// This package's part of config, run by tuned's engine.
pub struct Config<'a> {
    catalog: &'a Catalog,
    desired: &'a Desired,
    /// What the preflight read, for the finish.
    prepared: Option<Prepared>,
}

/// What config's preflight read from the node, before any change.
struct Prepared {
    host_plan: host_steps::Plan,
    regeneration: grub::regeneration::Regeneration,
    files_need: Interrupt,
}

impl<'a> Config<'a> {
    /// config of `desired`, rendered from `catalog`.
    pub fn new(catalog: &'a Catalog, desired: &'a Desired) -> Self {
        Config {
            catalog,
            desired,
            prepared: None,
        }
    }
}

impl Extension for Config<'_> {
    /// Before any change (the GRUB ledger, the host steps): a huge page size the
    /// running kernel cannot register (gb200's 512M on a 4k or 16k kernel), a
    /// service's drop-in left on a RHEL-like host, the host steps' variables and the
    /// node; then the GRUB regeneration owed for what config is about to change.
    fn preflight(&mut self, step: &Step) -> Result<()> {
        let desired = self.desired;
        engine::refuse_unregistrable_hugepages(&step.host, &desired.bootloader_chain())?;
        let mut host_plan = host_steps::Plan::read(step, desired.rendered.host.clone(), desired.spcx_cc)?;
        grub_d::refuse_on_rhel_like(step, desired)?;
        host_plan.preflight(step)?;
        let regeneration = grub::regeneration::Regeneration::read(step, desired, self.catalog, true)?;
        let files_need = desired.files_interrupt(&step.host)?;
        regeneration.prepare(step)?;
        self.prepared = Some(Prepared {
            host_plan,
            regeneration,
            files_need,
        });
        Ok(())
    }

    /// After tuned's activation: what the bash version left, tuned-main.conf's
    /// options (tuned restarted when they change), GRUB regenerated, the host steps.
    fn finish(&mut self, step: &Step, tuned: &Activated<'_>) -> Result<Interrupt> {
        let Some(prepared) = self.prepared.take() else {
            return Err(skyhook_core::Error::action("config's finish ran without its preflight"));
        };
        let ours = self
            .desired
            .rendered
            .profiles
            .iter()
            .map(|p| tuned.profile_file(&p.name))
            .collect();
        legacy::remove(&step.host, self.catalog, &ours)?;
        let options = &self.catalog.manifest.tuned_main;
        let store = main_conf_store(step);
        if main_conf::apply(&step.host, &store, options)? {
            tuned.restart_for_main_conf()?;
            main_conf::restarted(&store)?;
        }
        let grub_needs = prepared.regeneration.finish(step)?;
        let host_needs = host_steps::apply(step, &prepared.host_plan)?;
        Ok(prepared.files_need.combine(grub_needs).combine(host_needs))
    }
}

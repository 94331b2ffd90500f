// SPDX-License-Identifier: Apache-2.0
//! The nvidia-tuned package: NVIDIA's tuned profiles per accelerator × workload
//! intent × cloud service × OS version, chosen per node, on the tuned package's
//! engine in process. The configMap keys (`accelerator`, `intent`, `service`), the
//! profile names and include chain are the original's (see README.md).
//!
//! Modules: [`catalog`](mod@catalog) the embedded profile catalog, [`request`] the configMap read, [`keys`] the keys' names,
//! [`accelerator`] the node's accelerator, [`desired`] the tuned request for this
//! node, [`main_conf`] the tuned-main.conf options, [`legacy`] what the bash version left, [`effective`] the reviewable
//! settings of each combination (`skyhook_core::profile::Catalog`), [`host_steps`] the
//! host changes beyond tuned profiles a service ships for an accelerator (`oci` × `gb300`),
//! [`grub`] the services' GRUB drop-ins (eks's and aks's left to tuned on RHEL-like
//! hosts, rke2's decided as upstream's step, GRUB regenerated on Debian-family nodes),
//! [`grub_d`] the refusal of a service's drop-in still left on RHEL-like hosts (the
//! oci × gb300 ACS and IOMMU arguments go on the boot entries there instead),
//! [`runtime_limits`] the container runtime's running limits against its drop-in,
//! [`sysctl_conflicts`] the chain's sysctls that a tuning entry sets otherwise,
//! [`review`] what lint asks of the package.

pub mod accelerator;
pub mod catalog;
pub mod desired;
pub mod effective;
pub mod grub;
pub mod grub_d;
pub mod host_steps;
pub mod keys;
pub mod legacy;
pub mod main_conf;
pub mod request;
pub mod review;
pub mod runtime_limits;
pub mod sysctl_conflicts;

use skyhook_core::host::systemd::Systemd;
use skyhook_core::os::pkgmgr::Retry;
use skyhook_core::records::state::StateStore;
use skyhook_core::runtime::run::Handler;
use skyhook_core::{ConfigMaps, Error, Mode, Outcome, Package, Result, Step};
use tuned::check::Verify;

use crate::catalog::Catalog;
use crate::desired::Desired;

pub use crate::effective::catalog;

/// Validates a configMap offline, as config reads it (the entry point of `skyhook-pkg
/// lint`): the keys, and for a named accelerator the catalog combination (common
/// profiles, or the first OS an OS-bound accelerator exists on). `Err(Error::Input)` lists every problem; `auto` is resolved on the node.
pub fn validate(configmaps: &ConfigMaps) -> Result<()> {
    let catalog = Catalog::embedded();
    let request = request::Request::read(configmaps, &catalog.manifest)?;
    if request.accelerator == keys::AUTO {
        return Ok(());
    }
    // Offline the OS is unknown: an accelerator that exists only on some OS versions
    // is rendered on the first of them (config checks the node's own OS).
    let os = catalog
        .accelerator_os(&request.accelerator)
        .and_then(|allowed| allowed.first().cloned());
    let choice = catalog::Choice {
        accelerator: request.accelerator,
        intent: request.intent,
        service: request.service,
        os,
    };
    catalog
        .render(&choice)
        .map(|_| ())
        .map_err(|e| Error::input(format!("configMap key {:?}: {e}", e.key())))
}

/// The nvidia-tuned package.
pub struct NvidiaTuned;

impl Package for NvidiaTuned {
    const KIND: &'static str = "nvidia-tuned";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    const MODES: &'static [(Mode, Handler)] = &[
        (Mode::Apply, |s| {
            tuned::service::install(&engine(s, ConfigMaps::default()))
        }),
        (Mode::ApplyCheck, |s| {
            tuned::service::install_check(&engine(s, ConfigMaps::default())).map(|()| Outcome::done())
        }),
        (Mode::Config, config),
        (Mode::ConfigCheck, |s| check(s, Verify::InterruptMayExcuse)),
        (Mode::PostInterruptCheck, |s| check(s, Verify::Required)),
        (Mode::Upgrade, |s| {
            tuned::service::install(&engine(s, ConfigMaps::default()))
        }),
        (Mode::UpgradeCheck, |s| {
            tuned::service::install_check(&engine(s, ConfigMaps::default())).map(|()| Outcome::done())
        }),
        (Mode::Uninstall, uninstall),
        (Mode::UninstallCheck, uninstall_check),
    ];
    const NEEDS_PERSISTENT_ETC: bool = true;
}

/// The step the tuned engine runs: this package's kind, context and host, with the
/// request in tuned's own keys.
fn engine(step: &Step, configmaps: ConfigMaps) -> Step {
    step.derived(step.kind(), configmaps)
}

fn main_conf_store(step: &Step) -> StateStore<'_> {
    StateStore::new(&step.host, main_conf::STATE_KIND, step.ctx.package_name())
}

/// config: choose and render, refuse a huge page size the running kernel cannot
/// register, hand the request to tuned (validation, deploy,
/// reconcile, activation), set tuned-main.conf's options (restarting tuned when they
/// change), regenerate GRUB for the services' drop-ins, run the host steps, say which
/// interrupt the change needs.
fn config(step: &Step) -> Result<Outcome> {
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

/// config-check / post-interrupt-check: tuned's checks of the same request (after
/// the reboot, each huge page pool of the chain reserved for its size), the
/// tuned-main.conf options, the limits the container runtime runs with, and the
/// sysctls a tuning entry sets to another value.
fn check(step: &Step, verify: Verify) -> Result<Outcome> {
    let catalog = Catalog::embedded();
    let desired = Desired::read(step, &catalog)?;
    let engine_result = tuned::check::config_check_with(&engine(step, desired.configmaps()), verify, &desired.files());
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
fn with_unmet(engine_result: Result<()>, extra: Vec<String>) -> Result<Outcome> {
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

/// uninstall: tuned-main.conf back as it was, then tuned's uninstall (service,
/// every deployed profile and file, the packages apply installed), then what the
/// bash version left. Works without the configMap (older operators): all of it goes
/// by this package's records and the catalog.
fn uninstall(step: &Step) -> Result<Outcome> {
    // tuned's uninstall reads these first; read them before any change here too,
    // with every record: a damaged one stops the step before anything is undone.
    Retry::from_env()?;
    step.family()?;
    tuned::service::read_record(&engine(step, ConfigMaps::default()))?;
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
    let outcome = tuned::service::uninstall(&engine(step, ConfigMaps::default()))?;
    legacy::remove(&step.host, &catalog, &Default::default())?;
    grub::regeneration::uninstall_finish(step, tuned_regenerates)?;
    Ok(outcome)
}

/// uninstall-check: tuned's, and no recorded tuned-main.conf original left.
fn uninstall_check(step: &Step) -> Result<Outcome> {
    let store = main_conf_store(step);
    let engine_result = tuned::service::uninstall_check(&engine(step, ConfigMaps::default()));
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

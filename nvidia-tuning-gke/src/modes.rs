// SPDX-License-Identifier: Apache-2.0
//! The modes, each on the tuning engine in process ([`tuning::run_with_input`]):
//! the request is read and validated, the accelerator chosen and the catalog
//! combination looked up (any problem: exit 2, nothing changed), then tuning gets
//! the combination's sysctl file and containerd drop-in as its input. Uninstall
//! needs no input: it undoes what the records say, with or without the configMap.

use std::collections::BTreeSet;

use skyhook_core::os::distro::stateless_etc;
use skyhook_core::platform::accelerator;
use skyhook_core::profile::CatalogError;
use skyhook_core::{Checklist, ConfigMaps, Error, Interrupt, Outcome, Result, Step};

use crate::KIND;
use crate::catalog::{GkeCatalog, Profile};
use crate::choice;
use crate::optional::{self, OptionalKey};
use crate::request::{self, Request};
use crate::tuning_input::tuning_input;

/// A step's combination and tuning's input for it.
struct Prepared {
    /// The optional keys of the combination with their live values.
    optional: Vec<OptionalKey>,
    /// tuning's configMap.
    input: ConfigMaps,
}

/// The embedded catalog, or the action error saying the image is broken.
fn embedded_catalog() -> Result<&'static GkeCatalog> {
    GkeCatalog::embedded().map_err(|e| {
        Error::action(format!(
            "{e}: this image of {KIND} is broken (its catalog tests should have caught it); use another version"
        ))
    })
}

/// The value of `USE_CONTAINERD`; one that is not UTF-8 is kept (lossily) so that
/// it is refused by name rather than taken for unset.
fn use_containerd_env() -> Option<String> {
    std::env::var_os(request::USE_CONTAINERD).map(|v| v.to_string_lossy().into_owned())
}

/// Reads and validates the request, chooses the accelerator and looks up the
/// combination; logs what was chosen and why.
fn prepare(step: &Step) -> Result<Prepared> {
    let catalog = embedded_catalog()?;
    let request = Request::read(&step.configmaps, use_containerd_env().as_deref())?;
    let chosen = choice::choose(step, &request.accelerator, &catalog.accelerators())?;
    let profile = catalog
        .profile(&chosen.name, &request.intent)
        .map_err(|e| Error::input(format!("configMap key {:?}: {e}", request::INTENT)))?;
    log::info!("{chosen}: catalog profile {} ({})", profile.name(), profile.sysctl.path);
    log_containerd(&profile, request.use_containerd);
    Ok(Prepared {
        optional: optional::read(&step.host, &profile)?,
        input: tuning_input(&profile, request.use_containerd),
    })
}

/// [`crate::validate`]: the request, and the combination when the accelerator is
/// named (with `auto`, the intent must be one some accelerator has).
pub fn validate_offline(cm: &ConfigMaps, use_containerd: Option<&str>) -> Result<()> {
    let catalog = embedded_catalog()?;
    let request = Request::read(cm, use_containerd)?;
    let intent_error = |e: CatalogError| Error::input(format!("configMap key {:?}: {e}", request::INTENT));
    if request.accelerator == accelerator::AUTO {
        let all: BTreeSet<&str> = catalog
            .accelerators()
            .iter()
            .filter_map(|a| catalog.intents(a))
            .flatten()
            .collect();
        if !all.contains(request.intent.as_str()) {
            return Err(intent_error(CatalogError::unknown_intent(
                &request.intent,
                &Vec::from_iter(all),
            )));
        }
        return Ok(());
    }
    match catalog.profile(&request.accelerator, &request.intent) {
        Ok(_) => Ok(()),
        Err(e @ CatalogError::UnknownAccelerator { .. }) => Err(Error::input(format!(
            "configMap key {:?}: {e}, or auto",
            request::ACCELERATOR
        ))),
        Err(e) => Err(intent_error(e)),
    }
}

/// Says whether the combination's containerd drop-in is applied, and why.
fn log_containerd(profile: &Profile<'_>, use_containerd: bool) {
    match (&profile.containerd, use_containerd) {
        (Some(f), true) => log::info!(
            "containerd drop-in {} applied ({}=true)",
            f.path,
            request::USE_CONTAINERD
        ),
        (Some(f), false) => log::info!(
            "containerd drop-in {} not applied: set env {}=true on the package in the SCR to apply it",
            f.path,
            request::USE_CONTAINERD
        ),
        (None, true) => log::info!(
            "{}=true, but profile {} has no containerd drop-in: none applied",
            request::USE_CONTAINERD,
            profile.name()
        ),
        (None, false) => {}
    }
}

/// Warns when the SCR gives this package a reboot interrupt on a node whose `/etc`
/// does not persist: the reboot would wipe what it was meant to apply.
fn warn_reboot_on_stateless_etc(step: &Step) -> Result<()> {
    let Some(why) = stateless_etc(&step.host)? else {
        return Ok(());
    };
    let metadata = step.node_metadata();
    let Some(entry) = metadata.packages.get(step.ctx.package_name()) else {
        return Ok(());
    };
    let reboots = entry
        .interrupt
        .iter()
        .chain(entry.config_interrupts.values())
        .any(|i| *i == Interrupt::Reboot);
    if reboots {
        log::warn!(
            "the SCR gives this package a reboot interrupt, but this node's /etc does not survive a reboot ({why}): \
             the reboot wipes these settings, and applying them again asks for another reboot, in a loop. These \
             settings apply live: use no interrupt, or {} when USE_CONTAINERD is true",
            Interrupt::service(["containerd"])
        );
    }
    Ok(())
}

/// config.
pub fn config(step: &Step) -> Result<Outcome> {
    let p = prepare(step)?;
    optional::warn_missing(&step.host, &p.optional);
    warn_reboot_on_stateless_etc(step)?;
    tuning::run_with_input(step, KIND, p.input)
}

/// config-check.
pub fn config_check(step: &Step) -> Result<Outcome> {
    let p = prepare(step)?;
    optional::warn_missing(&step.host, &p.optional);
    tuning::run_with_input(step, KIND, p.input)
}

/// post-interrupt-check: tuning's live checks, and every optional key the kernel
/// has held to its value.
pub fn post_interrupt_check(step: &Step) -> Result<Outcome> {
    let p = prepare(step)?;
    optional::warn_missing(&step.host, &p.optional);
    let engine = tuning::run_with_input(step, KIND, p.input);
    let mut c = Checklist::new();
    optional::check_present(&p.optional, &mut c);
    match (engine, c.finish()) {
        (Err(Error::Check(mut unmet)), Err(Error::Check(more))) => {
            unmet.extend(more);
            Err(Error::Check(unmet))
        }
        (Err(e), _) | (Ok(_), Err(e)) => Err(e),
        (Ok(outcome), Ok(())) => Ok(outcome),
    }
}

/// uninstall: what the records say was done is undone; the configMap is not read.
pub fn uninstall(step: &Step) -> Result<Outcome> {
    tuning::run_with_input(step, KIND, no_input())
}

/// uninstall-check.
pub fn uninstall_check(step: &Step) -> Result<Outcome> {
    tuning::run_with_input(step, KIND, no_input())
}

/// An empty configMap (uninstall works from the records alone).
fn no_input() -> ConfigMaps {
    ConfigMaps::from_entries(Vec::<(&str, &str)>::new())
}

// SPDX-License-Identifier: Apache-2.0
//! The tuned package: installs the tuned daemon, deploys the SCR's custom profiles and
//! helper scripts, activates the chosen profile(s), verifies them, and removes all of
//! it on uninstall. ConfigMap keys, the `INTERRUPT` variable and on-node paths are
//! those of the bash package it replaces (see README.md).
//!
//! Modules: [`conf`] tuned's profile format, [`layout`] the installed tuned and its
//! profile directories, [`plan`] the configMap validated into a deployment,
//! [`deploy`] reconcile and state, [`activate`] the active profile and tuned's log,
//! [`service`] the package and the service, [`check`] config-check and
//! post-interrupt-check.

pub mod activate;
pub mod bootloader;
pub mod check;
pub mod conf;
pub mod deploy;
pub mod layout;
pub mod plan;
pub mod review;
pub mod service;

use std::collections::BTreeMap;
use std::path::PathBuf;

use skyhook_core::runtime::run::Handler;
use skyhook_core::{Error, Interrupt, Mode, Outcome, Package, Result, Step};

use crate::activate::{Activation, BOOTCMDLINE};
use crate::deploy::State;
use crate::layout::Tuned as TunedLayout;
use crate::plan::Request;

/// The tuned package.
pub struct Tuned;

impl Package for Tuned {
    const KIND: &'static str = "tuned";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    const MODES: &'static [(Mode, Handler)] = &[
        (Mode::Apply, service::install),
        (Mode::ApplyCheck, |s| {
            service::install_check(s).map(|()| Outcome::done())
        }),
        (Mode::Config, config),
        (Mode::ConfigCheck, |s| {
            check::config_check(s, check::Verify::InterruptMayExcuse).map(|()| Outcome::done())
        }),
        (Mode::PostInterruptCheck, |s| {
            check::config_check(s, check::Verify::Required).map(|()| Outcome::done())
        }),
        (Mode::Upgrade, service::install),
        (Mode::UpgradeCheck, |s| {
            service::install_check(s).map(|()| Outcome::done())
        }),
        (Mode::Uninstall, service::uninstall),
        (Mode::UninstallCheck, |s| {
            service::uninstall_check(s).map(|()| Outcome::done())
        }),
    ];
    const NEEDS_PERSISTENT_ETC: bool = true;
}

/// config: validate everything, deploy and reconcile, activate, say which interrupt.
fn config(step: &Step) -> Result<Outcome> {
    config_with(step, &BTreeMap::new())
}

/// config for a package that drives tuned as a library: `step.configmaps` holds the
/// request in tuned's own keys (profiles and `tuned_profile`, built in memory), and
/// `files` further files to deploy, check and remove like the profiles (by host path,
/// mode 0644). The state is kept under `step`'s kind.
pub fn config_with(step: &Step, files: &BTreeMap<PathBuf, Vec<u8>>) -> Result<Outcome> {
    let host = &step.host;
    let (mut request, mut problems) = Request::read(&step.configmaps)?;
    request.files = files.clone();
    let tuned = match TunedLayout::detect(step) {
        Ok(t) => t,
        Err(_) if !problems.is_empty() => return Err(Error::Input(problems)),
        Err(e) => return Err(e),
    };
    log::info!(
        "tuned {} reads profiles from {} ({}); custom profiles go to {}",
        tuned.version_text,
        tuned.dirs_text(),
        tuned.dirs_source,
        tuned.user_dir.display()
    );
    let store = step.state();
    let state: State = store.load()?;
    let plan = match request.plan(host, &tuned, &state.footprint.files) {
        Ok(plan) if problems.is_empty() => plan,
        Ok(_) => return Err(Error::Input(problems)),
        Err(Error::Input(mut more)) => {
            problems.append(&mut more);
            return Err(Error::Input(problems));
        }
        Err(e) => return Err(e),
    };
    if plan.active.is_some() {
        bootloader::refuse_on_image_mode(host, &plan.bootloader)?;
        bootloader::refuse_unregistrable_hugepages(host, &plan.bootloader)?;
    }

    let changes = deploy::apply(host, &store, &plan, &step.configmaps, &tuned)?;
    let cmdline_before = host.read(BOOTCMDLINE)?;
    if let Some(names) = &plan.active {
        match activate::activate(host, &tuned, names, changes.any())? {
            Activation::Applied => log::info!("tuned profile {:?} is active", names.join(" ")),
            Activation::AlreadyActive | Activation::Recorded => {}
        }
    }
    let cmdline_changed = host.read(BOOTCMDLINE)? != cmdline_before;
    let previous = state.bootloader.unwrap_or_default();
    let mut current = plan.bootloader.clone();
    if plan.active.is_none() {
        // The active profile is left alone: its options stay what they were.
        let kept = previous.iter().filter(|o| o.starts_with("active ")).cloned();
        current = kept.chain(current).collect();
    }
    deploy::record_bootloader(&store, current.clone())?;
    if previous != current || cmdline_changed {
        log::info!(
            "the kernel command line changes: {}; the new options take effect after a reboot",
            if cmdline_changed {
                format!("tuned rewrote {BOOTCMDLINE}")
            } else {
                describe_bootloader_change(&previous, &current)
            }
        );
        Ok(Outcome::needs(Interrupt::Reboot))
    } else {
        log::info!("no bootloader option changed: tuned applies the profile live, no interrupt is needed");
        Ok(Outcome::needs(Interrupt::NoOp))
    }
}

fn describe_bootloader_change(before: &[String], after: &[String]) -> String {
    let added: Vec<&String> = after.iter().filter(|o| !before.contains(o)).collect();
    let gone: Vec<&String> = before.iter().filter(|o| !after.contains(o)).collect();
    // Entries read "active <profile> [section] option=value" or "deployed <profile> …":
    // show each profile's option once.
    let list = |v: &[&String]| {
        let mut shown: Vec<&str> = v
            .iter()
            .map(|s| s.split_once(' ').map_or(s.as_str(), |(_, rest)| rest))
            .collect();
        shown.dedup();
        shown.sort_unstable();
        shown.dedup();
        shown.join("; ")
    };
    match (added.is_empty(), gone.is_empty()) {
        (false, true) => format!("bootloader options added ({})", list(&added)),
        (true, false) => format!("bootloader options removed ({})", list(&gone)),
        (false, false) => format!("bootloader options now {} (were {})", list(&added), list(&gone)),
        (true, true) => "the bootloader options changed order".into(),
    }
}

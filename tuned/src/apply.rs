// SPDX-License-Identifier: Apache-2.0
//! apply and upgrade ([`install`]: tuned installed, enabled and started) and config
//! ([`config`]): validate everything, deploy and reconcile, activate, say which interrupt
//! the change needs. [`config_with`] is config with further files, what
//! [`crate::engine::run`] runs for a package that drives tuned as a library.

use std::collections::BTreeMap;
use std::path::PathBuf;

use skyhook_core::host::systemd::{Applied, Systemd};
use skyhook_core::records::receipt::InstallReceipt;
use skyhook_core::{Error, Interrupt, Outcome, Result, Step};

use crate::activate::{self, Activation, BOOTCMDLINE};
use crate::deploy::State;
use crate::input::Request;
use crate::layout::Tuned as TunedLayout;
use crate::service::{TUNED, package_manager};
use crate::{bootloader, deploy};

/// config: validate everything, deploy and reconcile, activate, say which interrupt.
pub fn config(step: &Step) -> Result<Outcome> {
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

/// apply and upgrade: install tuned (skipped when installed), enable and start it.
pub fn install(step: &Step) -> Result<Outcome> {
    let pm = package_manager(step)?;
    let store = step.state();
    let mut state: State = store.load()?;
    let mut receipt = match state.install.clone() {
        Some(receipt) => receipt,
        None => InstallReceipt::before(&pm, &[TUNED])?,
    };
    // Recorded before installing: a run killed after the install still knows what it added.
    let added = receipt.install(&pm, &[TUNED], |r| {
        state.install = Some(r.clone());
        store.save_or_clear(&state)
    })?;
    if added.is_empty() {
        log::info!(
            "tuned {} is already installed; no repository refresh, no install",
            pm.installed_version(TUNED)?.unwrap_or_default()
        );
    }
    let systemd = Systemd::new(&step.host);
    systemd.enable(TUNED)?;
    match systemd.start(TUNED)? {
        Applied::Done => log::info!("the tuned service is enabled and started"),
        Applied::Skipped => log::warn!(
            "systemd is not running on this host (chroot or image build): the tuned service is enabled \
             only, it starts at the next boot"
        ),
    }
    Ok(Outcome::done())
}

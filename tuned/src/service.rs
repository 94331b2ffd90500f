// SPDX-License-Identifier: Apache-2.0
//! The tuned package and service: apply/upgrade install and start it, uninstall
//! stops and removes it, and their checks.

use skyhook_core::host::systemd::{Applied, Systemd};
use skyhook_core::os::pkgmgr::{PackageManager, Retry};
use skyhook_core::records::receipt::InstallReceipt;
use skyhook_core::{Checklist, Outcome, Result, Step};

use crate::deploy::{self, State};
use crate::{activate, bootloader};

/// The distribution package and the systemd unit.
pub const TUNED: &str = "tuned";

fn package_manager(step: &Step) -> Result<PackageManager<'_>> {
    let retry = Retry::from_env()?;
    PackageManager::detect(&step.host, step.family()?, retry)
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

/// apply-check and upgrade-check: tuned installed, service enabled and active.
pub fn install_check(step: &Step) -> Result<()> {
    let host = &step.host;
    let mut c = Checklist::new();
    for program in ["tuned", "tuned-adm"] {
        c.expect(host.which(program).is_some(), || {
            format!("{program} is not installed (not found on this host); the apply step installs the tuned package")
        });
    }
    let systemd = Systemd::new(host);
    c.expect(systemd.is_enabled(TUNED)?, || {
        "the tuned service is not enabled (systemctl is-enabled tuned): it would not start at boot".into()
    });
    match systemd.is_active(TUNED)? {
        Some(active) => {
            c.expect(active, || {
                "the tuned service is not active (systemctl is-active tuned); see `journalctl -u tuned` and \
                 /var/log/tuned/tuned.log"
                    .into()
            });
        }
        None => c.skip("tuned service running: systemd is not running on this host (chroot or image build)"),
    }
    c.finish()
}

/// Reads this package's record without changing anything: a package that runs the
/// engine's uninstall after changes of its own calls this first, so that a damaged
/// record stops the step before any change.
pub fn read_record(step: &Step) -> Result<()> {
    step.state().load::<State>().map(|_| ())
}

/// uninstall: stop and disable tuned, remove every profile and script this package
/// deployed, remove the package and exactly the packages apply installed with it.
pub fn uninstall(step: &Step) -> Result<Outcome> {
    let host = &step.host;
    let pm = package_manager(step)?;
    let store = step.state();
    let state: State = store.load()?;
    let systemd = Systemd::new(host);
    if pm.is_installed(TUNED)? {
        if systemd.stop(TUNED)? == Applied::Done {
            log::info!("stopped the tuned service (tuned rolls back its tuning when it stops)");
        }
        systemd.disable(TUNED)?;
        log::info!("disabled the tuned service");
    } else {
        log::info!("the tuned package is not installed; no service to stop");
    }
    let removed = deploy::remove_all(host, &store, &step.configmaps)?;
    log::info!("removed {} deployed file(s) and directories", removed.removed.len());
    // What activation wrote, before the package goes: tuned's spec ships both as
    // %config(noreplace), so rpm would keep ours as .rpmsave files in a /etc/tuned it
    // then cannot remove (apt-get purge takes them itself).
    for file in [activate::ACTIVE_PROFILE, activate::PROFILE_MODE] {
        if host.remove(file)? {
            log::info!("removed {file}");
        }
    }
    // tuned goes even where the distribution had installed it (the bash package's rule).
    state.receipt().remove(&pm, &[TUNED])?;
    let had_bootloader = state.bootloader.as_ref().is_some_and(|b| !b.is_empty());
    // After tuned is gone, so that nothing patches GRUB again; before the record is
    // cleared, so that a killed run regenerates when run again.
    bootloader::take_back(step, had_bootloader)?;
    store.clear()?;
    if had_bootloader {
        log::warn!(
            "a tuned profile with bootloader options was in effect: the running kernel keeps those \
             command-line options until the node reboots"
        );
    }
    Ok(Outcome::done())
}

/// uninstall-check: tuned gone, service neither active nor enabled, no deployed file left.
pub fn uninstall_check(step: &Step) -> Result<()> {
    let host = &step.host;
    let mut c = Checklist::new();
    for program in ["tuned", "tuned-adm"] {
        c.expect(host.which(program).is_none(), || {
            format!("{program} is still installed")
        });
    }
    let systemd = Systemd::new(host);
    match systemd.is_active(TUNED)? {
        Some(active) => {
            c.expect(!active, || "the tuned service is still active".into());
        }
        None => c.skip("tuned service stopped: systemd is not running on this host"),
    }
    c.expect(!systemd.is_enabled(TUNED)?, || {
        "the tuned service is still enabled".into()
    });
    c.expect(!bootloader::has_tuned_lines(step)?, || {
        format!(
            "{} still holds the $tuned_params/$tuned_initrd lines tuned's bootloader plugin added",
            bootloader::GRUB_DEFAULTS
        )
    });
    let store = step.state();
    if store.exists() {
        let state: State = store.load()?;
        for f in state.footprint.files.iter().filter(|f| host.exists(f)) {
            c.fail(format!(
                "{} (deployed by this package) is still on the node",
                f.display()
            ));
        }
        c.fail(format!(
            "the record of deployed files {} still exists: uninstall did not finish",
            store.file().display()
        ));
    }
    for (path, expected) in deploy::legacy_copies(&step.configmaps, None) {
        c.expect(!deploy::holds(host, &path, &expected)?, || {
            format!(
                "{} (a deployed copy of a configMap key) is still on the node",
                path.display()
            )
        });
    }
    c.finish()
}

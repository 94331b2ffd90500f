// SPDX-License-Identifier: Apache-2.0
//! apply: the kdump package installed (non-interactively, waiting for
//! package manager locks, retrying transient failures, skipped when installed) and
//! the service enabled. The service is not required to run: it cannot load a crash
//! kernel before a reboot has reserved the memory.

use std::collections::BTreeMap;

use skyhook_core::boot::BootConfig;
use skyhook_core::boot::grubby::Originals;
use skyhook_core::host::systemd::Systemd;
use skyhook_core::os::pkgmgr::{PackageManager, Retry};
use skyhook_core::records::receipt::InstallReceipt;
use skyhook_core::{Outcome, Result, Step};

use crate::boot::KEY;
use crate::platform::{DEBCONF_SELECTIONS, Platform};
use crate::state::{InstallRecord, State};

/// The package that provides `kdump.service` on RHEL 10 and Fedora 41+ (it moved
/// there from kexec-tools, which then only recommends it: with weak dependencies off,
/// installing kexec-tools alone leaves no kdump.service).
pub const KDUMP_UTILS: &str = "kdump-utils";

/// What apply installs: the kdump package, and on RHEL-like hosts whose repositories
/// offer it, kdump-utils with it.
fn packages_to_install<'a>(pm: &PackageManager, platform: &Platform, package: &'a str) -> Result<Vec<&'a str>> {
    let mut packages = vec![package];
    if platform.has_kdumpctl() && pm.is_available(KDUMP_UTILS)? {
        log::info!(
            "the repositories offer {KDUMP_UTILS} (it provides kdump.service on RHEL 10 and Fedora 41+): installing it with {package}"
        );
        packages.push(KDUMP_UTILS);
    }
    Ok(packages)
}

/// The `crashkernel=` arguments of every boot entry, on grubby hosts (RHEL-like:
/// where kdumpctl resets them); `None` elsewhere.
fn entries_crashkernel(step: &Step, platform: &Platform) -> Result<Option<BTreeMap<String, Vec<String>>>> {
    if !platform.has_kdumpctl() || !matches!(BootConfig::detect(&step.host, platform.family), Ok(BootConfig::Grubby)) {
        return Ok(None);
    }
    Ok(Some(Originals::capture(&step.host, &[KEY])?.kernels))
}

/// apply: install and enable.
pub fn apply(step: &Step) -> Result<Outcome> {
    // The retry settings first: bad ones stop the step before anything else.
    let retry = Retry::from_env()?;
    let platform = Platform::detect(step)?;
    let pm = PackageManager::detect(&step.host, platform.family, retry)?;
    let (package, unit) = (platform.package(), platform.service());
    let systemd = Systemd::new(&step.host);
    let store = step.state();
    let mut state: State = store.load()?;
    let installed = pm.is_installed(package)?;
    let mut record = match state.install.clone() {
        Some(record) => record,
        None => InstallRecord {
            receipt: InstallReceipt::before(&pm, &[package])?,
            kexec_before: step.host.which("kexec").is_some(),
            service_enabled_before: installed && systemd.is_enabled(unit)?,
            boot_before_install: if installed {
                None
            } else {
                entries_crashkernel(step, &platform)?
            },
            boot_after_install: None,
        },
    };
    // A pending receipt: a run killed during the install; finishing it records what
    // the install added, although the package is there now.
    if installed && !record.receipt.is_pending() {
        state.install = Some(record);
        state.store(&store)?;
        log::info!(
            "{package} is already installed on {}: nothing to install",
            platform.name()
        );
    } else {
        pm.preseed(DEBCONF_SELECTIONS)?;
        let packages = packages_to_install(&pm, &platform, package)?;
        // Recorded before installing, so a run killed after the install still knows
        // the package was not there before, and what was installed then.
        let mut receipt = record.receipt.clone();
        receipt.install(&pm, &packages, |r| {
            record.receipt = r.clone();
            state.install = Some(record.clone());
            state.store(&store)
        })?;
    }
    if let Some(rec) = state.install.as_mut()
        && rec.boot_before_install.is_some()
        && rec.boot_after_install.is_none()
    {
        let after = entries_crashkernel(step, &platform)?;
        if after != rec.boot_before_install {
            log::info!(
                "installing {package} changed crashkernel= on the boot entries (its %posttrans puts the \
                 distribution's default on them while kdump.service is enabled); uninstall takes that back"
            );
        }
        rec.boot_after_install = after;
        state.store(&store)?;
    }
    if systemd.is_enabled(unit)? {
        log::info!("{unit} is enabled");
    } else {
        systemd.enable(unit)?;
        log::info!("enabled {unit}; it loads a crash kernel once a reboot has reserved the memory");
    }
    Ok(Outcome::done())
}

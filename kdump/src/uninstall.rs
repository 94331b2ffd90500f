// SPDX-License-Identifier: Apache-2.0
//! uninstall and uninstall-check.
//!
//! uninstall: the service stopped and disabled, the original service configuration
//! and boot configuration put back (only our `crashkernel=` is removed), the package
//! removed when apply installed it, the boot configuration regenerated, the state
//! forgotten. A package that was installed before apply stays, with its service as it
//! was. Memory stays reserved until the next reboot.
//!
//! uninstall writes a receipt of what it undoes in the copy dir (the one directory the
//! following uninstall-check shares with it, and which belongs to this generation of
//! the package only) before its first change, and never rewrites it: uninstall-check
//! tells our settings from the distribution's by it after the state is gone, and an
//! uninstall run again — after a kill at any point, or after a finished run — takes
//! the same decisions as the first run (it keeps a package the distribution had
//! installed, and its service as it was, whatever the number of runs).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use skyhook_core::boot::BootConfig;
use skyhook_core::boot::with_key;
use skyhook_core::host::bounded;
use skyhook_core::host::systemd::Systemd;
use skyhook_core::os::pkgmgr::{PackageManager, Retry};
use skyhook_core::records::json;
use skyhook_core::{Checklist, HostError, Outcome, Result, Step};

use crate::apply::install::KDUMP_UTILS;
use crate::boot::{self, Boot, DROP_IN_MARKER, KEY};
use crate::checks::{KEXEC_CRASH_SIZE, KEXEC_CRASH_SIZE_NEW, sysfs_file};
use crate::crashkernel::{CrashKernel, human};
use crate::input::Input;
use crate::platform::{DEBIAN_DROP_IN, Platform};
use crate::service;
use crate::state::State;

/// The receipt's file name in the copy dir.
pub const RECEIPT: &str = "kdump-uninstall-receipt.json";

/// What uninstall undid, for uninstall-check.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Receipt {
    /// Our `crashkernel=…` arguments (two for a `,high` and `,low` pair, separated by
    /// a space), removed from the boot configuration.
    pub crashkernel: Option<String>,
    /// The `crashkernel=` arguments the boot configuration had before (they may stay).
    pub original_crashkernel: Vec<String>,
    /// The service configuration file we had deployed, and what we deployed.
    pub kdump_conf: Option<ConfReceipt>,
    /// The kdump package.
    pub package: String,
    /// Whether uninstall removed it (otherwise it was installed before apply, or absent).
    pub removed: bool,
    /// Whether `kexec` was present before apply (`None`: unknown, no apply record).
    pub kexec_before: Option<bool>,
    /// Whether the service was enabled before apply (`None`: unknown).
    pub service_enabled_before: Option<bool>,
}

/// The service configuration uninstall put back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfReceipt {
    /// The file.
    pub path: String,
    /// What the package had deployed there.
    pub deployed: String,
    /// Whether that was also the original content (then it may stay).
    pub deployed_was_original: bool,
}

impl Receipt {
    fn path(step: &Step) -> PathBuf {
        step.ctx.skyhook_dir.join(RECEIPT)
    }

    /// The receipt left by uninstall, if any.
    pub fn load(step: &Step) -> Result<Option<Self>> {
        let path = Self::path(step);
        match bounded::read_regular(&path, bounded::MAX_FILE_BYTES, bounded::Links::Refuse) {
            Ok(Some(raw)) => json::decode(&raw, &path, "what kdump's uninstall undid").map(Some),
            Ok(None) => Ok(None),
            Err(e) => Err(HostError::io("read", path, e).into()),
        }
    }

    fn save(&self, step: &Step) -> Result<()> {
        let path = Self::path(step);
        skyhook_core::host::write_atomic(&path, &json::encode(self)?, 0o644)
            .map_err(|e| HostError::io("write", &path, e))?;
        Ok(())
    }
}

/// uninstall.
pub fn uninstall(step: &Step) -> Result<Outcome> {
    // The retry settings first: bad ones stop the step before anything else.
    let retry = Retry::from_env()?;
    let platform = Platform::detect(step)?;
    let host = &step.host;
    let pm = PackageManager::detect(host, platform.family, retry)?;
    let (package, unit) = (platform.package(), platform.service());
    let store = step.state();
    let mut state: State = store.load()?;
    // A node that ran the bash package has no state: its value is the configMap's.
    let legacy = match &state.boot {
        None => Input::parse(&step.configmaps).ok().and_then(|i| i.crashkernel),
        Some(_) => None,
    };
    let installed = pm.is_installed(package)?;
    let boot = match BootConfig::detect(host, platform.family) {
        Ok(config) => Some(Boot::new(host, config, &store)),
        Err(e) if state.boot.is_some() => return Err(e),
        Err(_) => None,
    };
    // Decided before the first change, from the state as apply and config left it, and
    // kept: a rerun after a kill at any point takes the same decisions.
    let receipt = Receipt::decide(step, &platform, &state, boot.is_some(), legacy.as_ref(), installed)?;
    let remove = installed && receipt.removed;
    let keep_enabled = !receipt.removed && receipt.service_enabled_before == Some(true);

    let systemd = Systemd::new(host);
    if installed && !keep_enabled {
        if systemd.is_active(unit)? == Some(true) {
            systemd.stop(unit)?;
            log::info!("stopped {unit}");
        }
        if systemd.is_enabled(unit)? {
            systemd.disable(unit)?;
            log::info!("disabled {unit}");
        }
    }
    if service::deploy(host, &platform, &mut state, &store, None)? && keep_enabled {
        service::restart_if_running(host, &platform)?;
    }

    let mut boot_changed = false;
    if let Some(boot) = &boot {
        if state.boot.is_some() {
            boot_changed = boot.restore(&mut state, false)?;
        } else if let Some(ck) = &legacy
            && let [token] = ck.tokens().as_slice()
        {
            // The bash package wrote one argument: a pair was never its.
            boot_changed = boot.remove_legacy(token)?;
        }
    }

    // What installing the package did to the boot entries goes with the package.
    if let (Some(boot), Some(install)) = (&boot, &state.install)
        && receipt.removed
        && let (Some(before), Some(after)) = (&install.boot_before_install, &install.boot_after_install)
    {
        boot_changed |= boot.undo_install(before, after)?;
    }

    let drop_in_before = host.exists(DEBIAN_DROP_IN);
    if remove {
        let receipt = state.install.clone().map(|i| i.receipt).unwrap_or_default();
        let mut packages = vec![package];
        if receipt.may_have_added(KDUMP_UTILS) {
            packages.push(KDUMP_UTILS);
        }
        receipt.remove(&pm, &packages)?;
    } else if installed {
        log::info!("{package} was installed before this package's apply: left installed, {unit} left as it was");
    }
    let drop_in_gone = drop_in_before && !host.exists(DEBIAN_DROP_IN);
    if let Some(boot) = &boot {
        if let Some(rec) = &mut state.boot {
            // Regenerates what the restore owes, and only then forgets the record.
            rec.pending |= drop_in_gone;
            boot.finish(&mut state)?;
        } else if boot_changed || drop_in_gone {
            boot.regenerate()?;
        }
    }

    state.install = None;
    state.store(&store)?;
    report_reserved(step)?;
    Ok(Outcome::done())
}

impl Receipt {
    /// The decision of this uninstall: the receipt an earlier run of it left in the
    /// copy dir (killed, or finished: the state may be gone since), or else one
    /// computed from `state` and written before anything changes. Never rewritten: the
    /// copy dir belongs to this generation of the package, which is not applied again
    /// after its uninstall.
    fn decide(
        step: &Step,
        platform: &Platform,
        state: &State,
        has_boot: bool,
        legacy: Option<&CrashKernel>,
        installed: bool,
    ) -> Result<Self> {
        if let Some(earlier) = Receipt::load(step)? {
            if !earlier.removed && installed {
                log::info!(
                    "an earlier uninstall of this package kept {} (installed before this package's apply); \
                     it stays installed",
                    earlier.package
                );
            }
            return Ok(earlier);
        }
        let install = state.install.as_ref();
        let mut receipt = Receipt {
            package: platform.package().to_string(),
            // Without an install record (a node the bash package set up), an installed
            // package goes, as the bash package's uninstall did.
            removed: install.map_or(installed, |i| i.receipt.installed_by_us()),
            kexec_before: install.map(|i| i.kexec_before),
            service_enabled_before: install.map(|i| i.service_enabled_before),
            ..Receipt::default()
        };
        if let Some(rec) = &state.kdump_conf {
            receipt.kdump_conf = Some(ConfReceipt {
                path: platform.kdump_conf().to_string(),
                deployed: rec.deployed.clone(),
                deployed_was_original: rec.original.content()?.as_deref() == Some(rec.deployed.as_bytes()),
            });
        }
        if has_boot {
            if let Some(rec) = &state.boot {
                receipt.crashkernel = Some(rec.tokens().join(" "));
                receipt.original_crashkernel = boot::original_tokens(&rec.original)?;
            } else if let Some(ck) = legacy {
                receipt.crashkernel = Some(ck.tokens().join(" "));
            }
        }
        receipt.save(step)?;
        Ok(receipt)
    }
}

/// uninstall-check: none of our settings remain.
pub fn uninstall_check(step: &Step) -> Result<Outcome> {
    let platform = Platform::detect(step)?;
    let host = &step.host;
    let store = step.state();
    let receipt = Receipt::load(step)?;
    let mut c = Checklist::new();
    c.expect(!store.exists(), || {
        format!(
            "{} still exists: uninstall did not finish putting the originals back; run uninstall again",
            store.file().display()
        )
    });
    if let Some(text) = host.read_to_string(DEBIAN_DROP_IN)? {
        c.expect(!text.contains(DROP_IN_MARKER), || {
            format!("{DEBIAN_DROP_IN} is still the package's; run uninstall again")
        });
    }
    let token = receipt.as_ref().and_then(|r| r.crashkernel.clone()).or_else(|| {
        Input::parse(&step.configmaps)
            .ok()
            .and_then(|i| i.crashkernel)
            .map(|ck| ck.tokens().join(" "))
    });
    let originals = receipt
        .as_ref()
        .map(|r| r.original_crashkernel.clone())
        .unwrap_or_default();
    // Ours, less what the boot configuration had before (the distribution's may stay).
    let ours: Vec<String> = token
        .iter()
        .flat_map(|t| t.split(' '))
        .filter(|t| !t.is_empty() && !originals.iter().any(|o| o == t))
        .map(str::to_string)
        .collect();
    if !ours.is_empty() {
        let token = ours.join(" ");
        match BootConfig::detect(host, platform.family) {
            Ok(config) => {
                let places = Boot::new(host, config, &store).carrying(&ours)?;
                c.expect(places.is_empty(), || {
                    format!(
                        "{token} is still on the boot configuration: {}; run uninstall again",
                        places.join(", ")
                    )
                });
            }
            Err(_) => c.skip(format!(
                "whether {token} is on the boot configuration: this host has no GRUB"
            )),
        }
    }
    let Some(receipt) = receipt else {
        c.skip(format!(
            "the package and the service: uninstall left no receipt in {} (did uninstall run?)",
            step.ctx.skyhook_dir.display()
        ));
        c.finish()?;
        return Ok(Outcome::done());
    };
    check_package_and_service(step, &platform, &receipt, &mut c)?;
    report_reserved(step)?;
    c.finish()?;
    Ok(Outcome::done())
}

/// uninstall-check's half about what uninstall decided for the package, its
/// configuration and its service (the receipt in the copy dir).
fn check_package_and_service(step: &Step, platform: &Platform, receipt: &Receipt, c: &mut Checklist) -> Result<()> {
    let host = &step.host;
    if let Some(conf) = receipt.kdump_conf.as_ref().filter(|c| !c.deployed_was_original) {
        let current = host.read_to_string(&conf.path)?;
        c.expect(current.as_deref() != Some(conf.deployed.as_str()), || {
            format!(
                "{} still holds the configMap's kdump.conf; run uninstall again",
                conf.path
            )
        });
    }
    let pm = PackageManager::detect(host, platform.family, Retry::default())?;
    let unit = platform.service();
    let systemd = Systemd::new(host);
    if receipt.removed {
        c.expect(!pm.is_installed(&receipt.package)?, || {
            format!("{} is still installed; see the uninstall step's log", receipt.package)
        });
        if receipt.kexec_before != Some(true) {
            c.expect(host.which("kexec").is_none(), || {
                format!("kexec is still on this host, although {} was removed", receipt.package)
            });
        }
        c.expect(systemd.is_active(unit)? != Some(true), || {
            format!("{unit} is still running")
        });
        c.expect(!systemd.is_enabled(unit)?, || format!("{unit} is still enabled"));
    } else if receipt.service_enabled_before == Some(false) {
        c.expect(!systemd.is_enabled(unit)?, || {
            format!("{unit} is still enabled, although it was not before the package's apply")
        });
    }
    Ok(())
}

/// Says what stays reserved until the next reboot.
fn report_reserved(step: &Step) -> Result<()> {
    let host = &step.host;
    let reserved = host
        .read_to_string(sysfs_file(host, KEXEC_CRASH_SIZE_NEW, KEXEC_CRASH_SIZE))?
        .and_then(|t| t.trim().parse::<u64>().ok())
        .unwrap_or(0);
    if reserved > 0 {
        let booted = host
            .read_to_string("/proc/cmdline")?
            .map(|t| skyhook_core::boot::split_cmdline(&t))
            .unwrap_or_default();
        log::warn!(
            "{} of memory stay reserved for a crash kernel until the next reboot (the running kernel was booted \
             with {}); the next boot follows the boot configuration as it is now",
            human(reserved),
            with_key(&booted, KEY).join(" ")
        );
    } else {
        log::info!("no memory is reserved for a crash kernel by the running kernel");
    }
    Ok(())
}

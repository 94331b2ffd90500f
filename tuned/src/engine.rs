// SPDX-License-Identifier: Apache-2.0
//! The one entry point of a package that drives tuned as a library (nvidia-tuned):
//! [`run`] runs tuned's side of the step's mode on the caller's kind, with the
//! request in tuned's own vocabulary ([`EngineRequest`]), and runs the caller's
//! [`Extension`] inside that flow at fixed points: config calls its preflight after
//! reading the request and before tuned changes anything, and its finish after
//! activation (with [`Activated`]: where a profile lives, and tuned restarted for
//! tuned-main.conf); the checks add its unmet expectations to tuned's; uninstall runs
//! its work after tuned's records are read and before and after tuned's removal. Also
//! the few names of tuned's vocabulary such a package needs.

use std::collections::BTreeMap;
use std::path::PathBuf;

use skyhook_core::host::systemd::Systemd;
use skyhook_core::os::pkgmgr::Retry;
use skyhook_core::{ConfigMaps, Error, Interrupt, Mode, Outcome, Result, Step};

use crate::layout::{MAIN_CONF, Tuned as TunedLayout};
use crate::service::TUNED;
use crate::{apply, checks, uninstall};

pub use crate::activate::BOOTCMDLINE;
pub use crate::bootloader::{GRUB_DEFAULTS, refuse_unregistrable_hugepages};
pub use crate::checks::Verify;
pub use crate::conf::Conf;
pub use crate::deploy::State;
pub use crate::input::PROFILE_KEY;

/// What the caller hands tuned: the request in tuned's own configMap keys (one key
/// per profile and [`PROFILE_KEY`], built in memory; empty for apply, upgrade and
/// uninstall), and further files to deploy, check and remove like the profiles (by
/// host path, mode 0644).
#[derive(Debug, Clone, Default)]
pub struct EngineRequest {
    /// The profiles and `tuned_profile`, as tuned's configMap holds them.
    pub configmaps: ConfigMaps,
    /// Further files, by host path.
    pub files: BTreeMap<PathBuf, Vec<u8>>,
}

/// The caller's work inside tuned's flow; every hook does nothing unless given.
/// Each hook gets the caller's own step (its configMap, not tuned's request).
pub trait Extension {
    /// config, after the request is read and before tuned changes anything: the
    /// caller's validation against the node (a refusal leaves the node as it was), and
    /// what it records about to change.
    fn preflight(&mut self, _step: &Step) -> Result<()> {
        Ok(())
    }

    /// config, after tuned deployed and activated: the caller's changes; the
    /// interrupt they need is combined with tuned's.
    fn finish(&mut self, _step: &Step, _tuned: &Activated<'_>) -> Result<Interrupt> {
        Ok(Interrupt::NoOp)
    }

    /// config-check and post-interrupt-check, after tuned's checks: the caller's unmet
    /// expectations, added to tuned's.
    fn unmet(&mut self, _step: &Step, _verify: Verify) -> Result<Vec<String>> {
        Ok(Vec::new())
    }

    /// uninstall, after tuned's records are read and before tuned's removal.
    fn before_uninstall(&mut self, _step: &Step) -> Result<()> {
        Ok(())
    }

    /// uninstall, after tuned's removal.
    fn after_uninstall(&mut self, _step: &Step) -> Result<()> {
        Ok(())
    }

    /// uninstall-check, after tuned's: the caller's unmet expectations.
    fn uninstall_unmet(&mut self, _step: &Step) -> Result<Vec<String>> {
        Ok(Vec::new())
    }
}

/// No extension: tuned's side of the mode alone.
pub struct Plain;

impl Extension for Plain {}

/// What config's finish may ask of tuned once the profiles are active.
pub struct Activated<'a> {
    step: &'a Step,
    layout: TunedLayout,
}

impl Activated<'_> {
    /// Where the profile `name` is deployed (the installed tuned's custom directory).
    pub fn profile_file(&self, name: &str) -> PathBuf {
        self.layout.profile_file(name)
    }

    /// Restarts tuned so that it reads a changed tuned-main.conf (without a running
    /// systemd, tuned reads it when it starts).
    pub fn restart_for_main_conf(&self) -> Result<()> {
        let systemd = Systemd::new(&self.step.host);
        if systemd.is_running() {
            systemd.restart(TUNED)?;
            log::info!("restarted tuned so that it reads {MAIN_CONF}");
        } else {
            log::info!("systemd is not running: tuned reads {MAIN_CONF} when it starts");
        }
        Ok(())
    }
}

/// Runs tuned's side of `step`'s mode on `step`'s kind (its state is the caller's),
/// with `request` and `extension`'s hooks inside the flow.
pub fn run(step: &Step, request: &EngineRequest, extension: &mut dyn Extension) -> Result<Outcome> {
    let engine = || step.derived(step.kind(), request.configmaps.clone());
    match step.mode() {
        Mode::Apply | Mode::Upgrade => apply::install(&engine()),
        Mode::ApplyCheck | Mode::UpgradeCheck => checks::install_check(&engine()).map(|()| Outcome::done()),
        Mode::Config => config(step, &engine(), &request.files, extension),
        Mode::ConfigCheck => check(step, &engine(), request, Verify::InterruptMayExcuse, extension),
        Mode::PostInterruptCheck => check(step, &engine(), request, Verify::Required, extension),
        Mode::Uninstall => {
            // tuned's uninstall reads these first; read before any change of the
            // extension too, with tuned's record: a damaged one stops the step first.
            Retry::from_env()?;
            step.family()?;
            let engine = engine();
            uninstall::read_record(&engine)?;
            extension.before_uninstall(step)?;
            let outcome = uninstall::uninstall(&engine)?;
            extension.after_uninstall(step)?;
            Ok(outcome)
        }
        Mode::UninstallCheck => {
            let result = uninstall::uninstall_check(&engine());
            with_unmet(result, extension.uninstall_unmet(step)?)
        }
        other => Err(Error::Mode(format!("the tuned engine has no mode {other}"))),
    }
}

/// config: the extension's preflight, tuned's config, the extension's finish.
fn config(
    step: &Step,
    engine: &Step,
    files: &BTreeMap<PathBuf, Vec<u8>>,
    extension: &mut dyn Extension,
) -> Result<Outcome> {
    extension.preflight(step)?;
    let outcome = apply::config_with(engine, files)?;
    let activated = Activated {
        step,
        layout: TunedLayout::detect(step)?,
    };
    let needs = extension.finish(step, &activated)?;
    Ok(Outcome::needs(
        outcome.interrupt.unwrap_or(Interrupt::NoOp).combine(needs),
    ))
}

/// config-check / post-interrupt-check: tuned's checks, then the extension's.
fn check(
    step: &Step,
    engine: &Step,
    request: &EngineRequest,
    verify: Verify,
    extension: &mut dyn Extension,
) -> Result<Outcome> {
    let result = checks::config_check_with(engine, verify, &request.files);
    with_unmet(result, extension.unmet(step, verify)?)
}

/// tuned's check result with the extension's unmet expectations added.
fn with_unmet(result: Result<()>, extra: Vec<String>) -> Result<Outcome> {
    if extra.is_empty() {
        return result.map(|()| Outcome::done());
    }
    let mut unmet = match result {
        Err(Error::Check(v)) => v,
        Err(e) => return Err(e),
        Ok(()) => Vec::new(),
    };
    unmet.extend(extra);
    Err(Error::Check(unmet))
}

// SPDX-License-Identifier: Apache-2.0
//! The modes, each on the tuning engine in process ([`tuning::run_preset`]) with
//! the mitigation's input and preset ([`crate::mitigation`]): the engine writes,
//! takes over, checks and removes `/etc/modprobe.d/disable-algif.conf` and unloads
//! `algif_aead` when nothing uses it. The checks add the package's own: the one
//! line saying whether the node is still vulnerable ([`crate::verdict`]), and, in
//! config-check, the module still in the running kernel (a failure unless
//! `ALLOW_LOADED_MODULE=true`). Uninstall needs no input and reads no environment:
//! it undoes what the records say (and takes the bash package's identical file),
//! with or without the configMap.

use skyhook_core::{Checklist, Error, Outcome, Result, Step};

use crate::mitigation::{self, CVE, FILE, MODULE};
use crate::request::{self, ALLOW_LOADED_MODULE};
use crate::{KIND, verdict};

/// Runs the engine's mode of `step` with the mitigation's input.
fn engine(step: &Step) -> Result<Outcome> {
    tuning::run_preset(step, KIND, mitigation::input(), &mitigation::preset())
}

/// The engine's result and the package's own checklist as one: every unmet
/// expectation of both, or the first other error.
fn both(engine: Result<Outcome>, own: Checklist) -> Result<Outcome> {
    match (engine, own.finish()) {
        (Err(Error::Check(mut unmet)), Err(Error::Check(more))) => {
            unmet.extend(more);
            Err(Error::Check(unmet))
        }
        (Err(e), _) | (Ok(_), Err(e)) => Err(e),
        (Ok(outcome), Ok(())) => Ok(outcome),
    }
}

/// config: writes the file (or takes over the bash package's), then unloads the
/// module when nothing uses it.
pub fn config(step: &Step) -> Result<Outcome> {
    request::allow_loaded_module_env()?;
    request::warn_configmap(&step.configmaps);
    engine(step)
}

/// config-check: the engine's (the file exactly, nothing read before it installing
/// the module otherwise), the verdict line, and the module out of the running
/// kernel unless `ALLOW_LOADED_MODULE=true`.
pub fn config_check(step: &Step) -> Result<Outcome> {
    let allow = request::allow_loaded_module_env()?;
    request::warn_configmap(&step.configmaps);
    let engine = engine(step);
    let exposure = verdict::assess(&step.host)?;
    verdict::report(exposure.as_ref());
    let mut own = Checklist::new();
    match exposure.filter(verdict::Exposure::in_running_kernel) {
        None => {}
        Some(e) if allow => log::warn!(
            "{e}: the node stays vulnerable to {CVE} until the module is gone ({ALLOW_LOADED_MODULE}=true accepts \
             it here; post-interrupt-check does not)"
        ),
        Some(e) => own.fail(format!(
            "{e}: the node stays vulnerable to {CVE} until {MODULE} is gone although {FILE} is in place: reboot \
             the node (a drain and `interrupt: {{type: reboot}}`), or set {ALLOW_LOADED_MODULE}=true in the SCR's \
             env to accept a loaded module until a planned reboot"
        )),
    }
    both(engine, own)
}

/// post-interrupt-check: the engine's (the module neither loaded nor built in),
/// the verdict line, and nothing letting the module load (the file missing or
/// changed since config, an `install` line kmod reads first).
pub fn post_interrupt_check(step: &Step) -> Result<Outcome> {
    request::allow_loaded_module_env()?;
    request::warn_configmap(&step.configmaps);
    let engine = engine(step);
    let exposure = verdict::assess(&step.host)?;
    verdict::report(exposure.as_ref());
    let mut own = Checklist::new();
    if let Some(e) = exposure.filter(|e| !e.in_running_kernel()) {
        own.fail(format!("{e}: the node can load {MODULE} again; run config"));
    }
    both(engine, own)
}

/// uninstall: the file goes (the module is not loaded: the kernel loads it again on
/// demand); the configMap and environment are not read.
pub fn uninstall(step: &Step) -> Result<Outcome> {
    tuning::run_preset(step, KIND, mitigation::no_input(), &mitigation::preset())
}

/// uninstall-check: the file is gone (ours, or the bash package's identical one)
/// and nothing is recorded.
pub fn uninstall_check(step: &Step) -> Result<Outcome> {
    tuning::run_preset(step, KIND, mitigation::no_input(), &mitigation::preset())
}

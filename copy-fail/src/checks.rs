// SPDX-License-Identifier: Apache-2.0
//! The check modes: the engine's checks ([`crate::plan::on_engine`]) and the
//! package's own, as one checklist: the one line saying whether the node is still
//! vulnerable ([`crate::verdict`]), and, in config-check, the module still in the
//! running kernel (a failure unless `ALLOW_LOADED_MODULE=true`).

use skyhook_core::{Checklist, Outcome, Result, Step};

use crate::input::{self, ALLOW_LOADED_MODULE};
use crate::plan::{self, CVE, FILE, MODULE};
use crate::verdict;

/// config-check: the engine's (the file exactly, nothing read before it installing
/// the module otherwise), the verdict line, and the module out of the running
/// kernel unless `ALLOW_LOADED_MODULE=true`.
pub fn config_check(step: &Step) -> Result<Outcome> {
    let allow = input::allow_loaded_module_env()?;
    input::warn_configmap(&step.configmaps);
    let engine = plan::on_engine(step);
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
    own.finish_after(engine)
}

/// post-interrupt-check: the engine's (the module neither loaded nor built in),
/// the verdict line, and nothing letting the module load (the file missing or
/// changed since config, an `install` line kmod reads first).
pub fn post_interrupt_check(step: &Step) -> Result<Outcome> {
    input::allow_loaded_module_env()?;
    input::warn_configmap(&step.configmaps);
    let engine = plan::on_engine(step);
    let exposure = verdict::assess(&step.host)?;
    verdict::report(exposure.as_ref());
    let mut own = Checklist::new();
    if let Some(e) = exposure.filter(|e| !e.in_running_kernel()) {
        own.fail(format!("{e}: the node can load {MODULE} again; run config"));
    }
    own.finish_after(engine)
}

// SPDX-License-Identifier: Apache-2.0
//! The request and the node turned into what apply does: the combination (the
//! accelerator named, or for `auto` the one the node shows, as nvidia-tuned
//! chooses it), its kernel target with `NVIDIA_KERNEL` replacing the default, and
//! which of apply's two shapes runs. Every refusal of the input is made here,
//! before any change.

use skyhook_core::platform::accelerator::{self, AUTO};
use skyhook_core::{ConfigMaps, Result, Step};

use crate::combos::{self, Combination, Steps};
use crate::eks::efa;
use crate::input::Request;
use crate::kernel::Target;

/// What apply does on this node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// `NVIDIA_SETUP_INSTALL_KERNEL=true` with a kernel: install it as the boot default.
    InstallKernel {
        /// The kernel.
        target: Target,
        /// `NVIDIA_PIN_KERNEL=true`.
        pin: bool,
    },
    /// The combination's steps, after the running kernel is checked against the
    /// target (none where the platform manages the kernel).
    Steps {
        /// The kernel the node must run.
        kernel: Option<Target>,
        /// The steps.
        steps: Steps,
        /// The EFA installer (`NVIDIA_EFA`, else the combination's version) and the
        /// key it must be signed by (`NVIDIA_EFA_KEY_FINGERPRINT`, else AWS's).
        efa: efa::Source,
        /// `NVIDIA_SETUP_APT_UPGRADE=true`.
        apt_upgrade: bool,
    },
}

/// The plan of `step`, with the combination it was made for.
pub fn plan(step: &Step) -> Result<(Plan, &'static Combination)> {
    let request = Request::from_env(&step.configmaps)?;
    let service = combos::service(&request.service)?;
    let metadata = step.node_metadata();
    let choice = accelerator::resolve(
        &request.accelerator,
        &metadata,
        &step.host,
        &combos::accelerators_of(service),
    )?;
    if request.accelerator == AUTO {
        log::info!("{choice}");
    }
    let combination = combos::find(service, &choice.name)?;
    let kernel = request
        .overrides
        .kernel
        .as_deref()
        .or(combination.kernel)
        .map(|k| Target::on(&step.host, k, request.switches.allow_newer));
    let plan = match (combination.steps, kernel) {
        // bcm: the headers link, before any kernel logic (as upstream).
        (Steps::Bcm, _) => Plan::Steps {
            kernel: None,
            steps: Steps::Bcm,
            efa: efa::Source::default(),
            apt_upgrade: false,
        },
        (_, Some(target)) if request.switches.install_kernel => Plan::InstallKernel {
            target,
            pin: request.switches.pin_kernel,
        },
        (steps, kernel) => Plan::Steps {
            kernel,
            steps,
            efa: efa::Source {
                version: request
                    .overrides
                    .efa
                    .clone()
                    .unwrap_or_else(|| combination.efa.unwrap_or("-").to_string()),
                key: request
                    .overrides
                    .efa_key
                    .clone()
                    .unwrap_or_else(|| efa::signature::AWS_KEY.to_string()),
            },
            apt_upgrade: request.switches.apt_upgrade,
        },
    };
    log::info!("{}: {}", combination.name(), describe(&plan));
    Ok((plan, combination))
}

/// One line saying what the plan does.
fn describe(plan: &Plan) -> String {
    match plan {
        Plan::InstallKernel { target, pin } => format!(
            "install kernel {}{} as the boot default",
            target.release,
            if *pin { ", pinned and held" } else { "" }
        ),
        Plan::Steps {
            kernel: Some(t), steps, ..
        } => format!("kernel {} checked, then the {steps:?} steps", t.release),
        Plan::Steps {
            kernel: None, steps, ..
        } => format!("the {steps:?} steps (the platform manages the kernel)"),
    }
}

/// Validates an SCR entry offline (lint): the input, the service, and the
/// combination unless the accelerator is `auto` (decided on each node).
pub fn validate_offline(cm: &ConfigMaps, env: impl Fn(&str) -> Option<String>) -> Result<()> {
    let request = Request::read(cm, env)?;
    let service = combos::service(&request.service)?;
    if request.accelerator != AUTO {
        combos::find(service, &request.accelerator)?;
    }
    Ok(())
}

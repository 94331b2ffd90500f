// SPDX-License-Identifier: Apache-2.0
//! The nvidia-tuning-gke package: NVIDIA's sysctl settings (and, with
//! `USE_CONTAINERD=true`, a containerd drop-in) per accelerator and workload intent,
//! for GKE nodes, Container-Optimized OS included, applied in process by the tuning
//! engine.
//!
//! The package layout (DESIGN.md): [`input`] reads the configMap and environment,
//! [`plan`] validates it, picks the accelerator ([`choice`]: a name, or `auto` from
//! the node), looks the combination up in the embedded [`catalog`] and turns it
//! into tuning's input; [`apply`] is config, [`checks`] the check modes and
//! [`uninstall`] the removal, all on the tuning engine; [`optional`] handles the
//! keys some kernels lack; [`effective`] shows every combination's settings
//! ([`catalog()`], for `skyhook-pkg profiles` and lint); [`review`] is what lint reads.

pub mod apply;
pub mod catalog;
pub mod checks;
pub mod choice;
pub mod effective;
pub mod input;
pub mod optional;
pub mod plan;
pub mod review;
pub mod uninstall;

use skyhook_core::profile::Catalog;
use skyhook_core::runtime::run::Handler;
use skyhook_core::{ConfigMaps, Mode, Package, Result};

/// The package kind: names the binary, the state directory and the logs.
pub const KIND: &str = "nvidia-tuning-gke";

/// The nvidia-tuning-gke package.
pub struct NvidiaTuningGke;

impl Package for NvidiaTuningGke {
    const KIND: &'static str = KIND;
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    const MODES: &'static [(Mode, Handler)] = &[
        (Mode::Config, apply::config),
        (Mode::ConfigCheck, checks::config_check),
        (Mode::PostInterruptCheck, checks::post_interrupt_check),
        (Mode::Uninstall, uninstall::uninstall),
        (Mode::UninstallCheck, uninstall::uninstall_check),
    ];
    // Made for Container-Optimized OS: its settings are live, see the README.
    const NEEDS_PERSISTENT_ETC: bool = false;
}

/// The package's catalog: every combination and its effective settings.
pub fn catalog() -> impl Catalog {
    effective::GkeProfiles
}

/// Validates a configMap offline, as config would before any change (the entry point
/// of `skyhook-pkg lint`): the keys, an accelerator named in the catalog (or `auto`,
/// decided on each node) and an intent of it. `use_containerd` is the SCR's
/// `USE_CONTAINERD` value, if any. `Err(Error::Input)` lists every problem.
pub fn validate(cm: &ConfigMaps, use_containerd: Option<&str>) -> Result<()> {
    plan::validate_offline(cm, use_containerd)
}

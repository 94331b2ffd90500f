// SPDX-License-Identifier: Apache-2.0
//! The nvidia-tuning-gke package: NVIDIA's sysctl settings (and, with
//! `USE_CONTAINERD=true`, a containerd drop-in) per accelerator and workload intent,
//! for GKE nodes, Container-Optimized OS included, applied in process by the tuning
//! engine.
//!
//! One module per concern: [`request`] reads the configMap and environment,
//! [`choice`] picks the accelerator (a name, or `auto` from the node), [`catalog`]
//! is the embedded catalog, [`tuning_input`] turns a combination into tuning's
//! input, [`optional`] handles the keys some kernels lack, [`modes`] runs each mode
//! on the tuning engine, [`effective`] shows every combination's settings
//! ([`catalog()`], for `skyhook-pkg profiles` and lint).

pub mod catalog;
pub mod choice;
pub mod effective;
pub mod modes;
pub mod optional;
pub mod request;
pub mod review;
pub mod tuning_input;

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
        (Mode::Config, modes::config),
        (Mode::ConfigCheck, modes::config_check),
        (Mode::PostInterruptCheck, modes::post_interrupt_check),
        (Mode::Uninstall, modes::uninstall),
        (Mode::UninstallCheck, modes::uninstall_check),
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
    modes::validate_offline(cm, use_containerd)
}

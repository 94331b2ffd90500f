// SPDX-License-Identifier: Apache-2.0
//! The nvidia-setup package: NVIDIA's GPU node bring-up per `service` ×
//! `accelerator` (upstream's `nvidia-setup`, its combinations and defaults), with
//! an uninstall upstream lacks. This version carries the kernel step
//! (`NVIDIA_SETUP_INSTALL_KERNEL=true`: install, boot default, pin), the EKS steps
//! (with the instance storage's RAID0 array, built at boot by a unit running this
//! binary's [`eks::disks::boot::COMMAND`]), aks-h100 and bcm's headers link
//! (README).
//!
//! The package layout (DESIGN.md): [`input`] reads the configMap and environment,
//! [`plan`] picks the combination ([`combos`]) and what apply does; [`apply`] is
//! apply, [`checks`] apply-check and post-interrupt-check, [`uninstall`] the
//! removal from the [`record`]; [`kernel`], [`eks`], [`headers`], [`ib_modules`]
//! and [`aks`] are the steps ([`engine`]: the tuning engine they use);
//! [`catalog`] shows every combination to `skyhook-pkg profiles`, and [`review`]
//! is what `skyhook-pkg lint` reads.

pub mod aks;
pub mod apply;
pub mod catalog;
pub mod checks;
pub mod combos;
pub mod eks;
pub mod engine;
pub mod headers;
pub mod ib_modules;
pub mod input;
pub mod kernel;
pub mod plan;
pub mod record;
pub mod review;
pub mod uninstall;

use skyhook_core::runtime::run::{Command, Handler};
use skyhook_core::{ConfigMaps, Mode, Package, Result};

/// The package kind: names the binary, the state directory and the logs.
pub const KIND: &str = "nvidia-setup";
/// config.json's `package_name`, the bash package's, so that a node upgrades in place.
pub const PACKAGE_NAME: &str = "nvidia_setup";

/// The nvidia-setup package.
pub struct NvidiaSetup;

impl Package for NvidiaSetup {
    const KIND: &'static str = KIND;
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    const MODES: &'static [(Mode, Handler)] = &[
        (Mode::Apply, apply::apply),
        (Mode::ApplyCheck, checks::apply_check),
        (Mode::PostInterruptCheck, checks::post_interrupt_check),
        (Mode::Uninstall, uninstall::uninstall),
        (Mode::UninstallCheck, uninstall::uninstall_check),
    ];
    // The boot default, the pin and the links live in /etc, /boot and /usr/src.
    const NEEDS_PERSISTENT_ETC: bool = true;
    // What the instance storage's boot unit runs.
    const COMMANDS: &'static [(&'static str, Command)] = &[(eks::disks::boot::COMMAND, eks::disks::boot::run)];
}

/// Validates an SCR entry offline, as apply would before any change (the entry
/// point of `skyhook-pkg lint`); `env` looks up the entry's environment.
pub fn validate(cm: &ConfigMaps, env: impl Fn(&str) -> Option<String>) -> Result<()> {
    plan::validate_offline(cm, env)
}

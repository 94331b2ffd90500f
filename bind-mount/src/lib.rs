// SPDX-License-Identifier: Apache-2.0
//! The bind-mount package: one existing host mount exposed at a second stable path
//! through a persistent systemd bind mount unit. It never discovers, formats,
//! assembles or deletes storage, and it never unmounts.
//!
//! - apply, config, upgrade: validate the source mount, the target and the unit name,
//!   write `/etc/systemd/system/<escaped-target>.mount`, record the ownership receipt,
//!   enable the unit; the SCR's interrupt activates it.
//! - their checks: the prepared unit; post-interrupt-check: the live bind mount.
//! - uninstall: disables and removes the unit, leaves a live target mounted.
//!
//! One module per concern: [`input`] (the configMap), [`identity`] (the instance:
//! Skyhook resource and package key), [`escape`] (systemd's path escaping),
//! [`unit`] (the unit file and owner marker), [`mounts`] (the host's mount table),
//! [`fstab`], [`receipt`] (the ownership record), [`safety`] (the refusals before any
//! change), and one module per mode group: [`apply`], [`checks`], [`uninstall`].

pub mod apply;
pub mod checks;
pub mod escape;
pub mod fstab;
pub mod identity;
pub mod input;
pub mod mounts;
pub mod receipt;
pub mod review;
pub mod safety;
pub mod uninstall;
pub mod unit;

use skyhook_core::runtime::run::Handler;
use skyhook_core::{Mode, Outcome, Result, Step};

/// The package kind: its binary, its state directory, config.json's `package_name`.
pub const KIND: &str = "bind-mount";

/// The bind-mount package.
pub struct BindMount;

/// post-interrupt: nothing to do; the interrupt itself activated the unit, and
/// post-interrupt-check proves it.
fn post_interrupt(_step: &Step) -> Result<Outcome> {
    log::info!("nothing to do after the interrupt: post-interrupt-check verifies the live bind mount");
    Ok(Outcome::done())
}

impl skyhook_core::Package for BindMount {
    const KIND: &'static str = KIND;
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    const MODES: &'static [(Mode, Handler)] = &[
        (Mode::Apply, apply::install),
        (Mode::ApplyCheck, checks::prepared_check),
        (Mode::Config, apply::install),
        (Mode::ConfigCheck, checks::prepared_check),
        (Mode::PostInterrupt, post_interrupt),
        (Mode::PostInterruptCheck, checks::active_check),
        (Mode::Upgrade, apply::install),
        (Mode::UpgradeCheck, checks::prepared_check),
        (Mode::Uninstall, uninstall::uninstall),
        (Mode::UninstallCheck, uninstall::uninstall_check),
    ];
    const NEEDS_PERSISTENT_ETC: bool = true;
}

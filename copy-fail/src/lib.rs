// SPDX-License-Identifier: Apache-2.0
//! The copy-fail package: the temporary mitigation of CVE-2026-31431 ("Copy Fail",
//! CERT-EU advisory 2026-005), a preset on the tuning engine. The kernel module
//! `algif_aead` (AF_ALG AEAD sockets) is kept out by
//! `/etc/modprobe.d/disable-algif.conf` holding `install algif_aead /bin/false`,
//! the file and content of the bash package it replaces, and unloaded when nothing
//! uses it.
//!
//! The package layout (DESIGN.md): [`input`] reads the SCR's environment, [`plan`]
//! is what the package asks of the engine (the module, the file, tuning's input),
//! [`apply`] is config, [`checks`] the check modes, [`uninstall`] the removal, all on
//! the tuning engine; [`verdict`] says in one line whether the node is still
//! vulnerable; [`review`] is what `skyhook-pkg lint` and `profiles` read.

pub mod apply;
pub mod checks;
pub mod input;
pub mod plan;
pub mod review;
pub mod uninstall;
pub mod verdict;

use skyhook_core::runtime::run::Handler;
use skyhook_core::{ConfigMaps, Mode, Package, Result};

/// The package kind: names the binary, the state directory and the logs.
pub const KIND: &str = "copy-fail";

/// The copy-fail package.
pub struct CopyFail;

impl Package for CopyFail {
    const KIND: &'static str = KIND;
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    const MODES: &'static [(Mode, Handler)] = &[
        (Mode::Config, apply::config),
        (Mode::ConfigCheck, checks::config_check),
        (Mode::PostInterruptCheck, checks::post_interrupt_check),
        (Mode::Uninstall, uninstall::uninstall),
        (Mode::UninstallCheck, uninstall::uninstall_check),
    ];
    // The mitigation is a file in /etc: on a node whose /etc does not survive a
    // reboot, the module would load again after one while the package reads applied.
    const NEEDS_PERSISTENT_ETC: bool = true;
}

/// Validates an SCR entry offline, as config would before any change (the entry
/// point of `skyhook-pkg lint`): the package reads no configMap key, and
/// `allow_loaded_module` is the entry's `ALLOW_LOADED_MODULE` value, if any.
/// `Err(Error::Input)` names the problem.
pub fn validate(_cm: &ConfigMaps, allow_loaded_module: Option<&str>) -> Result<()> {
    input::allow_loaded_module(allow_loaded_module).map(|_| ())
}

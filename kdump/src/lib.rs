// SPDX-License-Identifier: Apache-2.0
//! The kdump package: kernel crash dumps, installed, reserved, proven and removed cleanly.
//!
//! - apply: installs `kdump-tools` (Debian-like, its "enable kdump" debconf question
//!   answered yes) or `kexec-tools` (RHEL-like) and enables the service.
//! - config: puts the `crashkernel` value on the kernel command line and deploys
//!   `kdump.conf` as the service configuration, keeping the originals.
//! - post-interrupt-check: proves the running kernel reserved the memory and loaded a
//!   crash kernel.
//! - uninstall: puts every original back and removes what apply installed.
//!
//! One module per concern: [`advice`] (what a node likely needs), [`autoreset`]
//! (kdumpctl's `auto_reset_crashkernel`), [`crashkernel`] (the value's syntax), [`input`] (the
//! configMap), [`platform`] (names per distribution), [`state`] (what was changed),
//! [`boot`] (the boot configuration), [`service`] (the service configuration and
//! the service), and, as in every package (DESIGN.md), one module per mode group:
//! [`apply`] (apply and config), [`checks`] (every check mode), [`uninstall`];
//! [`review`] is what `skyhook-pkg lint` reads.

pub mod advice;
pub mod apply;
pub mod autoreset;
pub mod boot;
pub mod checks;
pub mod crashkernel;
pub mod input;
pub mod platform;
pub mod review;
pub mod service;
pub mod state;
pub mod uninstall;

use skyhook_core::runtime::run::Handler;
use skyhook_core::{Mode, Package};

/// The kdump package.
pub struct Kdump;

impl Package for Kdump {
    const KIND: &'static str = "kdump";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    const MODES: &'static [(Mode, Handler)] = &[
        (Mode::Apply, apply::apply),
        (Mode::ApplyCheck, checks::apply_check),
        (Mode::Config, apply::config),
        (Mode::ConfigCheck, checks::config_check),
        (Mode::PostInterruptCheck, checks::post_interrupt_check),
        (Mode::Uninstall, uninstall::uninstall),
        (Mode::UninstallCheck, uninstall::uninstall_check),
    ];
    const NEEDS_PERSISTENT_ETC: bool = true;
}

// SPDX-License-Identifier: Apache-2.0
//! The kdump package: kernel crash dumps: installed, reserved, proven and removed cleanly.
//!
//! Skeleton: the modes are declared in config.json but not implemented yet; every
//! mode answers "not implemented" with exit code 2.

use skyhook_core::{Error, Mode, Outcome, Package, Result, Step};

/// The kdump package.
pub struct Kdump;

impl Package for Kdump {
    const KIND: &'static str = "kdump";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    const MODES: &'static [Mode] = &[
        Mode::Apply,
        Mode::ApplyCheck,
        Mode::Config,
        Mode::ConfigCheck,
        Mode::PostInterruptCheck,
        Mode::Uninstall,
        Mode::UninstallCheck,
    ];

    fn run(&self, step: &Step) -> Result<Outcome> {
        Err(Error::Mode(format!("mode {} is not implemented yet", step.mode())))
    }
}

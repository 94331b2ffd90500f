// SPDX-License-Identifier: Apache-2.0
//! The tuning package: sysctl, user limits, systemd service limits and kernel arguments, declaratively.
//!
//! Skeleton: the modes are declared in config.json but not implemented yet; every
//! mode answers "not implemented" with exit code 2.

use skyhook_core::{Error, Mode, Outcome, Package, Result, Step};

/// The tuning package.
pub struct Tuning;

impl Package for Tuning {
    const KIND: &'static str = "tuning";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    const MODES: &'static [Mode] = &[
        Mode::Config,
        Mode::ConfigCheck,
        Mode::PostInterruptCheck,
        Mode::Upgrade,
        Mode::UpgradeCheck,
        Mode::Uninstall,
        Mode::UninstallCheck,
    ];

    fn run(&self, step: &Step) -> Result<Outcome> {
        Err(Error::Mode(format!("mode {} is not implemented yet", step.mode())))
    }
}

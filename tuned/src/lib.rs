// SPDX-License-Identifier: Apache-2.0
//! The tuned package: installs the tuned daemon and runs custom and built-in profiles.
//!
//! Skeleton: the modes are declared in config.json but not implemented yet; every
//! mode answers "not implemented" with exit code 2.

use skyhook_core::{Error, Mode, Outcome, Package, Result, Step};

/// The tuned package.
pub struct Tuned;

impl Package for Tuned {
    const KIND: &'static str = "tuned";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    const MODES: &'static [Mode] = &[
        Mode::Apply,
        Mode::ApplyCheck,
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

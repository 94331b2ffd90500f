// SPDX-License-Identifier: Apache-2.0
//! The shellscript package: runs the SCR's own scripts in every lifecycle stage.
//!
//! Skeleton: the modes are declared in config.json but not implemented yet; every
//! mode answers "not implemented" with exit code 2.

use skyhook_core::{Error, Mode, Outcome, Package, Result, Step};

/// The shellscript package.
pub struct Shellscript;

impl Package for Shellscript {
    const KIND: &'static str = "shellscript";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    const MODES: &'static [Mode] = &[
        Mode::Apply,
        Mode::ApplyCheck,
        Mode::Config,
        Mode::ConfigCheck,
        Mode::PostInterrupt,
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

// SPDX-License-Identifier: Apache-2.0
//! The tuned package: installs the tuned daemon, deploys the SCR's custom profiles and
//! helper scripts, activates the chosen profile(s), verifies them, and removes all of
//! it on uninstall. ConfigMap keys, the `INTERRUPT` variable and on-node paths are
//! those of the bash package it replaces (see README.md).
//!
//! The package layout (DESIGN.md): [`input`] the configMap validated on its own,
//! `plan` the request checked against the node into a deployment, `apply` config
//! (deploy and reconcile, activate), `checks` config-check and post-interrupt-check,
//! `uninstall` the removal, `review` what lint reads; [`engine`] the one entry point
//! of a package that drives tuned as a library (nvidia-tuned), its hooks inside
//! tuned's flow. The domain: `service` the tuned distribution package and its package
//! manager, [`conf`] tuned's profile format, [`layout`] the installed tuned and its
//! profile directories, `deploy` the deployed files and their state, [`activate`] the
//! active profile and tuned's log, [`bootloader`] the kernel arguments of the active
//! profiles. Only `engine` is for other packages; the other public modules are for
//! this crate's tests and benches.

pub mod activate;
pub(crate) mod apply;
pub mod bootloader;
pub(crate) mod checks;
pub mod conf;
pub(crate) mod deploy;
pub mod engine;
pub mod input;
pub mod layout;
pub(crate) mod plan;
pub(crate) mod review;
pub(crate) mod service;
pub(crate) mod uninstall;

use skyhook_core::runtime::run::Handler;
use skyhook_core::{Mode, Outcome, Package};

use apply::config;

/// The tuned package.
pub struct Tuned;

impl Package for Tuned {
    const KIND: &'static str = "tuned";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    const MODES: &'static [(Mode, Handler)] = &[
        (Mode::Apply, apply::install),
        (Mode::ApplyCheck, |s| checks::install_check(s).map(|()| Outcome::done())),
        (Mode::Config, config),
        (Mode::ConfigCheck, |s| {
            checks::config_check(s, checks::Verify::InterruptMayExcuse).map(|()| Outcome::done())
        }),
        (Mode::PostInterruptCheck, |s| {
            checks::config_check(s, checks::Verify::Required).map(|()| Outcome::done())
        }),
        (Mode::Upgrade, apply::install),
        (Mode::UpgradeCheck, |s| {
            checks::install_check(s).map(|()| Outcome::done())
        }),
        (Mode::Uninstall, uninstall::uninstall),
        (Mode::UninstallCheck, |s| {
            uninstall::uninstall_check(s).map(|()| Outcome::done())
        }),
    ];
    const NEEDS_PERSISTENT_ETC: bool = true;
}

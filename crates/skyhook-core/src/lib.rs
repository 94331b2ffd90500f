// SPDX-License-Identifier: Apache-2.0
//! skyhook-core: everything a Skyhook package stands on, so that a package crate only
//! states its own policy.
//!
//! One module per concern (see DESIGN.md): [`mode`] and [`context`] describe the step
//! the agent is running, [`configmap`] its input, [`host`] the machine being changed
//! (files under a root, external commands through a [`command::Runner`]), [`systemd`],
//! [`distro`], [`pkgmgr`] and [`bootloader`] shared host operations, [`interrupt`] what a
//! change needs from the operator, [`state`] what a package deployed, [`config`] the
//! config.json model and its validation, and [`run`] the entry point that ties them
//! together and turns the result into an exit code.

pub mod bootargs;
pub mod bootloader;
pub mod check;
pub mod command;
pub mod config;
pub mod configmap;
pub mod context;
pub mod distro;
pub mod error;
pub mod footprint;
pub mod host;
pub mod human;
pub mod interrupt;
pub mod kernel_args;
pub mod limits;
pub mod mode;
pub mod original;
pub mod pam;
pub mod pkgmgr;
pub mod process;
pub mod run;
pub mod semver;
pub mod state;
pub mod sysctl;
pub mod systemd;
pub mod unitfile;

pub use check::Checklist;
pub use configmap::ConfigMaps;
pub use context::Context;
pub use error::{Error, HostError, Result};
pub use host::Host;
pub use interrupt::Interrupt;
pub use mode::Mode;
pub use run::{Outcome, Package, Step};

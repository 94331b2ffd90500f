// SPDX-License-Identifier: Apache-2.0
//! skyhook-core: everything a Skyhook package stands on, so that a package crate only
//! states its own policy.
//!
//! One module per concern (see DESIGN.md): [`mode`] and [`context`] describe the step
//! the agent is running, [`configmap`] its input, [`host`] the machine being changed
//! (files under a root, never through a symbolic link: [`nofollow`]; external commands
//! through a [`command::Runner`]), [`systemd`],
//! [`distro`], [`pkgmgr`] and [`boot`] shared host operations, [`interrupt`] what a
//! change needs from the operator, [`records`] what a package deployed and changed
//! (state, footprint, saved originals, install receipt), [`config`] the
//! config.json model and its validation, and [`run`] the entry point that ties them
//! together and turns the result into an exit code.

pub mod boot;
pub mod check;
pub mod command;
pub mod config;
pub mod configmap;
pub mod context;
pub mod distro;
pub mod error;
pub mod host;
pub mod human;
pub mod interrupt;
pub mod limits;
pub mod mode;
pub mod node_metadata;
pub mod nofollow;
pub mod pam;
pub mod pkgmgr;
pub mod process;
pub mod records;
pub mod run;
pub mod semver;
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

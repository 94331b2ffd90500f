// SPDX-License-Identifier: Apache-2.0
//! skyhook-core: everything a Skyhook package stands on, so that a package crate only
//! states its own policy. One folder per concern (see DESIGN.md):
//!
//! - [`runtime`]: the step the agent is running: its [`mode`](runtime::mode),
//!   [`context`](runtime::context) (environment), [`configmap`](runtime::configmap)
//!   (input), [`node_metadata`](runtime::node_metadata), checks, interrupts, versions, and [`run`](runtime::run), the entry point that
//!   turns a package's result into a bounded report and an exit code.
//! - [`error`]: the error kinds and their exit codes, and the bounded excerpts every
//!   message quotes; a leaf every folder uses, so that no folder imports another in
//!   a cycle.
//! - [`host`]: the machine being changed: files under a root, never through a
//!   symbolic link ([`nofollow`](host::nofollow)); external commands through a
//!   [`Runner`](host::command::Runner); systemd; [`process`](host::process)
//!   supervision.
//! - [`records`]: what a package deployed and changed (state, footprint, saved
//!   originals, install receipt), kept outside the copy dir.
//! - [`os`]: the distribution family and its package manager.
//! - [`boot`]: kernel arguments, one model for every package.
//! - [`platform`]: the node's hardware: PCI devices, the NVIDIA accelerator it carries.
//! - [`profile`]: the reviewable effective settings of a package's profile catalog.
//! - [`review`]: what a package says of an SCR entry before a rollout (the developer
//!   tool's lint asks every package through it).
//! - [`formats`]: sysctl.d, limits, unit files, PAM stacks, sizes for people.
//! - [`config`]: the config.json model and its validation (feature `config`: the
//!   developer tool and the test kit; never in node binaries).

pub mod boot;
#[cfg(feature = "config")]
pub mod config;
pub mod error;
pub mod formats;
pub mod host;
pub mod os;
pub mod platform;
pub mod profile;
pub mod records;
pub mod review;
pub mod runtime;

pub use error::{Error, HostError, Result};
pub use host::Host;
pub use runtime::check::Checklist;
pub use runtime::configmap::ConfigMaps;
pub use runtime::context::Context;
pub use runtime::interrupt::Interrupt;
pub use runtime::mode::Mode;
pub use runtime::run::{Outcome, Package, Step};

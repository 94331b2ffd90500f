// SPDX-License-Identifier: Apache-2.0
//! The modes that change the node: apply ([`install`]: the kdump package installed
//! and its service enabled) and config ([`config`]: the crashkernel value and
//! kdump.conf made true on the node).

pub mod config;
pub mod install;

pub use config::config;
pub use install::apply;

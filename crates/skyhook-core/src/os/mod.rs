// SPDX-License-Identifier: Apache-2.0
//! The operating system: which distribution family the host is, its processor
//! architecture, and its package manager.

pub mod arch;
pub mod distro;
pub mod pkgmgr;

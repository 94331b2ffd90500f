// SPDX-License-Identifier: Apache-2.0
//! The operating system: which distribution family the host is, and its package manager.

pub mod distro;
pub mod pkgmgr;

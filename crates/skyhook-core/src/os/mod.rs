// SPDX-License-Identifier: Apache-2.0
//! The operating system: which distribution family the host is, its processor
//! architecture, its package manager, and what dpkg left unfinished (finished before an install).

pub mod arch;
pub mod distro;
pub mod dpkg;
pub mod pkgmgr;

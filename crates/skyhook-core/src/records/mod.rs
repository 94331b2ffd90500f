// SPDX-License-Identifier: Apache-2.0
//! What a package keeps about the node it changed, so that config can reconcile and
//! uninstall can undo exactly: [`state`] the per-package state store, [`footprint`]
//! the files written and directories created, [`original`] files as they were before,
//! [`receipt`] the packages an install found and added, [`tuning_ledger`] the kernel
//! parameters tuning's entries hold (read by other packages), and [`json`] the one JSON
//! encoding all of these records share.

pub mod footprint;
pub mod json;
pub mod original;
pub mod receipt;
pub mod state;
pub mod tuning_ledger;

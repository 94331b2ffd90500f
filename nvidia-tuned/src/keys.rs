// SPDX-License-Identifier: Apache-2.0
//! The configMap keys' names (and `auto`), a leaf module: the request reads them
//! ([`crate::request`]) and the catalog's errors name them ([`crate::catalog`]), so
//! neither of those imports the other's way.

/// The key naming the accelerator (or `auto`).
pub const ACCELERATOR_KEY: &str = "accelerator";
/// The key naming the workload intent.
pub const INTENT_KEY: &str = "intent";
/// The key naming the cloud service.
pub const SERVICE_KEY: &str = "service";
/// The key switching SPCX congestion control off (`oci` on `gb300`; default on).
pub const SPCX_CC_KEY: &str = "spcx_cc";
/// The accelerator value that picks the accelerator on each node.
pub const AUTO: &str = "auto";

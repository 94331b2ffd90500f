// SPDX-License-Identifier: Apache-2.0
//! Review before a release or a rollout: package validation, SCR lint and the NVIDIA profile catalogs.

pub mod lint;
pub mod packages;
pub mod profiles;
pub mod schema;
pub mod validate;

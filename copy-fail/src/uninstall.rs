// SPDX-License-Identifier: Apache-2.0
//! uninstall and uninstall-check need no input and read no environment: the engine
//! undoes what the records say (and takes the bash package's identical file), with
//! or without the configMap.

use skyhook_core::{Outcome, Result, Step};

use crate::plan;

/// uninstall: the file goes (the module is not loaded: the kernel loads it again on
/// demand); the configMap and environment are not read.
pub fn uninstall(step: &Step) -> Result<Outcome> {
    plan::on_engine_without_input(step)
}

/// uninstall-check: the file is gone (ours, or the bash package's identical one)
/// and nothing is recorded.
pub fn uninstall_check(step: &Step) -> Result<Outcome> {
    plan::on_engine_without_input(step)
}

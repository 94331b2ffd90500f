// SPDX-License-Identifier: Apache-2.0
//! uninstall and uninstall-check: what the records say was done is undone, with or
//! without the configMap, which is not read.

use skyhook_core::{Outcome, Result, Step};

use crate::KIND;
use crate::plan::no_input;

/// uninstall: what the records say was done is undone; the configMap is not read.
pub fn uninstall(step: &Step) -> Result<Outcome> {
    tuning::run_with_input(step, KIND, no_input())
}

/// uninstall-check.
pub fn uninstall_check(step: &Step) -> Result<Outcome> {
    tuning::run_with_input(step, KIND, no_input())
}

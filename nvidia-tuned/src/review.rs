// SPDX-License-Identifier: Apache-2.0
//! What nvidia-tuned says of an SCR entry before a rollout
//! ([`skyhook_core::review::Review`]), from its catalog: the `accelerator` carries
//! what the first installation needs (a reboot where a selected chain has kernel
//! arguments) and names the node's hardware; `intent` and `service` need a reboot when
//! another value changes the kernel arguments.

use skyhook_core::profile::{Catalog, RequestKey};
use skyhook_core::review::{Entry, Review};
use skyhook_core::{Interrupt, Package, Result};

use crate::NvidiaTuned;

impl Review for NvidiaTuned {
    fn name(&self) -> &'static str {
        Self::KIND
    }

    fn version(&self) -> &'static str {
        Self::VERSION
    }

    fn validate(&self, entry: &Entry) -> Result<()> {
        crate::validate(&entry.configmaps())
    }

    fn change_needs(&self, key: &str, entry: &Entry) -> Option<Interrupt> {
        let catalog = crate::catalog();
        let default_intent = crate::catalog::Catalog::embedded().manifest.default_intent;
        let request = entry.request(&default_intent);
        if request.selections(&catalog).is_empty() {
            return None;
        }
        let reboot = match key {
            // The required key carries what the first installation needs.
            "accelerator" => request.may_need_reboot(&catalog),
            "intent" => request.change_may_reboot(&catalog, RequestKey::Intent),
            "service" => request.change_may_reboot(&catalog, RequestKey::Service),
            _ => false,
        };
        Some(if reboot { Interrupt::Reboot } else { Interrupt::NoOp })
    }

    fn catalog(&self) -> Option<(Box<dyn Catalog>, String)> {
        let default_intent = crate::catalog::Catalog::embedded().manifest.default_intent;
        Some((Box::new(crate::catalog()), default_intent))
    }

    fn is_hardware_key(&self, key: &str) -> bool {
        key == "accelerator"
    }

    fn is_change_only_key(&self, key: &str) -> bool {
        matches!(key, "intent" | "service")
    }
}

// SPDX-License-Identifier: Apache-2.0
//! What nvidia-tuning-gke says of an SCR entry before a rollout
//! ([`skyhook_core::review::Review`]): its sysctls apply live, and the containerd
//! drop-in that `USE_CONTAINERD=true` adds takes effect when containerd restarts.

use skyhook_core::profile::{Catalog, SettingKind};
use skyhook_core::review::{Entry, Review};
use skyhook_core::{Interrupt, Package, Result};

use crate::NvidiaTuningGke;
use crate::input::USE_CONTAINERD;

impl Review for NvidiaTuningGke {
    fn name(&self) -> &'static str {
        Self::KIND
    }

    fn version(&self) -> &'static str {
        Self::VERSION
    }

    fn validate(&self, entry: &Entry) -> Result<()> {
        crate::validate(&entry.configmaps(), entry.env(USE_CONTAINERD))
    }

    fn change_needs(&self, key: &str, entry: &Entry) -> Option<Interrupt> {
        if !matches!(key, "accelerator" | "intent") {
            return Some(Interrupt::NoOp);
        }
        let catalog = crate::catalog();
        // Its intent is required: no default.
        let selections = entry.request("").selections(&catalog);
        if selections.is_empty() {
            return None;
        }
        let drop_in = selections.iter().any(|s| {
            catalog
                .effective(s)
                .is_ok_and(|e| e.settings.iter().any(|s| s.kind == SettingKind::DropIn))
        });
        Some(
            match drop_in && entry.env(USE_CONTAINERD).map(str::trim) == Some("true") {
                true => Interrupt::service(["containerd"]),
                false => Interrupt::NoOp,
            },
        )
    }

    fn catalog(&self) -> Option<(Box<dyn Catalog>, String)> {
        Some((Box::new(crate::catalog()), String::new()))
    }
}

// SPDX-License-Identifier: Apache-2.0
//! What nvidia-tuned says of an SCR entry before a rollout
//! ([`skyhook_core::review::Review`]), from its catalog: the `accelerator` carries
//! what the first installation needs (a reboot where a selected chain has kernel
//! arguments) and names the node's hardware; `intent` and `service` need a reboot when
//! another value changes the kernel arguments.

use skyhook_core::boot::hugepage_warnings::arm64_warnings;
use skyhook_core::profile::{Catalog, RequestKey, SettingKind};
use skyhook_core::review::{Entry, Review};
use skyhook_core::{Interrupt, Package, Result};

use crate::NvidiaTuned;

/// The accelerators whose nodes are arm64: Grace CPUs (gb200, gb300) and Vera (vr200).
pub const ARM64_ACCELERATORS: [&str; 3] = ["gb200", "gb300", "vr200"];

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

    /// For an accelerator whose nodes are arm64: each huge page size of its chains
    /// that an arm64 kernel of some page size cannot register.
    fn warnings(&self, entry: &Entry) -> Vec<(String, String)> {
        let catalog = crate::catalog();
        let default_intent = crate::catalog::Catalog::embedded().manifest.default_intent;
        let request = entry.request(&default_intent);
        if !ARM64_ACCELERATORS.contains(&request.accelerator) {
            return Vec::new();
        }
        let mut args: Vec<String> = Vec::new();
        for selection in request.selections(&catalog) {
            let Ok(effective) = catalog.effective(&selection) else {
                continue;
            };
            for s in effective.settings.iter().filter(|s| {
                matches!(s.kind, SettingKind::HugePages | SettingKind::KernelArgument)
                    && (s.key == "cmdline" || s.key.starts_with("cmdline_"))
            }) {
                args.extend(s.value.split_whitespace().map(str::to_string));
            }
        }
        arm64_warnings(request.accelerator, &args)
            .into_iter()
            .map(|m| ("accelerator".to_string(), m))
            .collect()
    }

    fn is_hardware_key(&self, key: &str) -> bool {
        key == "accelerator"
    }

    fn is_change_only_key(&self, key: &str) -> bool {
        matches!(key, "intent" | "service")
    }
}

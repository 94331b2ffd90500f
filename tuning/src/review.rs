// SPDX-License-Identifier: Apache-2.0
//! What tuning says of an SCR entry before a rollout ([`skyhook_core::review::Review`]):
//! `grub.conf` needs a reboot, `service_<unit>.conf` a restart of its unit,
//! `modprobe.conf` what the node's modules decide, the rest nothing.

use skyhook_core::review::{Entry, Review};
use skyhook_core::{Interrupt, Package, Result};

use crate::Tuning;

impl Review for Tuning {
    fn name(&self) -> &'static str {
        Self::KIND
    }

    fn version(&self) -> &'static str {
        Self::VERSION
    }

    fn validate(&self, entry: &Entry) -> Result<()> {
        crate::input::validate(&entry.configmaps())
    }

    fn change_needs(&self, key: &str, _entry: &Entry) -> Option<Interrupt> {
        Some(match key {
            crate::grub::KEY => Interrupt::Reboot,
            // A module kept out that something uses, or a loaded module given new
            // options, needs a reboot; which is the node's to tell.
            crate::modprobe::KEY => return None,
            k => match k.strip_prefix("service_").and_then(|u| u.strip_suffix(".conf")) {
                Some(unit) => Interrupt::service([unit]),
                None => Interrupt::NoOp,
            },
        })
    }
}

// SPDX-License-Identifier: Apache-2.0
//! What nvidia-setup says of an SCR entry before a rollout
//! ([`skyhook_core::review::Review`]): the kernel entry needs a reboot, and so does
//! the EKS full entry (the instance storage's array is built at boot); AKS's
//! settings a restart of containerd and kubelet, bcm's link nothing.

use skyhook_core::profile::Catalog;
use skyhook_core::review::{Entry, Review};
use skyhook_core::{Interrupt, Package, Result};

use crate::NvidiaSetup;
use crate::input::INSTALL_KERNEL;

impl Review for NvidiaSetup {
    fn name(&self) -> &'static str {
        Self::KIND
    }

    fn version(&self) -> &'static str {
        Self::VERSION
    }

    fn validate(&self, entry: &Entry) -> Result<()> {
        crate::validate(&entry.configmaps(), |n| entry.env(n).map(str::to_string))
    }

    fn change_needs(&self, key: &str, entry: &Entry) -> Option<Interrupt> {
        if !matches!(key, "service" | "accelerator") {
            return Some(Interrupt::NoOp);
        }
        Some(match entry.value("service") {
            Some("bcm") => Interrupt::NoOp,
            _ if entry.env(INSTALL_KERNEL).map(str::trim) == Some("true") => Interrupt::Reboot,
            Some("aks") => Interrupt::service(["containerd", "kubelet"]),
            // The instance storage's array is built by a boot unit (every EKS GPU
            // instance type has instance storage).
            Some("eks") => Interrupt::Reboot,
            _ => Interrupt::NoOp,
        })
    }

    fn catalog(&self) -> Option<(Box<dyn Catalog>, String)> {
        Some((Box::new(crate::catalog::SetupCatalog), String::new()))
    }

    /// The package has no config mode (as upstream): a change of `service` or
    /// `accelerator` takes effect through the next apply, never a config step, so
    /// no configInterrupt is asked of them; what they need counts for the first
    /// installation (the entry's `interrupt`).
    fn is_hardware_key(&self, key: &str) -> bool {
        matches!(key, "service" | "accelerator")
    }
}

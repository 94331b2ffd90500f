// SPDX-License-Identifier: Apache-2.0
//! What kdump says of an SCR entry before a rollout ([`skyhook_core::review::Review`]):
//! `crashkernel` needs a reboot; `kdump.conf` a restart of the kdump service, whose
//! name the node's family decides.

use skyhook_core::review::{Entry, Review};
use skyhook_core::{Interrupt, Package, Result};

use crate::Kdump;
use crate::input::{CRASHKERNEL_KEY, KDUMP_CONF_KEY};

impl Review for Kdump {
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
        match key {
            CRASHKERNEL_KEY => Some(Interrupt::Reboot),
            // The unit is kdump-tools on Debian-like nodes, kdump on RHEL-like ones.
            KDUMP_CONF_KEY => None,
            _ => Some(Interrupt::NoOp),
        }
    }

    fn cheaper_than_reboot(&self, key: &str) -> Option<&'static str> {
        (key == KDUMP_CONF_KEY).then_some(
            "a restart of the kdump service ({type: service, services: [kdump-tools]} on Debian-like nodes, \
             [kdump] on RHEL-like ones)",
        )
    }
}

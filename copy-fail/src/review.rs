// SPDX-License-Identifier: Apache-2.0
//! What copy-fail says of an SCR entry before a rollout
//! ([`skyhook_core::review::Review`]): its env switch is checked; whether the first
//! installation needs a reboot (algif_aead in use) only the node can tell.

use skyhook_core::review::{Entry, Review};
use skyhook_core::{Interrupt, Package, Result};

use crate::CopyFail;
use crate::input::ALLOW_LOADED_MODULE;

impl Review for CopyFail {
    fn name(&self) -> &'static str {
        Self::KIND
    }

    fn version(&self) -> &'static str {
        Self::VERSION
    }

    fn validate(&self, entry: &Entry) -> Result<()> {
        crate::validate(&entry.configmaps(), entry.env(ALLOW_LOADED_MODULE))
    }

    fn change_needs(&self, _key: &str, _entry: &Entry) -> Option<Interrupt> {
        Some(Interrupt::NoOp)
    }

    fn first_install_knowable(&self, _entry: &Entry) -> bool {
        false
    }
}

// SPDX-License-Identifier: Apache-2.0
//! What shellscript says of an SCR entry before a rollout
//! ([`skyhook_core::review::Review`]): its scripts are checked as a step reads them,
//! but what they need (and whether the first installation needs anything) only the
//! scripts know; its uninstall matters only with an `uninstall.sh`.

use skyhook_core::review::{Entry, Review};
use skyhook_core::{Interrupt, Package, Result};

use crate::Shellscript;

impl Review for Shellscript {
    fn name(&self) -> &'static str {
        Self::KIND
    }

    fn version(&self) -> &'static str {
        Self::VERSION
    }

    fn validate(&self, entry: &Entry) -> Result<()> {
        crate::input::script::validate(&entry.configmaps())
    }

    fn change_needs(&self, _key: &str, _entry: &Entry) -> Option<Interrupt> {
        None
    }

    fn first_install_knowable(&self, _entry: &Entry) -> bool {
        false
    }

    fn uninstall_matters(&self, entry: &Entry) -> bool {
        entry.config_map.contains_key("uninstall.sh")
    }
}

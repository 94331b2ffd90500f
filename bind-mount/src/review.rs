// SPDX-License-Identifier: Apache-2.0
//! What bind-mount says of an SCR entry before a rollout
//! ([`skyhook_core::review::Review`]): `source` and `target` are validated as a step
//! reads them, and a change of either needs the target's mount unit restarted (the
//! interrupt activates the unit); the `expected-*` assertions need nothing.

use skyhook_core::review::{Entry, Review};
use skyhook_core::{Interrupt, Package, Result};

use crate::BindMount;
use crate::escape::mount_unit;
use crate::input::{Input, path_problem};

impl Review for BindMount {
    fn name(&self) -> &'static str {
        Self::KIND
    }

    fn version(&self) -> &'static str {
        Self::VERSION
    }

    fn validate(&self, entry: &Entry) -> Result<()> {
        Input::parse(&entry.configmaps()).map(|_| ())
    }

    fn change_needs(&self, key: &str, entry: &Entry) -> Option<Interrupt> {
        if !matches!(key, "source" | "target") {
            return Some(Interrupt::NoOp);
        }
        // A target the package refuses names no unit (validation says why).
        let target = entry.value("target").filter(|t| path_problem("target", t).is_none())?;
        Some(Interrupt::service([mount_unit(target).ok()?]))
    }
}

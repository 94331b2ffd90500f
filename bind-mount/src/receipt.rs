// SPDX-License-Identifier: Apache-2.0
//! The ownership receipt: which mount unit this instance prepared, for which source
//! and target, kept in `/var/lib/skyhook-packages/bind-mount/<scope>_<key>/state.json`
//! (root's alone). It lets an uninstall without its configMap find the unit, a
//! config change find the previous target, and an interrupted uninstall finish.

use serde::{Deserialize, Serialize};
use skyhook_core::records::state::{Record, StateStore};
use skyhook_core::{Error, Host, Result};

use crate::escape::mount_unit;
use crate::identity::Instance;
use crate::input::path_problem;

/// What an instance prepared.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Receipt {
    /// The owner, `<scope>/<key>`.
    pub instance: String,
    /// The source mount point.
    pub source: String,
    /// The target mount point.
    pub target: String,
    /// The unit written for the target.
    pub unit: String,
    /// Set when an uninstall started: the receipt then only serves to finish it.
    #[serde(default)]
    pub uninstalling: bool,
    /// The directories this instance created for its targets (the target and its
    /// missing ancestors, outermost first), recorded before they are made; uninstall
    /// removes each that is still an empty directory and no mount point.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub created: Vec<String>,
}

impl Record for Receipt {
    fn is_empty(&self) -> bool {
        self.unit.is_empty()
    }
}

/// The receipt store of `instance`.
pub fn store<'h>(host: &'h Host, instance: &Instance) -> StateStore<'h> {
    StateStore::new(host, crate::KIND, &instance.store_name())
}

/// The recorded receipt, `None` when there is none. A receipt of another instance,
/// or whose paths or unit are not what this package writes, is refused (exit 1).
pub fn load(host: &Host, instance: &Instance) -> Result<Option<Receipt>> {
    let s = store(host, instance);
    let r: Receipt = s.load()?;
    if r.is_empty() {
        return Ok(None);
    }
    let file = s.file();
    let bad = |why: String| {
        Error::action(format!(
            "the receipt {} {why}; remove it only if no unit of this instance remains",
            file.display()
        ))
    };
    if r.instance != instance.id() {
        return Err(bad(format!(
            "belongs to instance {:?}, not {:?}",
            r.instance,
            instance.id()
        )));
    }
    if let Some(p) = path_problem("source", &r.source).or_else(|| path_problem("target", &r.target)) {
        return Err(bad(format!("is damaged: {p}")));
    }
    if mount_unit(&r.target).as_deref() != Ok(r.unit.as_str()) {
        return Err(bad(format!(
            "names unit {:?}, which is not the unit of its target",
            r.unit
        )));
    }
    Ok(Some(r))
}

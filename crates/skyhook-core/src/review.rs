// SPDX-License-Identifier: Apache-2.0
//! What a package says of an SCR entry before a rollout. The developer tool's `lint`
//! and `profiles` ask every package through [`Review`]: its version, its own
//! validation of the configMap and env, what a change of each key needs, its profile
//! catalog. A package's keys and interrupts are written down once, in the package.

use std::collections::BTreeMap;

use crate::profile::{Catalog, Request};
use crate::runtime::interrupt::Interrupt;
use crate::{ConfigMaps, Result};

/// One package entry of an SCR, as a review reads it.
#[derive(Debug, Clone, Copy)]
pub struct Entry<'a> {
    /// The configMap, by key.
    pub config_map: &'a BTreeMap<String, String>,
    /// The entry's `env`, name/value pairs in the SCR's order.
    pub env: &'a [(String, String)],
}

impl Entry<'_> {
    /// The configMap as a step reads it.
    pub fn configmaps(&self) -> ConfigMaps {
        ConfigMaps::from_entries(self.config_map.iter().map(|(k, v)| (k.clone(), v.clone().into_bytes())))
    }

    /// The value of env variable `name`, if the entry sets it.
    pub fn env(&self, name: &str) -> Option<&str> {
        self.env.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// The value of configMap key `key`, trimmed; `None` when absent or blank.
    pub fn value(&self, key: &str) -> Option<&str> {
        self.config_map.get(key).map(|v| v.trim()).filter(|v| !v.is_empty())
    }

    /// What the entry asks of a catalog package (`accelerator`, `intent` or
    /// `default_intent`, `service`).
    pub fn request<'a>(&'a self, default_intent: &'a str) -> Request<'a> {
        Request {
            accelerator: self.value("accelerator").unwrap_or(""),
            intent: self.value("intent").unwrap_or(default_intent),
            service: self.value("service"),
        }
    }
}

/// A package as the developer tool reviews it; each package crate implements it once.
pub trait Review: Sync {
    /// The package's name, the last part of its image name (`tuning`).
    fn name(&self) -> &'static str;

    /// The package's version (Cargo.toml's, which config.json's equals).
    fn version(&self) -> &'static str;

    /// The package's own validation of the entry's configMap and env, as its steps
    /// validate them on the node (bad input: [`crate::Error::Input`]).
    fn validate(&self, entry: &Entry) -> Result<()>;

    /// The cheapest interrupt a change of configMap key `key` needs; `None` when only
    /// the node can tell (a script does anything; a module kept out may be in use).
    fn change_needs(&self, key: &str, entry: &Entry) -> Option<Interrupt>;

    /// For a key whose need only the node can tell: the interrupt that is enough
    /// where a reboot was declared, if one always is.
    fn cheaper_than_reboot(&self, _key: &str) -> Option<&'static str> {
        None
    }

    /// The package's profile catalog with its default intent, empty where the intent
    /// is required (catalog packages only).
    fn catalog(&self) -> Option<(Box<dyn Catalog>, String)> {
        None
    }

    /// Whether what the first installation needs can be told from the entry alone.
    fn first_install_knowable(&self, _entry: &Entry) -> bool {
        true
    }

    /// Whether `key` names the node's hardware: what it needs counts for the first
    /// installation, but a node's hardware never changes, so no configInterrupt is
    /// asked of it.
    fn is_hardware_key(&self, _key: &str) -> bool {
        false
    }

    /// Whether what a change of `key` needs says nothing of the first installation.
    fn is_change_only_key(&self, _key: &str) -> bool {
        false
    }

    /// Whether the package's uninstall changes the node (so the SCR must enable it).
    fn uninstall_matters(&self, _entry: &Entry) -> bool {
        true
    }

    /// Warnings of the entry that only some nodes make true (the node decides).
    fn warnings(&self, _entry: &Entry) -> Vec<String> {
        Vec::new()
    }
}

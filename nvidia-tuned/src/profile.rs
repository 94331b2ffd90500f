// SPDX-License-Identifier: Apache-2.0
//! Stand-in for `skyhook_core::profile` (the agreed interface of issue 16, built on
//! branch nv-core): the same types, until that module is merged; then this file goes
//! and `crate::profile` points at the core's.

use thiserror::Error;

/// An OS version (`ubuntu`, `22.04`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OsVersion {
    /// os-release `ID`.
    pub id: String,
    /// os-release `VERSION_ID`.
    pub version: String,
}

/// One catalog combination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    /// Accelerator name.
    pub accelerator: String,
    /// Intent name.
    pub intent: String,
    /// Service name.
    pub service: Option<String>,
    /// OS version (`None`: the common profiles).
    pub os: Option<OsVersion>,
}

/// What a setting is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SettingKind {
    /// A sysctl.
    Sysctl,
    /// A kernel argument.
    KernelArgument,
    /// A kernel module (and its options).
    Module,
    /// The CPU frequency governor.
    CpuGovernor,
    /// A huge page reservation.
    HugePages,
    /// A drop-in file.
    DropIn,
    /// A service.
    Service,
    /// Anything else (the tuned plugin or section named).
    Other(String),
}

/// One effective setting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    /// What it is.
    pub kind: SettingKind,
    /// The key (sysctl name, tuned option, file path).
    pub key: String,
    /// The value.
    pub value: String,
    /// The profile (and catalog file) it comes from.
    pub source: String,
    /// Whether it takes effect only after a reboot.
    pub needs_reboot: bool,
    /// Whether a node without it is fine (skipped with a warning).
    pub optional: bool,
}

/// The effective settings of one combination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Effective {
    /// The profile activated.
    pub profile: String,
    /// The settings, in load order.
    pub settings: Vec<Setting>,
}

impl Effective {
    /// Whether any setting needs a reboot.
    pub fn needs_reboot(&self) -> bool {
        self.settings.iter().any(|s| s.needs_reboot)
    }
}

/// A combination the catalog does not have.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{0}")]
pub struct CatalogError(pub String);

/// A package's catalog of combinations.
pub trait Catalog {
    /// The package.
    fn package(&self) -> &'static str;
    /// Every combination.
    fn combinations(&self) -> Vec<Selection>;
    /// The effective settings of one.
    fn effective(&self, selection: &Selection) -> Result<Effective, CatalogError>;
}

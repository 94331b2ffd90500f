// SPDX-License-Identifier: Apache-2.0
//! The catalog as [`skyhook_core::profile::Catalog`]: every combination and its
//! effective settings (each sysctl with the file it comes from and whether a kernel
//! may lack it, and the containerd drop-in that `USE_CONTAINERD=true` adds), for
//! `skyhook-pkg profiles` and lint. Nothing here needs a reboot: the settings apply
//! live. The OS version does not change them (the catalog has no OS overrides).

use skyhook_core::formats::sysctl;
use skyhook_core::profile::{Catalog, CatalogError, Effective, Selection, Setting, SettingKind};

use crate::KIND;
use crate::catalog::{GkeCatalog, Profile};
use crate::input::USE_CONTAINERD;

/// The embedded catalog, as the core's [`Catalog`].
#[derive(Debug, Clone, Copy, Default)]
pub struct GkeProfiles;

impl GkeProfiles {
    fn catalog() -> Result<&'static GkeCatalog, CatalogError> {
        GkeCatalog::embedded().map_err(|e| CatalogError::Data {
            source_file: "catalog/".into(),
            reason: e.to_string(),
        })
    }
}

impl Catalog for GkeProfiles {
    fn package(&self) -> &'static str {
        KIND
    }

    fn combinations(&self) -> Vec<Selection> {
        let Ok(catalog) = Self::catalog() else {
            return Vec::new();
        };
        catalog
            .profiles()
            .iter()
            .map(|p| Selection {
                accelerator: p.accelerator.to_string(),
                intent: p.intent.to_string(),
                service: None,
                os: None,
            })
            .collect()
    }

    fn effective(&self, selection: &Selection) -> Result<Effective, CatalogError> {
        let catalog = Self::catalog()?;
        let profile = catalog.profile(&selection.accelerator, &selection.intent)?;
        if selection.service.is_some() {
            let same_accelerator: Vec<Selection> = self
                .combinations()
                .into_iter()
                .filter(|s| s.accelerator == selection.accelerator)
                .collect();
            return Err(CatalogError::unknown_combination(selection, &same_accelerator));
        }
        Ok(Effective {
            profile: KIND.to_string(),
            settings: settings(&profile),
        })
    }
}

/// The settings of `profile`, in file order, then the containerd drop-in.
pub fn settings(profile: &Profile<'_>) -> Vec<Setting> {
    let (assignments, _) = sysctl::parse(profile.sysctl.text);
    let mut out: Vec<Setting> = assignments
        .into_iter()
        .map(|a| Setting {
            kind: SettingKind::Sysctl,
            optional: profile.optional_reason(&a.key.dotted()).is_some(),
            key: a.key.dotted(),
            value: a.value,
            source: profile.sysctl.path.to_string(),
            needs_reboot: false,
        })
        .collect();
    if let Some(dropin) = profile.containerd {
        out.push(Setting {
            kind: SettingKind::DropIn,
            key: format!("containerd.service.d (with {USE_CONTAINERD}=true)"),
            value: without_comments(dropin.text),
            source: dropin.path.to_string(),
            needs_reboot: false,
            optional: false,
        });
    }
    out
}

/// A drop-in's lines without its comments: what systemd reads.
fn without_comments(text: &str) -> String {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with(';'))
        .map(|l| format!("{l}\n"))
        .collect()
}

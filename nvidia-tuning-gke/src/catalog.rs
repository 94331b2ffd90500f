// SPDX-License-Identifier: Apache-2.0
//! The catalog: `catalog/manifest.json` and the profile files it names, embedded
//! at build time (see `build.rs`). For each accelerator and workload intent it
//! gives the sysctl file and, for some, a containerd drop-in; the manifest also
//! says which sysctl keys are optional because some kernels lack them.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Deserialize;
use skyhook_core::profile::CatalogError;

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/catalog_files.rs"));
}

/// The directory of the profile files, relative to `catalog/`.
pub const PROFILES_DIR: &str = "profiles";
/// The manifest, relative to `catalog/`.
pub const MANIFEST: &str = "manifest.json";

/// The manifest as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Manifest {
    #[allow(dead_code)]
    about: String,
    /// Optional sysctl keys (dotted), each with why a kernel may lack it.
    optional_sysctls: BTreeMap<String, String>,
    /// Accelerator → intent → files.
    accelerators: BTreeMap<String, BTreeMap<String, ProfileFiles>>,
}

/// The files of one combination, relative to `catalog/profiles/`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileFiles {
    sysctl: String,
    #[serde(default)]
    containerd: Option<String>,
}

/// Why the embedded catalog cannot be used (a defect of the build, which the
/// catalog tests catch before release).
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    /// The manifest is not valid JSON of the expected shape.
    #[error("catalog/{MANIFEST} is not a valid catalog manifest: {0}")]
    Manifest(#[from] serde_json::Error),
    /// The manifest names a file that is not in the catalog.
    #[error("catalog/{MANIFEST} names {0}, which is not in catalog/{PROFILES_DIR}/")]
    MissingFile(String),
    /// The manifest is missing.
    #[error("catalog/{MANIFEST} is not in the build")]
    NoManifest,
}

/// A file of the catalog: where it is and what it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CatalogFile {
    /// Its path relative to `catalog/` (`profiles/h100/inference/sysctl.conf`).
    pub path: &'static str,
    /// Its content.
    pub text: &'static str,
}

/// One combination of the catalog.
#[derive(Debug, Clone, Copy)]
pub struct Profile<'c> {
    /// The accelerator (`h100`).
    pub accelerator: &'c str,
    /// The workload intent (`inference`).
    pub intent: &'c str,
    /// The sysctl settings.
    pub sysctl: CatalogFile,
    /// The containerd drop-in, applied only with `USE_CONTAINERD=true`.
    pub containerd: Option<CatalogFile>,
    catalog: &'c GkeCatalog,
}

impl Profile<'_> {
    /// Why a kernel may lack sysctl key `dotted`, when the catalog marks it optional.
    pub fn optional_reason(&self, dotted: &str) -> Option<&str> {
        self.catalog.optional.get(dotted).map(String::as_str)
    }

    /// The combination's name, `accelerator/intent`.
    pub fn name(&self) -> String {
        format!("{}/{}", self.accelerator, self.intent)
    }
}

/// The parsed, checked catalog.
#[derive(Debug)]
pub struct GkeCatalog {
    optional: BTreeMap<String, String>,
    combinations: BTreeMap<String, BTreeMap<String, (CatalogFile, Option<CatalogFile>)>>,
}

impl GkeCatalog {
    /// The catalog embedded in this binary, parsed once.
    pub fn embedded() -> Result<&'static GkeCatalog, &'static DataError> {
        static CATALOG: OnceLock<Result<GkeCatalog, DataError>> = OnceLock::new();
        CATALOG.get_or_init(|| GkeCatalog::parse(embedded::FILES)).as_ref()
    }

    /// Parses `files` (path relative to `catalog/`, content): the manifest and every
    /// file it names must be there.
    pub fn parse(files: &[(&'static str, &'static str)]) -> Result<GkeCatalog, DataError> {
        let find = |path: &str| files.iter().find(|(p, _)| *p == path).copied();
        let (_, manifest) = find(MANIFEST).ok_or(DataError::NoManifest)?;
        let manifest: Manifest = serde_json::from_str(manifest)?;
        let file = |relative: &str| {
            let path = format!("{PROFILES_DIR}/{relative}");
            find(&path)
                .map(|(path, text)| CatalogFile { path, text })
                .ok_or(DataError::MissingFile(path))
        };
        let mut combinations = BTreeMap::new();
        for (accelerator, intents) in &manifest.accelerators {
            let mut by_intent = BTreeMap::new();
            for (intent, f) in intents {
                let containerd = f.containerd.as_deref().map(file).transpose()?;
                by_intent.insert(intent.clone(), (file(&f.sysctl)?, containerd));
            }
            combinations.insert(accelerator.clone(), by_intent);
        }
        Ok(GkeCatalog {
            optional: manifest.optional_sysctls,
            combinations,
        })
    }

    /// Every accelerator, sorted.
    pub fn accelerators(&self) -> Vec<&str> {
        self.combinations.keys().map(String::as_str).collect()
    }

    /// The intents of `accelerator`, sorted (`None` for an unknown accelerator).
    pub fn intents(&self, accelerator: &str) -> Option<Vec<&str>> {
        self.combinations
            .get(accelerator)
            .map(|i| i.keys().map(String::as_str).collect())
    }

    /// Every combination, sorted by accelerator then intent.
    pub fn profiles(&self) -> Vec<Profile<'_>> {
        self.combinations
            .iter()
            .flat_map(|(a, intents)| intents.keys().map(move |i| (a, i)))
            .filter_map(|(a, i)| self.profile(a, i).ok())
            .collect()
    }

    /// The combination `accelerator`/`intent`; an unknown one lists what the
    /// catalog has (bad input).
    pub fn profile(&self, accelerator: &str, intent: &str) -> Result<Profile<'_>, CatalogError> {
        let (accelerator, intents) = self
            .combinations
            .get_key_value(accelerator)
            .ok_or_else(|| CatalogError::unknown_accelerator(accelerator, &self.accelerators()))?;
        let supported: Vec<&str> = intents.keys().map(String::as_str).collect();
        let (intent, (sysctl, containerd)) = intents
            .get_key_value(intent)
            .ok_or_else(|| CatalogError::unknown_intent(intent, &supported))?;
        Ok(Profile {
            accelerator,
            intent,
            sysctl: *sysctl,
            containerd: *containerd,
            catalog: self,
        })
    }

    /// The optional sysctl keys (dotted), each with why a kernel may lack it.
    pub fn optional_sysctls(&self) -> &BTreeMap<String, String> {
        &self.optional
    }
}

/// Every file embedded from `catalog/` (for the catalog tests).
pub fn embedded_files() -> &'static [(&'static str, &'static str)] {
    embedded::FILES
}

#[cfg(test)]
mod tests {
    use super::*;

    const MANIFEST_TEXT: &str = r#"{"about": "", "optional_sysctls": {},
        "accelerators": {"x": {"a": {"sysctl": "x/a/sysctl.conf"}}}}"#;

    #[test]
    fn a_named_file_missing_from_the_build_is_a_data_error() {
        let e = GkeCatalog::parse(&[(MANIFEST, MANIFEST_TEXT)]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "catalog/manifest.json names profiles/x/a/sysctl.conf, which is not in catalog/profiles/"
        );
    }

    #[test]
    fn unknown_names_list_what_is_supported() {
        let c = GkeCatalog::parse(&[(MANIFEST, MANIFEST_TEXT), ("profiles/x/a/sysctl.conf", "")]).unwrap();
        assert_eq!(
            c.profile("y", "a").unwrap_err(),
            CatalogError::UnknownAccelerator {
                given: "\"y\"".into(),
                supported: vec!["x".into()]
            }
        );
        assert_eq!(
            c.profile("x", "b").unwrap_err(),
            CatalogError::UnknownIntent {
                given: "\"b\"".into(),
                supported: vec!["a".into()]
            }
        );
        assert_eq!(c.profile("x", "a").unwrap().name(), "x/a");
    }
}

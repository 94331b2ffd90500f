// SPDX-License-Identifier: Apache-2.0
//! The profile catalog, as data embedded at build time (`catalog/`, see build.rs):
//! the manifest (accelerators, intents, services, OS versions, files, optional keys)
//! and the profile files. [`Catalog::render`] turns a selection into the tuned
//! profiles to deploy (the include chain service → intent → performance →
//! acs-disable → base), the profile to activate and the files that go with them.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;
use thiserror::Error;

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/catalog_files.rs"));
}

/// Why a selection is not in the catalog; each lists what is supported.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CatalogError {
    /// An accelerator the catalog has no profiles for.
    #[error("accelerator {0:?} is not in the catalog; supported: {1}")]
    Accelerator(String, String),
    /// An intent the catalog has no profiles for.
    #[error("intent {0:?} is not in the catalog; supported: {1}")]
    Intent(String, String),
    /// A service the catalog has no wrapper for.
    #[error("service {0:?} is not in the catalog; supported: {1} (or no service key)")]
    Service(String, String),
    /// A profile the include chain names that the catalog lacks (a catalog defect).
    #[error("the catalog has no profile {profile:?} (included by {by:?})")]
    Missing {
        /// The profile named.
        profile: String,
        /// The profile including it.
        by: String,
    },
}

/// One OS version the catalog knows (its overrides, or the common profiles).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct OsEntry {
    /// os-release `ID`.
    pub id: String,
    /// os-release `VERSION_ID` (major only for the manifest's `major_version_ids`).
    pub version: String,
}

/// A file deployed with a profile or a service (a systemd or GRUB drop-in).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct FileEntry {
    /// The host path.
    pub path: PathBuf,
    /// The file under `catalog/files/`.
    pub source: String,
    /// When the file takes effect, for the log and `profiles show`.
    pub takes_effect: String,
    /// Whether it takes effect only after a reboot.
    pub needs_reboot: bool,
    /// The services to restart for it to take effect (the `service` interrupt).
    #[serde(default)]
    pub restart: Vec<String>,
}

/// A cloud service's wrapper profile and its files.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct ServiceEntry {
    /// Files deployed with the service profile.
    #[serde(default)]
    pub files: Vec<FileEntry>,
    /// Host changes beyond tuned profiles, by accelerator (`oci` × `gb300`).
    #[serde(default)]
    pub host_steps: BTreeMap<String, HostSteps>,
}

/// The host steps a service ships for one accelerator (see [`crate::host_steps`]);
/// each names its files under `catalog/files/`. A pair without an entry gets none.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostSteps {
    /// The NCCL topology file installed at `TOPO_PATH`.
    #[serde(default)]
    pub nccl_topo: Option<String>,
    /// The RDMA VF boot gate: its unit and the helper the unit runs.
    #[serde(default)]
    pub rdma_vfs_ready: Option<GateSources>,
    /// Whether the PCIe ACS correction (`rdma_topo`) applies.
    #[serde(default)]
    pub pcie_acs: bool,
    /// Whether the IOMMU passthrough workaround applies.
    #[serde(default)]
    pub iommu_passthrough: bool,
}

/// The files of the RDMA VF boot gate, under `catalog/files/`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GateSources {
    /// The systemd unit.
    pub unit: String,
    /// The script the unit runs.
    pub helper: String,
}

/// A catalog file, by its path under `catalog/files/`, with its bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asset {
    /// Its path under `catalog/files/`.
    pub source: String,
    /// Its content.
    pub bytes: Vec<u8>,
}

/// The host steps of a rendered selection, with their files (all empty: none).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostAssets {
    /// The NCCL topology file.
    pub nccl_topo: Option<Asset>,
    /// The RDMA VF boot gate's unit and helper.
    pub rdma_vfs_ready: Option<(Asset, Asset)>,
    /// Whether the PCIe ACS correction applies.
    pub pcie_acs: bool,
    /// Whether the IOMMU passthrough workaround applies.
    pub iommu_passthrough: bool,
}

impl HostAssets {
    /// Whether the selection ships no host step.
    pub fn is_empty(&self) -> bool {
        self.nccl_topo.is_none() && self.rdma_vfs_ready.is_none() && !self.pcie_acs && !self.iommu_passthrough
    }
}

/// `catalog/manifest.json`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Manifest {
    /// The package's kind.
    pub package: String,
    /// Accelerator names (`h100`).
    pub accelerators: Vec<String>,
    /// Intent names (`performance`).
    pub intents: Vec<String>,
    /// The intent when the configMap has none.
    pub default_intent: String,
    /// OS versions the package was tested on.
    pub os_versions: Vec<OsEntry>,
    /// os-release IDs whose overrides are keyed by the major version only.
    pub major_version_ids: Vec<String>,
    /// Services by name.
    pub services: BTreeMap<String, ServiceEntry>,
    /// Files deployed with a profile, by profile name.
    pub profile_files: BTreeMap<String, Vec<FileEntry>>,
    /// Sysctls some kernels lack: skipped with a warning there.
    pub optional_sysctls: Vec<String>,
    /// Options set in `/etc/tuned/tuned-main.conf`.
    pub tuned_main: BTreeMap<String, String>,
    /// What the bash package left on nodes.
    pub legacy: Legacy,
}

/// Where the bash nvidia-tuned put its profiles (see [`crate::legacy`]).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Legacy {
    /// Its base profiles' directory (`/usr/lib/tuned`).
    pub system_dir: PathBuf,
    /// Its workload and service profiles' directory (`/etc/tuned`).
    pub user_dir: PathBuf,
    /// The files it put in a profile directory.
    pub files: Vec<String>,
}

/// What to render: accelerator, intent, optional service, the node's OS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    /// Accelerator name.
    pub accelerator: String,
    /// Intent name.
    pub intent: String,
    /// Service name, if any.
    pub service: Option<String>,
    /// The node's OS (`None`: the common profiles).
    pub os: Option<OsEntry>,
}

/// One tuned profile to deploy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    /// The profile name.
    pub name: String,
    /// The catalog file it comes from (`os/common/nvidia-h100-performance.conf`).
    pub source: String,
    /// The `tuned.conf` text.
    pub text: String,
}

/// A rendered selection: what the tuned engine gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// The profile to activate.
    pub active: String,
    /// The include chain, from the active profile down to the base.
    pub profiles: Vec<Profile>,
    /// The files that go with them (each path once).
    pub files: Vec<(FileEntry, Vec<u8>)>,
    /// The host steps of the service for this accelerator.
    pub host: HostAssets,
}

/// The embedded catalog.
#[derive(Debug, Clone)]
pub struct Catalog {
    /// The manifest.
    pub manifest: Manifest,
    files: BTreeMap<&'static str, &'static [u8]>,
}

fn supported(names: &[String]) -> String {
    names.join(", ")
}

impl Catalog {
    /// The catalog embedded in this binary.
    pub fn embedded() -> Self {
        let files: BTreeMap<&'static str, &'static [u8]> = embedded::FILES.iter().copied().collect();
        let manifest = serde_json::from_slice(files["manifest.json"])
            .unwrap_or_else(|e| panic!("the embedded catalog/manifest.json is invalid: {e}"));
        Catalog { manifest, files }
    }

    /// A catalog file's text, if present.
    pub fn file(&self, rel: &str) -> Option<&'static str> {
        self.files
            .get(rel)
            .map(|b| std::str::from_utf8(b).expect("catalog files are UTF-8"))
    }

    /// Every catalog file path (relative to `catalog/`).
    pub fn paths(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.files.keys().copied()
    }

    /// The OS override directory `os` uses, if the catalog has one.
    pub fn os_dir(&self, os: &OsEntry) -> Option<String> {
        let dir = format!("profiles/os/{}/{}/", os.id, self.os_version(os));
        self.paths().any(|p| p.starts_with(&dir)).then_some(dir)
    }

    /// The version overrides are keyed by: the major version for the manifest's
    /// `major_version_ids` (RHEL 9.4 → 9), `VERSION_ID` otherwise.
    pub fn os_version(&self, os: &OsEntry) -> String {
        if self.manifest.major_version_ids.contains(&os.id) {
            os.version.split('.').next().unwrap_or_default().to_string()
        } else {
            os.version.clone()
        }
    }

    /// Checks the names of `choice` against the manifest.
    pub fn check(&self, choice: &Choice) -> Result<(), CatalogError> {
        let m = &self.manifest;
        if !m.accelerators.contains(&choice.accelerator) {
            return Err(CatalogError::Accelerator(
                choice.accelerator.clone(),
                supported(&m.accelerators),
            ));
        }
        if !m.intents.contains(&choice.intent) {
            return Err(CatalogError::Intent(choice.intent.clone(), supported(&m.intents)));
        }
        if let Some(s) = &choice.service
            && !m.services.contains_key(s)
        {
            let names: Vec<String> = m.services.keys().cloned().collect();
            return Err(CatalogError::Service(s.clone(), supported(&names)));
        }
        Ok(())
    }

    /// The profile names of `choice`: (workload profile, profile to activate). The
    /// service wrapper is `<service>-<accelerator>-<intent>`, as the originals name it.
    pub fn names(choice: &Choice) -> (String, String) {
        let workload = format!("nvidia-{}-{}", choice.accelerator, choice.intent);
        let active = match &choice.service {
            Some(s) => format!("{s}-{}-{}", choice.accelerator, choice.intent),
            None => workload.clone(),
        };
        (workload, active)
    }

    /// Where profile `name` comes from for `choice`: the service's own version, the
    /// OS override, the common workload profile, the common base profile.
    fn find(&self, name: &str, choice: &Choice) -> Option<(String, &'static str)> {
        let mut candidates = Vec::new();
        if let Some(s) = &choice.service {
            candidates.push(format!("profiles/service/{s}/{name}.conf"));
        }
        if let Some(dir) = choice.os.as_ref().and_then(|os| self.os_dir(os)) {
            candidates.push(format!("{dir}{name}.conf"));
        }
        candidates.push(format!("profiles/os/common/{name}.conf"));
        candidates.push(format!("profiles/common/{name}.conf"));
        candidates.into_iter().find_map(|c| {
            self.file(&c)
                .map(|text| (c.trim_start_matches("profiles/").to_string(), text))
        })
    }

    /// Renders `choice` into the profiles, the profile to activate and the files.
    pub fn render(&self, choice: &Choice) -> Result<Rendered, CatalogError> {
        self.check(choice)?;
        let (workload, active) = Self::names(choice);
        let mut profiles = Vec::new();
        let mut next = Some((workload.clone(), active.clone()));
        if let Some(s) = &choice.service {
            let source = format!("service/{s}/service.conf");
            let template = self
                .file(&format!("profiles/{source}"))
                .ok_or_else(|| CatalogError::Missing {
                    profile: active.clone(),
                    by: format!("service {s}"),
                })?;
            profiles.push(Profile {
                name: active.clone(),
                source,
                text: with_include(template, &workload),
            });
        } else {
            next = Some((active.clone(), "the configMap".to_string()));
        }
        while let Some((name, by)) = next.take() {
            let (source, text) = self.find(&name, choice).ok_or(CatalogError::Missing {
                profile: name.clone(),
                by,
            })?;
            next = include_of(text).map(|inc| (inc, name.clone()));
            profiles.push(Profile {
                name,
                source,
                text: text.to_string(),
            });
        }
        let mut entries: Vec<&FileEntry> = Vec::new();
        if let Some(s) = &choice.service {
            entries.extend(&self.manifest.services[s].files);
        }
        for p in &profiles {
            entries.extend(self.manifest.profile_files.get(&p.name).into_iter().flatten());
        }
        let mut seen = std::collections::BTreeSet::new();
        entries.retain(|f| seen.insert(f.path.clone()));
        let files = entries
            .into_iter()
            .map(|f| Ok((f.clone(), self.asset(&f.source, &f.path.display().to_string())?.bytes)))
            .collect::<Result<_, CatalogError>>()?;
        let host = self.host_assets(choice)?;
        Ok(Rendered {
            active,
            profiles,
            files,
            host,
        })
    }

    /// The file `source` under `catalog/files/`; `by` names who wants it.
    fn asset(&self, source: &str, by: &str) -> Result<Asset, CatalogError> {
        let bytes = self
            .files
            .get(format!("files/{source}").as_str())
            .copied()
            .ok_or_else(|| CatalogError::Missing {
                profile: source.to_string(),
                by: by.to_string(),
            })?;
        Ok(Asset {
            source: source.to_string(),
            bytes: bytes.to_vec(),
        })
    }

    /// The host steps the choice's service ships for its accelerator, with their files.
    fn host_assets(&self, choice: &Choice) -> Result<HostAssets, CatalogError> {
        let Some(steps) = choice
            .service
            .as_ref()
            .and_then(|s| self.manifest.services[s].host_steps.get(&choice.accelerator))
        else {
            return Ok(HostAssets::default());
        };
        let by = "the manifest's host_steps";
        let nccl_topo = steps.nccl_topo.as_ref().map(|s| self.asset(s, by)).transpose()?;
        let rdma_vfs_ready = match &steps.rdma_vfs_ready {
            Some(g) => Some((self.asset(&g.unit, by)?, self.asset(&g.helper, by)?)),
            None => None,
        };
        Ok(HostAssets {
            nccl_topo,
            rdma_vfs_ready,
            pcie_acs: steps.pcie_acs,
            iommu_passthrough: steps.iommu_passthrough,
        })
    }

    /// The base profiles (`profiles/common/<name>.conf`).
    pub fn base_profiles(&self) -> Vec<String> {
        self.paths()
            .filter_map(|p| p.strip_prefix("profiles/common/")?.strip_suffix(".conf"))
            .map(String::from)
            .collect()
    }

    /// Every combination: accelerator × intent × (no service, each service) × (the
    /// common profiles, each OS version of the manifest).
    pub fn combinations(&self) -> Vec<Choice> {
        let m = &self.manifest;
        let services = std::iter::once(None).chain(m.services.keys().cloned().map(Some));
        let oses = std::iter::once(None).chain(m.os_versions.iter().cloned().map(Some));
        let mut out = Vec::new();
        for service in services {
            for os in oses.clone() {
                for accelerator in &m.accelerators {
                    for intent in &m.intents {
                        out.push(Choice {
                            accelerator: accelerator.clone(),
                            intent: intent.clone(),
                            service: service.clone(),
                            os: os.clone(),
                        });
                    }
                }
            }
        }
        out
    }
}

/// The single `include=` of a catalog profile's `[main]` (catalog profiles include
/// exactly one profile or none).
fn include_of(text: &str) -> Option<String> {
    let conf = tuned::conf::Conf::parse(text).ok()?;
    conf.include().map(|o| o.value.trim().to_string())
}

/// `template` with `include=<profile>` as the first line of its `[main]` section.
fn with_include(template: &str, profile: &str) -> String {
    let mut out = String::with_capacity(template.len() + profile.len() + 10);
    let mut done = false;
    for line in template.split_inclusive('\n') {
        out.push_str(line);
        if !done && line.trim() == "[main]" {
            out.push_str(&format!("include={profile}\n"));
            done = true;
        }
    }
    out
}

/// `text` without the `[sysctl]` options named in `keys` (optional keys this kernel
/// lacks).
pub fn without_sysctls(text: &str, keys: &[&str]) -> String {
    let mut section = String::new();
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let t = line.trim();
        if t.starts_with('[') && t.ends_with(']') {
            section = t[1..t.len() - 1].trim().to_string();
        } else if section == "sysctl"
            && let Some((k, _)) = t.split_once('=')
            && keys.contains(&k.trim())
        {
            continue;
        }
        out.push_str(line);
    }
    out
}

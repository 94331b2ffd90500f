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
    /// An accelerator whose profiles exist only on some OS versions, asked for on another.
    #[error("accelerator {accelerator:?} is supported only on {supported}; this node runs {found}")]
    OsOnly {
        /// The accelerator.
        accelerator: String,
        /// The OS found (`ubuntu 24.04`, or that none was given).
        found: String,
        /// Where it is supported (`ubuntu 26.04`).
        supported: String,
    },
    /// A service that has no profiles for this accelerator.
    #[error(
        "service {service:?} has no profiles for accelerator {accelerator:?}; with {service} the catalog supports: {supported}"
    )]
    ServiceAccelerator {
        /// The service.
        service: String,
        /// The accelerator.
        accelerator: String,
        /// The accelerators the service supports.
        supported: String,
    },
    /// A profile the include chain names that the catalog lacks (a catalog defect).
    #[error("the catalog has no profile {profile:?} (included by {by:?})")]
    Missing {
        /// The profile named.
        profile: String,
        /// The profile including it.
        by: String,
    },
    /// A file the manifest names that the catalog lacks (a catalog defect).
    #[error("the catalog has no file {file:?} (named by {by:?})")]
    MissingFile {
        /// The file named: a name of `named_files` or a file under `catalog/files/`.
        file: String,
        /// Who names it: a profile, a service or a host path.
        by: String,
    },
}

impl CatalogError {
    /// The configMap key whose value the error is about (`accelerator`, `intent`,
    /// `service`); a catalog defect names the accelerator's.
    pub fn key(&self) -> &'static str {
        match self {
            CatalogError::Intent(..) => crate::keys::INTENT_KEY,
            CatalogError::Service(..) | CatalogError::ServiceAccelerator { .. } => crate::keys::SERVICE_KEY,
            _ => crate::keys::ACCELERATOR_KEY,
        }
    }
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
    /// The services to restart for it to take effect (the `service` interrupt); one
    /// that is not running when config deploys the file is left out.
    #[serde(default)]
    pub restart: Vec<String>,
    /// For a drop-in the container runtime needs: the systemd units that may run the
    /// runtime on a node (`containerd.service`, RKE2's and K3s's units, which start
    /// their own containerd). The node decides: the file goes to
    /// `/etc/systemd/system/<unit>.d/` of each of them installed there, restarting
    /// that unit, and to `path` (the first unit's) when none is (see
    /// [`crate::plan`]). A name with one `*` (`k3s-*.service`) stands for every
    /// installed unit it matches.
    #[serde(default)]
    pub drop_in_units: Vec<String>,
    /// The GRUB drop-in of upstream's configure_bootloader step (service `rke2`):
    /// switched by `CONFIGURE_BOOTLOADER`, refused off the Debian family, left out
    /// where the node's grub.cfg already expands `$tuned_params` (see
    /// [`crate::grub::bootloader_step`]).
    #[serde(default)]
    pub configure_bootloader: bool,
}

/// A cloud service's wrapper profile, the accelerators it has profiles for and its files.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct ServiceEntry {
    /// Files deployed with the service profile.
    #[serde(default)]
    pub files: Vec<FileEntry>,
    /// The accelerators the service supports; absent: every accelerator.
    #[serde(default)]
    pub accelerators: Option<Vec<String>>,
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
    /// Whether IPv6 is re-enabled on the RDMA VFs that exist at config.
    #[serde(default)]
    pub rdma_vf_ipv6: bool,
    /// DOCA Spectrum-X congestion control: its unit template and udev rule.
    #[serde(default)]
    pub spcx_cc: Option<SpcxSources>,
}

/// The files of SPCX congestion control, under `catalog/files/`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpcxSources {
    /// The unit template (`doca-spcx-cc@.service`).
    pub unit: String,
    /// The udev rule.
    pub rules: String,
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
    /// Whether IPv6 is re-enabled on the RDMA VFs that exist at config.
    pub rdma_vf_ipv6: bool,
    /// SPCX congestion control's unit template and udev rule.
    pub spcx_cc: Option<(Asset, Asset)>,
}

impl HostAssets {
    /// Whether the selection ships no host step.
    pub fn is_empty(&self) -> bool {
        self.nccl_topo.is_none()
            && self.rdma_vfs_ready.is_none()
            && !self.pcie_acs
            && !self.iommu_passthrough
            && !self.rdma_vf_ipv6
            && self.spcx_cc.is_none()
    }

    /// Whether a step reads the host steps' environment (`TOPO_PATH` and the
    /// switches): every step but [`HostAssets::rdma_vf_ipv6`], which has none.
    pub fn needs_switches(&self) -> bool {
        !HostAssets {
            rdma_vf_ipv6: false,
            ..self.clone()
        }
        .is_empty()
    }
}

/// `catalog/manifest.json`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Manifest {
    /// The package's kind.
    pub package: String,
    /// Accelerator names (`h100`): each has profiles per intent.
    pub accelerators: Vec<String>,
    /// Accelerators whose profiles exist only on some OS versions, with those versions
    /// (`vr200`: Ubuntu 26.04); on any other OS they are bad input.
    #[serde(default)]
    pub accelerator_os: BTreeMap<String, Vec<OsEntry>>,
    /// Accelerators with one self-contained profile, by accelerator (`generic` →
    /// `nvidia-generic`): intent and service are ignored.
    #[serde(default)]
    pub self_contained: BTreeMap<String, String>,
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
    /// Files deployed with profiles, by a name of the catalog's own
    /// (`containerd-limitstack`): a file several profiles deploy is written down once.
    #[serde(default)]
    pub named_files: BTreeMap<String, FileEntry>,
    /// The [`Manifest::named_files`] deployed with a profile, by profile name.
    pub profile_files: BTreeMap<String, Vec<String>>,
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
    /// The directories it put profile directories in: tuned's system and user
    /// directories of both layouts (`/usr/lib/tuned`, `/etc/tuned`, and their
    /// `profiles` subdirectories of tuned 2.23 and later).
    pub dirs: Vec<PathBuf>,
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

    /// Every accelerator name a configMap may give: those with profiles per intent,
    /// then the self-contained ones (`generic`).
    pub fn accelerator_names(&self) -> Vec<String> {
        let m = &self.manifest;
        m.accelerators.iter().chain(m.self_contained.keys()).cloned().collect()
    }

    /// The self-contained profile of `accelerator` (`generic` → `nvidia-generic`), if
    /// it has one: its intent and service are ignored.
    pub fn self_contained(&self, accelerator: &str) -> Option<&str> {
        self.manifest.self_contained.get(accelerator).map(String::as_str)
    }

    /// The OS versions `accelerator` exists on; `None` when it exists on every OS.
    pub fn accelerator_os(&self, accelerator: &str) -> Option<&[OsEntry]> {
        self.manifest.accelerator_os.get(accelerator).map(Vec::as_slice)
    }

    /// `choice` as the catalog reads it: a self-contained accelerator's intent is the
    /// default and its service none (they are ignored).
    pub fn normalized(&self, choice: &Choice) -> Choice {
        match self.self_contained(&choice.accelerator) {
            Some(_) => Choice {
                intent: self.manifest.default_intent.clone(),
                service: None,
                ..choice.clone()
            },
            None => choice.clone(),
        }
    }

    /// Checks `choice` against the manifest: every name known, the accelerator on an
    /// OS it exists on, the service one that has profiles for the accelerator.
    pub fn check(&self, choice: &Choice) -> Result<(), CatalogError> {
        let m = &self.manifest;
        let names = self.accelerator_names();
        if !names.contains(&choice.accelerator) {
            return Err(CatalogError::Accelerator(choice.accelerator.clone(), supported(&names)));
        }
        if self.self_contained(&choice.accelerator).is_some() {
            return Ok(());
        }
        if !m.intents.contains(&choice.intent) {
            return Err(CatalogError::Intent(choice.intent.clone(), supported(&m.intents)));
        }
        if let Some(allowed) = self.accelerator_os(&choice.accelerator) {
            self.check_os(&choice.accelerator, choice.os.as_ref(), allowed)?;
        }
        let Some(s) = &choice.service else {
            return Ok(());
        };
        let Some(entry) = m.services.get(s) else {
            let names: Vec<String> = m.services.keys().cloned().collect();
            return Err(CatalogError::Service(s.clone(), supported(&names)));
        };
        match &entry.accelerators {
            Some(list) if !list.contains(&choice.accelerator) => Err(CatalogError::ServiceAccelerator {
                service: s.clone(),
                accelerator: choice.accelerator.clone(),
                supported: supported(list),
            }),
            _ => Ok(()),
        }
    }

    /// Whether `os` is one of `allowed` (versions compared as overrides key them).
    fn check_os(&self, accelerator: &str, os: Option<&OsEntry>, allowed: &[OsEntry]) -> Result<(), CatalogError> {
        let key = |o: &OsEntry| (o.id.clone(), self.os_version(o));
        if os.is_some_and(|os| allowed.iter().any(|a| key(a) == key(os))) {
            return Ok(());
        }
        let describe = |o: &OsEntry| format!("{} {}", o.id, o.version);
        Err(CatalogError::OsOnly {
            accelerator: accelerator.to_string(),
            found: os.map_or_else(|| "no OS given (the common profiles)".to_string(), describe),
            supported: allowed.iter().map(describe).collect::<Vec<_>>().join(", "),
        })
    }

    /// The profile names of `choice`: (workload profile, profile to activate). The
    /// service wrapper is `<service>-<accelerator>-<intent>`, as the originals name it;
    /// a self-contained accelerator's profile is both.
    pub fn names(&self, choice: &Choice) -> (String, String) {
        if let Some(profile) = self.self_contained(&choice.accelerator) {
            return (profile.to_string(), profile.to_string());
        }
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
        let choice = &self.normalized(choice);
        let (workload, active) = self.names(choice);
        let mut profiles = Vec::new();
        let mut next = Some((active.clone(), "the configMap".to_string()));
        if let Some(s) = &choice.service {
            profiles.push(self.service_wrapper(s, &active, &workload)?);
            next = Some((workload, active.clone()));
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
        let files = self.files_of(choice, &profiles)?;
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
            .ok_or_else(|| CatalogError::MissingFile {
                file: source.to_string(),
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
        let spcx_cc = match &steps.spcx_cc {
            Some(s) => Some((self.asset(&s.unit, by)?, self.asset(&s.rules, by)?)),
            None => None,
        };
        Ok(HostAssets {
            nccl_topo,
            rdma_vfs_ready,
            pcie_acs: steps.pcie_acs,
            iommu_passthrough: steps.iommu_passthrough,
            rdma_vf_ipv6: steps.rdma_vf_ipv6,
            spcx_cc,
        })
    }

    /// The service wrapper `active`: the service's template including `workload`.
    fn service_wrapper(&self, service: &str, active: &str, workload: &str) -> Result<Profile, CatalogError> {
        let source = format!("service/{service}/service.conf");
        let template = self
            .file(&format!("profiles/{source}"))
            .ok_or_else(|| CatalogError::Missing {
                profile: active.to_string(),
                by: format!("service {service}"),
            })?;
        Ok(Profile {
            name: active.to_string(),
            source,
            text: with_include(template, workload),
        })
    }

    /// The files of the service and of each profile of the chain, with their bytes.
    fn files_of(&self, choice: &Choice, profiles: &[Profile]) -> Result<Vec<(FileEntry, Vec<u8>)>, CatalogError> {
        let mut entries: Vec<&FileEntry> = Vec::new();
        if let Some(s) = &choice.service {
            entries.extend(&self.manifest.services[s].files);
        }
        for p in profiles {
            for name in self.manifest.profile_files.get(&p.name).into_iter().flatten() {
                let entry = self
                    .manifest
                    .named_files
                    .get(name)
                    .ok_or_else(|| CatalogError::MissingFile {
                        file: name.clone(),
                        by: p.name.clone(),
                    })?;
                entries.push(entry);
            }
        }
        let mut files: Vec<(FileEntry, Vec<u8>)> = Vec::new();
        for f in entries {
            if files.iter().any(|(have, _)| have.path == f.path) {
                continue;
            }
            let bytes = self
                .files
                .get(format!("files/{}", f.source).as_str())
                .copied()
                .ok_or_else(|| CatalogError::MissingFile {
                    file: f.source.clone(),
                    by: f.path.display().to_string(),
                })?;
            files.push((f.clone(), bytes.to_vec()));
        }
        Ok(files)
    }

    /// The base profiles (`profiles/common/<name>.conf`).
    pub fn base_profiles(&self) -> Vec<String> {
        self.paths()
            .filter_map(|p| p.strip_prefix("profiles/common/")?.strip_suffix(".conf"))
            .map(String::from)
            .collect()
    }

    /// Every combination: accelerator × intent × (no service, each service) × (the
    /// common profiles, each OS version of the manifest), kept where [`Catalog::check`]
    /// accepts it (an accelerator on the OS versions it exists on, a service with the
    /// accelerators it supports); then each self-contained accelerator once per OS.
    pub fn combinations(&self) -> Vec<Choice> {
        let m = &self.manifest;
        let services = std::iter::once(None).chain(m.services.keys().cloned().map(Some));
        let oses: Vec<Option<OsEntry>> = std::iter::once(None)
            .chain(m.os_versions.iter().cloned().map(Some))
            .collect();
        let mut out = Vec::new();
        for service in services {
            for os in &oses {
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
        out.retain(|c| self.check(c).is_ok());
        for accelerator in m.self_contained.keys() {
            for os in &oses {
                out.push(Choice {
                    accelerator: accelerator.clone(),
                    intent: m.default_intent.clone(),
                    service: None,
                    os: os.clone(),
                });
            }
        }
        out
    }
}

/// The single `include=` of a catalog profile's `[main]` (catalog profiles include
/// exactly one profile or none).
fn include_of(text: &str) -> Option<String> {
    let conf = tuned::engine::Conf::parse(text).ok()?;
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

// SPDX-License-Identifier: Apache-2.0
//! Profile catalogs: the combinations a package ships (accelerator × intent ×
//! service × OS version) and, for each, its effective settings, so an operator can
//! review what a configMap will do before rolling it out (`skyhook-pkg profiles`) and
//! tests can compare every combination with a fixture.
//!
//! A package implements [`Catalog`] over its own embedded data; this module only
//! states the shared vocabulary: a [`Selection`], the [`Effective`] settings it
//! yields, and the [`CatalogError`] that lists what is supported.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, excerpt};
use crate::os::distro::OsRelease;

/// An OS and its version, as catalogs key their overrides (`ubuntu` `24.04`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct OsVersion {
    /// `/etc/os-release` `ID` (`ubuntu`, `debian`, `rhel`).
    pub id: String,
    /// `/etc/os-release` `VERSION_ID` (`24.04`, `12`, `9.4`).
    pub version: String,
}

impl OsVersion {
    /// The OS of a host, from its `/etc/os-release`.
    pub fn from_os_release(release: &OsRelease) -> Self {
        OsVersion {
            id: release.id(),
            version: release.version_id().to_string(),
        }
    }
}

impl fmt::Display for OsVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.id, self.version)
    }
}

impl FromStr for OsVersion {
    type Err = CatalogError;

    /// `ID:VERSION`, as `skyhook-pkg profiles show --os` takes it (`ubuntu:24.04`).
    fn from_str(text: &str) -> Result<Self, CatalogError> {
        let well_formed =
            |part: &str| !part.is_empty() && part.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
        match text.split_once(':') {
            Some((id, version)) if well_formed(id) && well_formed(version) => Ok(OsVersion {
                id: id.to_string(),
                version: version.to_string(),
            }),
            _ => Err(CatalogError::BadOs { given: excerpt(text) }),
        }
    }
}

/// One combination of a catalog, as a configMap (and the node's OS) selects it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Selection {
    /// The accelerator (`h100`, `gb200`).
    pub accelerator: String,
    /// The workload intent (`performance`, `inference`, `multiNodeTraining`); empty
    /// in a catalog without intents (nvidia-setup).
    pub intent: String,
    /// The cloud service whose profile wraps the workload profile (`eks`), if any.
    pub service: Option<String>,
    /// The OS version whose override applies; `None` for the common profiles.
    pub os: Option<OsVersion>,
}

impl fmt::Display for Selection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "accelerator {}", self.accelerator)?;
        if !self.intent.is_empty() {
            write!(f, " intent {}", self.intent)?;
        }
        if let Some(service) = &self.service {
            write!(f, " service {service}")?;
        }
        match &self.os {
            Some(os) => write!(f, " os {os}"),
            None => write!(f, " (common profiles)"),
        }
    }
}

/// What a setting changes on the node.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SettingKind {
    /// A kernel parameter under `/proc/sys` (`net.core.rmem_max`).
    Sysctl,
    /// A kernel command-line argument (`iommu.passthrough=1`); needs a reboot.
    KernelArgument,
    /// A kernel module loaded (or its options).
    Module,
    /// The CPU frequency governor.
    CpuGovernor,
    /// Huge pages reserved (at boot or live).
    HugePages,
    /// A systemd drop-in (`containerd.service.d/…`).
    DropIn,
    /// A service started, restarted or configured.
    Service,
    /// Anything else, named by the catalog.
    Other(String),
}

impl SettingKind {
    /// The kind's name for people, plural as a heading (`kernel arguments`).
    pub fn heading(&self) -> String {
        match self {
            SettingKind::Sysctl => "sysctls".into(),
            SettingKind::KernelArgument => "kernel arguments".into(),
            SettingKind::Module => "modules".into(),
            SettingKind::CpuGovernor => "CPU governor".into(),
            SettingKind::HugePages => "huge pages".into(),
            SettingKind::DropIn => "drop-ins".into(),
            SettingKind::Service => "services".into(),
            SettingKind::Other(name) => name.clone(),
        }
    }
}

/// One effective setting of a combination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    /// What it changes.
    pub kind: SettingKind,
    /// The key (`net.core.rmem_max`, `iommu.passthrough`, `containerd.service.d/10-limits.conf`).
    pub key: String,
    /// The value it gets (for a drop-in, its content).
    pub value: String,
    /// The profile or catalog file it comes from (`nvidia-base`, `h100/inference/sysctl.conf`).
    pub source: String,
    /// Whether it takes effect only after a reboot.
    pub needs_reboot: bool,
    /// Whether a kernel that lacks it skips it with a warning instead of failing.
    pub optional: bool,
}

/// The effective settings of one combination.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Effective {
    /// The profile activated (`nvidia-h100-inference`, `eks-nvidia-h100-inference`), or
    /// the package's name for a catalog without profiles.
    pub profile: String,
    /// Every setting, in the order the catalog resolves them (later wins).
    pub settings: Vec<Setting>,
}

impl Effective {
    /// Whether any setting takes effect only after a reboot.
    pub fn needs_reboot(&self) -> bool {
        self.settings.iter().any(|s| s.needs_reboot)
    }
}

/// A package's catalog of profiles.
pub trait Catalog {
    /// The package's name (`nvidia-tuned`).
    fn package(&self) -> &'static str;
    /// Every combination the catalog ships.
    fn combinations(&self) -> Vec<Selection>;
    /// The effective settings of `selection`.
    fn effective(&self, selection: &Selection) -> Result<Effective, CatalogError>;
    /// `selection` as the catalog reads it, the way [`Catalog::combinations`] lists it:
    /// unchanged by default; an accelerator that ignores intent and service
    /// (nvidia-tuned's `generic`) gets the values its combinations carry.
    fn normalized(&self, selection: &Selection) -> Selection {
        selection.clone()
    }
}

/// Why a catalog has no settings for a selection; every variant but
/// [`CatalogError::Data`] lists what is supported, and all are bad input (exit 2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CatalogError {
    /// The accelerator has no profiles.
    #[error("accelerator {given} is not in the catalog; supported: {}", .supported.join(", "))]
    UnknownAccelerator {
        /// The value given, quoted and bounded.
        given: String,
        /// The accelerators the catalog ships.
        supported: Vec<String>,
    },
    /// The intent has no profiles.
    #[error("intent {given} is not in the catalog; supported: {}", .supported.join(", "))]
    UnknownIntent {
        /// The value given, quoted and bounded.
        given: String,
        /// The intents the catalog ships.
        supported: Vec<String>,
    },
    /// The service has no profiles.
    #[error("service {given} is not in the catalog; supported: {}, or none", .supported.join(", "))]
    UnknownService {
        /// The value given, quoted and bounded.
        given: String,
        /// The services the catalog ships.
        supported: Vec<String>,
    },
    /// Each value is known, but the catalog does not ship them together.
    #[error("the catalog has no profile for {selection}; it ships: {}", bounded(.supported))]
    UnknownCombination {
        /// The selection, as [`Selection`] displays it.
        selection: String,
        /// The combinations it ships (for that accelerator, when it has any).
        supported: Vec<String>,
    },
    /// An OS version not written `ID:VERSION`.
    #[error("OS {given} is not ID:VERSION (e.g. ubuntu:24.04)")]
    BadOs {
        /// The value given, quoted and bounded.
        given: String,
    },
    /// The catalog's own data is inconsistent (a missing include, a bad line): a
    /// defect of the package, which its catalog tests catch before a release.
    #[error("catalog data {source_file}: {reason}")]
    Data {
        /// The file or profile at fault.
        source_file: String,
        /// What is wrong.
        reason: String,
    },
}

impl CatalogError {
    /// An unknown accelerator, `given` quoted and bounded.
    pub fn unknown_accelerator(given: &str, supported: &[impl ToString]) -> Self {
        CatalogError::UnknownAccelerator {
            given: excerpt(given),
            supported: strings(supported),
        }
    }

    /// An unknown intent, `given` quoted and bounded.
    pub fn unknown_intent(given: &str, supported: &[impl ToString]) -> Self {
        CatalogError::UnknownIntent {
            given: excerpt(given),
            supported: strings(supported),
        }
    }

    /// An unknown service, `given` quoted and bounded.
    pub fn unknown_service(given: &str, supported: &[impl ToString]) -> Self {
        CatalogError::UnknownService {
            given: excerpt(given),
            supported: strings(supported),
        }
    }

    /// A combination the catalog does not ship, with those it does.
    pub fn unknown_combination(selection: &Selection, supported: &[Selection]) -> Self {
        CatalogError::UnknownCombination {
            selection: selection.to_string(),
            supported: strings(supported),
        }
    }
}

impl From<CatalogError> for Error {
    fn from(e: CatalogError) -> Self {
        match e {
            CatalogError::Data { .. } => Error::action(e.to_string()),
            _ => Error::input(e.to_string()),
        }
    }
}

fn strings(items: &[impl ToString]) -> Vec<String> {
    items.iter().map(ToString::to_string).collect()
}

/// At most ten entries, then how many more.
fn bounded(items: &[String]) -> String {
    const SHOWN: usize = 10;
    let mut text = items.iter().take(SHOWN).cloned().collect::<Vec<_>>().join("; ");
    if items.len() > SHOWN {
        text.push_str(&format!("; and {} more", items.len() - SHOWN));
    }
    text
}

/// What a configMap of a catalog package asks for: `accelerator` (`auto` or a name),
/// `intent` (the package's default when absent), `service` (optional).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request<'a> {
    /// The accelerator, or `auto` for every one the catalog ships.
    pub accelerator: &'a str,
    /// The intent.
    pub intent: &'a str,
    /// The service, if any.
    pub service: Option<&'a str>,
}

impl Request<'_> {
    /// The combinations of `catalog` this request selects on some node (any OS; every
    /// accelerator for `auto`).
    pub fn selections(&self, catalog: &dyn Catalog) -> Vec<Selection> {
        catalog
            .combinations()
            .into_iter()
            .filter(|s| self.accelerator == crate::platform::accelerator::AUTO || s.accelerator == self.accelerator)
            .filter(|s| {
                // As the catalog reads this request on that accelerator and OS (an
                // accelerator that ignores intent and service matches whatever they are).
                let asked = catalog.normalized(&Selection {
                    intent: self.intent.to_string(),
                    service: self.service.map(String::from),
                    ..s.clone()
                });
                asked == *s
            })
            .collect()
    }

    /// Whether a node given this request may need a reboot: some combination it
    /// selects has a setting that takes effect only after one (kernel arguments).
    pub fn may_need_reboot(&self, catalog: &dyn Catalog) -> bool {
        self.selections(catalog)
            .iter()
            .any(|s| catalog.effective(s).is_ok_and(|e| e.needs_reboot()))
    }
}

/// Which configMap key of a [`Request`] changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestKey {
    /// `intent`.
    Intent,
    /// `service`.
    Service,
}

impl Request<'_> {
    /// Whether changing `key` (to any other value its catalog ships with the same
    /// accelerator, the other key and OS) can change the settings that need a reboot.
    pub fn change_may_reboot(&self, catalog: &dyn Catalog, key: RequestKey) -> bool {
        let all = catalog.combinations();
        self.selections(catalog).iter().any(|current| {
            let ours = reboot_settings(catalog, current);
            all.iter()
                .filter(|other| other.accelerator == current.accelerator && other.os == current.os)
                .filter(|other| match key {
                    RequestKey::Intent => other.service == current.service && other.intent != current.intent,
                    RequestKey::Service => other.intent == current.intent && other.service != current.service,
                })
                .any(|other| reboot_settings(catalog, other) != ours)
        })
    }
}

/// The settings of `selection` that take effect only after a reboot, as key=value.
fn reboot_settings(catalog: &dyn Catalog, selection: &Selection) -> Vec<String> {
    let mut settings: Vec<String> = catalog
        .effective(selection)
        .map(|e| e.settings)
        .unwrap_or_default()
        .into_iter()
        .filter(|s| s.needs_reboot)
        .map(|s| format!("{}={}", s.key, s.value))
        .collect();
    settings.sort();
    settings
}

#[cfg(test)]
mod tests {
    use super::*;

    fn selection(accelerator: &str, intent: &str, service: Option<&str>, os: Option<&str>) -> Selection {
        Selection {
            accelerator: accelerator.into(),
            intent: intent.into(),
            service: service.map(str::to_string),
            os: os.map(|o| o.parse().unwrap()),
        }
    }

    fn setting(kind: SettingKind, needs_reboot: bool) -> Setting {
        Setting {
            kind,
            key: "k".into(),
            value: "v".into(),
            source: "nvidia-base".into(),
            needs_reboot,
            optional: false,
        }
    }

    #[test]
    fn os_versions_parse_from_id_colon_version_and_from_os_release() {
        let os: OsVersion = "ubuntu:24.04".parse().unwrap();
        assert_eq!(
            os,
            OsVersion {
                id: "ubuntu".into(),
                version: "24.04".into()
            }
        );
        assert_eq!(os.to_string(), "ubuntu:24.04");
        let release = OsRelease::parse("ID=debian\nVERSION_ID=\"12\"\n");
        assert_eq!(OsVersion::from_os_release(&release).to_string(), "debian:12");
        for bad in ["ubuntu", "ubuntu:", ":24.04", "ubuntu:24.04:x", "ub untu:1", "a:b\n"] {
            let e = bad.parse::<OsVersion>().unwrap_err();
            assert_eq!(
                e.to_string(),
                format!("OS {} is not ID:VERSION (e.g. ubuntu:24.04)", excerpt(bad))
            );
        }
    }

    #[test]
    fn selections_display_every_part_they_have() {
        assert_eq!(
            selection("h100", "inference", Some("eks"), Some("ubuntu:24.04")).to_string(),
            "accelerator h100 intent inference service eks os ubuntu:24.04"
        );
        assert_eq!(
            selection("gb200", "performance", None, None).to_string(),
            "accelerator gb200 intent performance (common profiles)"
        );
    }

    #[test]
    fn a_combination_needs_a_reboot_when_any_setting_does() {
        let mut effective = Effective {
            profile: "p".into(),
            settings: vec![setting(SettingKind::Sysctl, false)],
        };
        assert!(!effective.needs_reboot());
        effective.settings.push(setting(SettingKind::KernelArgument, true));
        assert!(effective.needs_reboot());
        assert!(
            !Effective {
                profile: "p".into(),
                settings: vec![]
            }
            .needs_reboot()
        );
    }

    #[test]
    fn kinds_have_headings_for_people() {
        let headings: Vec<String> = [
            SettingKind::Sysctl,
            SettingKind::KernelArgument,
            SettingKind::Module,
            SettingKind::CpuGovernor,
            SettingKind::HugePages,
            SettingKind::DropIn,
            SettingKind::Service,
            SettingKind::Other("scripts".into()),
        ]
        .iter()
        .map(SettingKind::heading)
        .collect();
        assert_eq!(
            headings,
            [
                "sysctls",
                "kernel arguments",
                "modules",
                "CPU governor",
                "huge pages",
                "drop-ins",
                "services",
                "scripts"
            ]
        );
    }

    #[test]
    fn every_error_lists_what_is_supported_and_is_bad_input() {
        let shipped = [
            selection("h100", "inference", None, None),
            selection("h100", "inference", Some("eks"), None),
        ];
        let cases = [
            (
                CatalogError::unknown_accelerator("a100", &["h100", "gb200"]),
                "accelerator \"a100\" is not in the catalog; supported: h100, gb200",
            ),
            (
                CatalogError::unknown_intent("fast", &["performance", "inference"]),
                "intent \"fast\" is not in the catalog; supported: performance, inference",
            ),
            (
                CatalogError::unknown_service("gke", &["eks"]),
                "service \"gke\" is not in the catalog; supported: eks, or none",
            ),
            (
                CatalogError::unknown_combination(&selection("h100", "inference", Some("aks"), None), &shipped),
                "the catalog has no profile for accelerator h100 intent inference service aks (common profiles); \
                 it ships: accelerator h100 intent inference (common profiles); \
                 accelerator h100 intent inference service eks (common profiles)",
            ),
        ];
        for (e, expected) in cases {
            assert_eq!(e.to_string(), expected);
            assert_eq!(Error::from(e).exit_code(), 2);
        }
        let data = CatalogError::Data {
            source_file: "nvidia-base".into(),
            reason: "include x missing".into(),
        };
        assert_eq!(Error::from(data).exit_code(), 1);
    }

    #[test]
    fn long_lists_of_combinations_are_cut() {
        let shipped: Vec<Selection> = (0..25).map(|i| selection(&format!("a{i}"), "p", None, None)).collect();
        let message = CatalogError::unknown_combination(&selection("x", "p", None, None), &shipped).to_string();
        assert!(message.ends_with("; and 15 more"), "{message}");
        let huge = "y".repeat(1 << 20);
        assert!(CatalogError::unknown_intent(&huge, &["p"]).to_string().len() < 300);
    }
}

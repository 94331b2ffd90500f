// SPDX-License-Identifier: Apache-2.0
//! What a step knows about itself, from the environment the agent gives it:
//! `SKYHOOK_DIR`, `STEP_ROOT`, `SKYHOOK_RESOURCE_ID` and, in upgrade modes,
//! `PREVIOUS_VERSION` and `CURRENT_VERSION`.

use std::fmt;
use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::mode::Mode;
use crate::semver::Version;

/// The step's view of the agent's environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Context {
    /// The mode being run.
    pub mode: Mode,
    /// The copy dir (`SKYHOOK_DIR`): holds `configmaps/`, `skyhook_dir/`, `node-metadata/`.
    /// Different for every version and generation: nothing that must last lives there.
    pub skyhook_dir: PathBuf,
    /// `STEP_ROOT`, `${SKYHOOK_DIR}/skyhook_dir` unless the agent says otherwise.
    pub step_root: PathBuf,
    /// `SKYHOOK_RESOURCE_ID`, parsed.
    pub resource: ResourceId,
    /// `PREVIOUS_VERSION` and `CURRENT_VERSION`, present in upgrade modes only.
    pub upgrade: Option<UpgradeVersions>,
}

/// `SKYHOOK_RESOURCE_ID` = `<resource-id>_<package-name>_<package-version>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceId {
    /// The resource id (may itself contain `_`).
    pub resource: String,
    /// The package's name: its key in the SCR (may contain `-`, never `_`).
    pub package: String,
    /// The package version.
    pub version: Version,
}

/// The versions an upgrade moves between.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpgradeVersions {
    /// What was installed before.
    pub previous: PreviousVersion,
    /// The version being installed.
    pub current: Version,
}

/// `PREVIOUS_VERSION`: a version, or the agent's two special words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PreviousVersion {
    /// `unknown`: the agent has no history for the package.
    Unknown,
    /// `uninstalled`: the package was uninstalled before.
    Uninstalled,
    /// A version that was installed.
    Version(Version),
}

impl fmt::Display for PreviousVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PreviousVersion::Unknown => f.write_str("unknown"),
            PreviousVersion::Uninstalled => f.write_str("uninstalled"),
            PreviousVersion::Version(v) => v.fmt(f),
        }
    }
}

impl ResourceId {
    /// Parses `<resource-id>_<package-name>_<package-version>`.
    pub fn parse(value: &str) -> Result<Self> {
        let bad = |why: &str| {
            Error::input(format!(
                "SKYHOOK_RESOURCE_ID={value:?} is malformed: {why} \
                 (expected <resource-id>_<package-name>_<package-version>, e.g. scr-uid_tuning_2.0.0)"
            ))
        };
        let mut parts = value.rsplitn(3, '_');
        let version = parts.next().unwrap_or_default();
        let (Some(package), Some(resource)) = (parts.next(), parts.next()) else {
            return Err(bad("it needs two '_' separators"));
        };
        if resource.is_empty() {
            return Err(bad("the resource id is empty"));
        }
        if package.is_empty() {
            return Err(bad("the package name is empty"));
        }
        if !package
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
        {
            return Err(bad("the package name may hold only letters, digits, '-' and '.'"));
        }
        let version = version
            .parse::<Version>()
            .map_err(|e| bad(&format!("the version part: {e}")))?;
        Ok(ResourceId {
            resource: resource.to_string(),
            package: package.to_string(),
            version,
        })
    }
}

impl Context {
    /// Reads the context from the process environment.
    pub fn from_env(mode: Mode) -> Result<Self> {
        Self::from_vars(mode, |name| std::env::var(name).ok())
    }

    /// Reads the context through `var` (the environment, or a map in tests).
    /// Every missing or malformed variable is reported, not only the first.
    pub fn from_vars(mode: Mode, var: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let mut problems = Vec::new();
        let mut required = |name: &str| match var(name) {
            Some(v) if !v.is_empty() => Some(v),
            _ => {
                problems.push(format!(
                    "environment variable {name} is not set; the Skyhook agent sets it for every step \
                     (when running by hand, set it as the agent would: see AGENT_CONTRACT.md)"
                ));
                None
            }
        };
        let skyhook_dir = required("SKYHOOK_DIR").map(PathBuf::from);
        let resource_raw = required("SKYHOOK_RESOURCE_ID");
        let upgrade_raw = if mode.is_upgrade() {
            Some((required("PREVIOUS_VERSION"), required("CURRENT_VERSION")))
        } else {
            None
        };
        if let Some(dir) = &skyhook_dir
            && !dir.is_absolute()
        {
            problems.push(format!("SKYHOOK_DIR={:?} must be an absolute path", dir.display()));
        }
        let resource = match resource_raw.map(|r| ResourceId::parse(&r)) {
            Some(Ok(r)) => Some(r),
            Some(Err(Error::Input(mut p))) => {
                problems.append(&mut p);
                None
            }
            _ => None,
        };
        let upgrade = match upgrade_raw {
            Some((Some(prev), Some(cur))) => {
                let previous = match prev.as_str() {
                    "unknown" => Some(PreviousVersion::Unknown),
                    "uninstalled" => Some(PreviousVersion::Uninstalled),
                    v => match v.parse() {
                        Ok(v) => Some(PreviousVersion::Version(v)),
                        Err(e) => {
                            problems.push(format!("PREVIOUS_VERSION: {e}"));
                            None
                        }
                    },
                };
                let current = match cur.parse() {
                    Ok(v) => Some(v),
                    Err(e) => {
                        problems.push(format!("CURRENT_VERSION: {e}"));
                        None
                    }
                };
                previous
                    .zip(current)
                    .map(|(previous, current)| UpgradeVersions { previous, current })
            }
            _ => None,
        };
        if !problems.is_empty() {
            return Err(Error::Input(problems));
        }
        let skyhook_dir = skyhook_dir.expect("checked above");
        let step_root = var("STEP_ROOT")
            .filter(|s| !s.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| skyhook_dir.join("skyhook_dir"));
        Ok(Context {
            mode,
            skyhook_dir,
            step_root,
            resource: resource.expect("checked above"),
            upgrade,
        })
    }

    /// The package's name (its key in the SCR).
    pub fn package_name(&self) -> &str {
        &self.resource.package
    }

    /// `${SKYHOOK_DIR}/configmaps`.
    pub fn configmap_dir(&self) -> PathBuf {
        self.skyhook_dir.join("configmaps")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn parses_resource_ids() {
        let r = ResourceId::parse("scr-uid_tuning_2.0.0").unwrap();
        assert_eq!(
            (r.resource.as_str(), r.package.as_str(), r.version.to_string().as_str()),
            ("scr-uid", "tuning", "2.0.0")
        );
        let r = ResourceId::parse("my_skyhook_gpu-tuning_1.2.3-rc.1+b5").unwrap();
        assert_eq!(r.resource, "my_skyhook");
        assert_eq!(r.package, "gpu-tuning");
        assert_eq!(r.version.to_string(), "1.2.3-rc.1+b5");
    }

    #[test]
    fn rejects_malformed_resource_ids() {
        for (bad, why) in [
            ("tuning_2.0.0", "two '_' separators"),
            ("nounderscore", "two '_' separators"),
            ("_tuning_1.0.0", "resource id is empty"),
            ("scr__1.0.0", "package name is empty"),
            ("scr_tuning_v1.0.0", "no 'v' prefix"),
            ("scr_tuning_1.0", "three numbers"),
            ("scr_tun ing_1.0.0", "letters, digits"),
        ] {
            let e = ResourceId::parse(bad).unwrap_err().to_string();
            assert!(e.contains(why), "{bad}: {e}");
            assert!(e.contains(bad), "the message names the value: {e}");
        }
    }

    #[test]
    fn reads_the_step_environment() {
        let c = Context::from_vars(
            Mode::Config,
            vars(&[
                ("SKYHOOK_DIR", "/var/skyhook/x"),
                ("SKYHOOK_RESOURCE_ID", "r_tuning_1.0.0"),
            ]),
        )
        .unwrap();
        assert_eq!(c.step_root, PathBuf::from("/var/skyhook/x/skyhook_dir"));
        assert_eq!(c.package_name(), "tuning");
        assert_eq!(c.configmap_dir(), PathBuf::from("/var/skyhook/x/configmaps"));
        assert!(c.upgrade.is_none());
    }

    #[test]
    fn upgrade_modes_need_both_versions() {
        let base = [
            ("SKYHOOK_DIR", "/d"),
            ("SKYHOOK_RESOURCE_ID", "r_t_2.0.0"),
            ("PREVIOUS_VERSION", "1.0.0"),
            ("CURRENT_VERSION", "2.0.0"),
        ];
        let c = Context::from_vars(Mode::Upgrade, vars(&base)).unwrap();
        let u = c.upgrade.unwrap();
        assert_eq!(u.previous.to_string(), "1.0.0");
        assert_eq!(u.current.to_string(), "2.0.0");
        for word in ["unknown", "uninstalled"] {
            let c = Context::from_vars(
                Mode::UpgradeCheck,
                vars(&[base[0], base[1], ("PREVIOUS_VERSION", word), base[3]]),
            )
            .unwrap();
            assert_eq!(c.upgrade.unwrap().previous.to_string(), word);
        }
        let e = Context::from_vars(Mode::Upgrade, vars(&base[..2]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("PREVIOUS_VERSION is not set") && e.contains("CURRENT_VERSION is not set"),
            "{e}"
        );
    }

    #[test]
    fn lists_every_missing_variable() {
        let e = Context::from_vars(Mode::Config, vars(&[])).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let msg = e.to_string();
        assert!(
            msg.contains("SKYHOOK_DIR is not set") && msg.contains("SKYHOOK_RESOURCE_ID is not set"),
            "{msg}"
        );
        let e = Context::from_vars(
            Mode::Config,
            vars(&[("SKYHOOK_DIR", "relative"), ("SKYHOOK_RESOURCE_ID", "x")]),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("must be an absolute path") && e.contains("malformed"), "{e}");
    }
}

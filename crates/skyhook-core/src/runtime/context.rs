// SPDX-License-Identifier: Apache-2.0
//! What a step knows about itself, from the environment the agent gives it:
//! `SKYHOOK_DIR`, `STEP_ROOT`, `SKYHOOK_RESOURCE_ID` and, in upgrade modes,
//! `PREVIOUS_VERSION` and `CURRENT_VERSION` (see PACKAGE_LIFECYCLE.md, "Environment
//! of a step"). Every value is validated before the node is touched: a bad one is
//! bad input (exit 2) naming the variable and an excerpt of its value.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result, excerpt};
use crate::runtime::mode::Mode;
use crate::runtime::semver::Version;

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
    /// The package's name: its key in the SCR, a usable file-name component
    /// (see [`MAX_PACKAGE_NAME`]; letters, digits, `-`, `.`; starts with a letter or
    /// a digit; never `_`).
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

/// The longest package name accepted, in bytes: every file name derived from it
/// (`zz-skyhook-<name>-tuning.conf`, `.<that>.skyhook-tmp.<pid>.<random>`) stays
/// well under the 255-byte limit of a file name.
pub const MAX_PACKAGE_NAME: usize = 63;

/// Why `name` cannot be a package name, `None` when it can.
fn package_name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        Some("the package name is empty".into())
    } else if name.len() > MAX_PACKAGE_NAME {
        Some("the package name is longer than 63 bytes".into())
    } else if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
    {
        Some("the package name may hold only letters, digits, '-' and '.'".into())
    } else if !name.as_bytes()[0].is_ascii_alphanumeric() {
        Some(format!(
            "the package name {name:?} must start with a letter or a digit (so never '.' or '..')"
        ))
    } else {
        None
    }
}

impl ResourceId {
    /// Parses `<resource-id>_<package-name>_<package-version>`.
    pub fn parse(value: &str) -> Result<Self> {
        let bad = |why: &str| {
            Error::input(format!(
                "SKYHOOK_RESOURCE_ID={} is malformed: {why} \
                 (expected <resource-id>_<package-name>_<package-version>, e.g. scr-uid_tuning_2.0.0)",
                excerpt(value)
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
        if let Some(why) = package_name_problem(package) {
            return Err(bad(&why));
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
    /// Reads the context from the process environment and checks that `SKYHOOK_DIR`
    /// is a readable directory (see [`check_skyhook_dir`]). A value that is not
    /// UTF-8 is read lossily, so that it is reported rather than taken as unset.
    pub fn from_env(mode: Mode) -> Result<Self> {
        let ctx = Self::from_vars(mode, |name| {
            std::env::var_os(name).map(|v| v.to_string_lossy().into_owned())
        })?;
        check_skyhook_dir(&ctx.skyhook_dir)?;
        Ok(ctx)
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
                     (when running by hand, set it as the agent would: see PACKAGE_LIFECYCLE.md, \
                     \"Environment of a step\")"
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
            problems.push(format!(
                "SKYHOOK_DIR={} must be an absolute path",
                excerpt(&dir.to_string_lossy())
            ));
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

/// Checks that `dir`, the copy dir, is a directory this step can read. A missing
/// copy dir is bad input, never "no configMap keys": read as an empty configMap,
/// config would take back everything the package set.
pub fn check_skyhook_dir(dir: &Path) -> Result<()> {
    let why = match std::fs::read_dir(dir) {
        Ok(_) => return Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => "does not exist".to_string(),
        Err(e) if e.raw_os_error() == Some(nix::libc::ENOTDIR) => "is not a directory".to_string(),
        Err(e) => format!("cannot be read ({e})"),
    };
    Err(Error::input(format!(
        "SKYHOOK_DIR={} {why}; it must be the package's copy dir, which the agent creates and \
         fills before every step. Nothing on the node was changed",
        excerpt(&dir.to_string_lossy())
    )))
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
            ("scr_._1.0.0", "name \".\" must start with a letter or a digit"),
            ("scr_.._1.0.0", "name \"..\" must start with a letter or a digit"),
            ("scr_-x_1.0.0", "name \"-x\" must start with a letter or a digit"),
            ("scr_x/y_1.0.0", "letters, digits"),
        ] {
            let e = ResourceId::parse(bad).unwrap_err().to_string();
            assert!(e.contains(why), "{bad}: {e}");
            assert!(e.contains(bad), "the message names the value: {e}");
        }
        let long = format!("scr_{}_1.0.0", "a".repeat(300));
        let e = ResourceId::parse(&long).unwrap_err().to_string();
        assert!(e.contains("longer than 63 bytes") && e.contains("(310 bytes)"), "{e}");
        assert!(e.len() < 400, "the value is quoted as an excerpt: {e}");
        let name = "a".repeat(MAX_PACKAGE_NAME);
        assert_eq!(ResourceId::parse(&format!("scr_{name}_1.0.0")).unwrap().package, name);
    }

    #[test]
    fn the_copy_dir_must_be_a_readable_directory() {
        let d = tempfile::tempdir().unwrap();
        assert!(check_skyhook_dir(d.path()).is_ok());
        std::fs::write(d.path().join("file"), "").unwrap();
        for (dir, why) in [
            (d.path().join("nonexistent"), "does not exist"),
            (d.path().join("file"), "is not a directory"),
        ] {
            let e = check_skyhook_dir(&dir).unwrap_err();
            assert_eq!(e.exit_code(), 2);
            let msg = e.to_string();
            assert!(
                msg.contains(&format!("SKYHOOK_DIR=\"{}\" {why}", dir.display())),
                "{msg}"
            );
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

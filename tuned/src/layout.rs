// SPDX-License-Identifier: Apache-2.0
//! Which tuned the node runs and where it looks for profiles.
//!
//! tuned 2.23.0 (June 2024) moved profiles from `/usr/lib/tuned/<name>` and
//! `/etc/tuned/<name>` to `/usr/lib/tuned/profiles/<name>` and
//! `/etc/tuned/profiles/<name>`, and added the `profile_dirs` option of
//! `/etc/tuned/tuned-main.conf` (tuned's own consts.py and spec changelog). Older
//! tuned never reads `/etc/tuned/profiles`, newer tuned never reads `/etc/tuned/<name>`,
//! so custom profiles go to the directory the installed tuned actually reads.
//!
//! The version alone does not tell: tuned's own packaging builds RHEL < 10 (tuned
//! 2.24.1 and later included) with the old directories, rewriting the constants of
//! its Python package (`consts.py`: `USER_PROFILES_DIR`, `SYSTEM_PROFILES_DIR`; before
//! 2.23 `LOAD_DIRECTORIES`) and the commented `profile_dirs` default of
//! `tuned-main.conf` at install. So the directories are, in this order: the
//! `profile_dirs` option that `tuned-main.conf` sets; the installed tuned's
//! `consts.py`; the commented default of its `tuned-main.conf`; the default of the
//! version.

use std::fmt;
use std::path::{Path, PathBuf};

use skyhook_core::host::command::Cmd;
use skyhook_core::os::pkgmgr::{PackageManager, Retry};
use skyhook_core::{Error, Host, Result, Step};

use crate::conf;

/// tuned's global configuration file.
pub const MAIN_CONF: &str = "/etc/tuned/tuned-main.conf";

/// The first tuned that reads profiles from `…/profiles/` and knows `profile_dirs`.
pub const PROFILES_SUBDIR_SINCE: TunedVersion = TunedVersion { major: 2, minor: 23 };

/// The first tuned whose `tuned-adm profile` takes several profiles and merges them
/// (tuned 2.1.0, December 2012: `nargs="+"` in tuned-adm, the loader merging the
/// names in order); every distribution this package supports ships a later one.
pub const MULTIPLE_PROFILES_SINCE: TunedVersion = TunedVersion { major: 2, minor: 1 };

/// Where a distribution installs Python packages (tuned's `consts.py` is below one).
const PYTHON_LIBS: &[&str] = &["/usr/lib", "/usr/lib64", "/usr/local/lib"];

/// A tuned release, major and minor (the patch level changes nothing here).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct TunedVersion {
    /// Major version.
    pub major: u32,
    /// Minor version.
    pub minor: u32,
}

impl fmt::Display for TunedVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

impl TunedVersion {
    /// Reads `2.24` from `2.24.0`, `2.21.0-1ubuntu1`, `1:2.24.0-1.el9` (epoch allowed).
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        let text = text.split_once(':').map_or(text, |(_, rest)| rest);
        let mut parts = text.split(|c: char| !c.is_ascii_digit());
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next()?.parse().ok()?;
        Some(TunedVersion { major, minor })
    }
}

/// The installed tuned: its version as printed, and where it reads profiles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tuned {
    /// The version as the node reports it (`2.21.0`).
    pub version_text: String,
    /// The version, parsed.
    pub version: TunedVersion,
    /// The profile directories, lowest priority first (tuned searches them in reverse).
    pub dirs: Vec<PathBuf>,
    /// Where custom profiles are deployed: the highest-priority directory.
    pub user_dir: PathBuf,
    /// How the directories were chosen, for messages.
    pub dirs_source: String,
}

impl Tuned {
    /// The profile directories as one line for messages (`/usr/lib/tuned, /etc/tuned`).
    pub fn dirs_text(&self) -> String {
        self.dirs
            .iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Asks the node: `tuned --version`, falling back to the package manager's record
    /// (none on a distribution of neither family).
    pub fn detect(step: &Step) -> Result<Self> {
        let host = &step.host;
        let (text, version) = match version_from_binary(host) {
            Ok(found) => found,
            Err(why) => version_from_package(step).ok_or_else(|| {
                Error::action(format!(
                    "cannot tell which tuned this node runs ({why}); tuned must be installed before config: \
                     check that this package's apply (or upgrade) step succeeded on this node"
                ))
            })?,
        };
        let main_conf = host.read_to_string(MAIN_CONF)?.unwrap_or_default();
        let consts = installed_consts(host)?;
        Ok(Self::with(text, version, &main_conf, consts.as_ref()))
    }

    /// The layout for tuned `version` with tuned-main.conf text `main_conf` and the
    /// installed tuned's `consts.py` (its path and text), when found.
    pub fn with(
        version_text: String,
        version: TunedVersion,
        main_conf: &str,
        consts: Option<&(PathBuf, String)>,
    ) -> Self {
        let knows_profile_dirs = version >= PROFILES_SUBDIR_SINCE;
        let configured = knows_profile_dirs
            .then(|| conf::main_conf_profile_dirs(main_conf))
            .flatten();
        let built = consts.and_then(|(path, text)| consts_profile_dirs(text).map(|d| (d, path)));
        let commented = knows_profile_dirs
            .then(|| conf::main_conf_default_profile_dirs(main_conf))
            .flatten();
        let (dirs, dirs_source) = match (configured, built, commented) {
            (Some(dirs), _, _) => (dirs, format!("profile_dirs in {MAIN_CONF}")),
            (None, Some((dirs, path)), _) => (dirs, format!("the installed tuned's build, {}", path.display())),
            (None, None, Some(dirs)) => (dirs, format!("the commented profile_dirs default in {MAIN_CONF}")),
            (None, None, None) if knows_profile_dirs => (
                vec!["/usr/lib/tuned/profiles".into(), "/etc/tuned/profiles".into()],
                format!("the default of tuned ≥ {PROFILES_SUBDIR_SINCE}"),
            ),
            (None, None, None) => (
                vec!["/usr/lib/tuned".into(), "/etc/tuned".into()],
                format!("the default of tuned < {PROFILES_SUBDIR_SINCE}"),
            ),
        };
        let user_dir = dirs.last().cloned().unwrap_or_else(|| PathBuf::from("/etc/tuned"));
        Tuned {
            version_text,
            version,
            dirs,
            user_dir,
            dirs_source,
        }
    }

    /// Where the custom profile `name` is deployed.
    pub fn profile_file(&self, name: &str) -> PathBuf {
        self.user_dir.join(name).join("tuned.conf")
    }

    /// The profile file of `name` in every directory, highest priority first.
    pub fn candidates<'a>(&'a self, name: &'a str) -> impl Iterator<Item = PathBuf> + 'a {
        self.dirs.iter().rev().map(move |d| d.join(name).join("tuned.conf"))
    }

    /// The other layout's user directory (`/etc/tuned` ↔ `/etc/tuned/profiles`), where
    /// the bash package or an older tuned may have left copies.
    pub fn legacy_dirs() -> [&'static Path; 2] {
        [Path::new("/etc/tuned"), Path::new("/etc/tuned/profiles")]
    }
}

/// The profile directories a tuned build uses, lowest priority first, from its
/// `consts.py`: `SYSTEM_PROFILES_DIR` and `USER_PROFILES_DIR` (tuned ≥ 2.23), or
/// `LOAD_DIRECTORIES` (older tuned).
pub fn consts_profile_dirs(text: &str) -> Option<Vec<PathBuf>> {
    let value = |name: &str| {
        text.lines().find_map(|l| {
            let (k, v) = l.split_once('=')?;
            (k.trim() == name).then(|| v.trim().to_string())
        })
    };
    let quoted = |v: &str| -> Vec<PathBuf> {
        v.split(['"', '\''])
            .skip(1)
            .step_by(2)
            .filter(|d| d.starts_with('/'))
            .map(PathBuf::from)
            .collect()
    };
    if let (Some(system), Some(user)) = (value("SYSTEM_PROFILES_DIR"), value("USER_PROFILES_DIR")) {
        let dirs: Vec<PathBuf> = quoted(&system).into_iter().chain(quoted(&user)).collect();
        return (dirs.len() == 2).then_some(dirs);
    }
    let dirs = quoted(&value("LOAD_DIRECTORIES")?);
    (!dirs.is_empty()).then_some(dirs)
}

/// The installed tuned's `consts.py` (path and text): below `python3*/site-packages`
/// (RHEL-like) or `python3*/dist-packages` (Debian-like) of the system's libraries.
fn installed_consts(host: &Host) -> Result<Option<(PathBuf, String)>> {
    for lib in PYTHON_LIBS {
        let mut pythons = host.list_dir(lib)?;
        pythons.retain(|n| n.starts_with("python3"));
        pythons.sort();
        for python in pythons.iter().rev() {
            for packages in ["site-packages", "dist-packages"] {
                let path = Path::new(lib).join(python).join(packages).join("tuned/consts.py");
                if let Some(text) = host.read_to_string(&path)? {
                    return Ok(Some((path, text)));
                }
            }
        }
    }
    Ok(None)
}

fn version_from_binary(host: &Host) -> std::result::Result<(String, TunedVersion), String> {
    let out = host
        .run(&Cmd::new("tuned").arg("--version"))
        .map_err(|e| e.to_string())?;
    if !out.success() {
        return Err(format!("`tuned --version` failed ({})", out.status_text()));
    }
    let text = format!("{}{}", out.stdout, out.stderr);
    let word = text.split_whitespace().find(|w| TunedVersion::parse(w).is_some());
    match word {
        Some(w) => Ok((w.to_string(), TunedVersion::parse(w).expect("checked"))),
        None => Err(format!(
            "`tuned --version` printed {:?}, which holds no version",
            text.trim()
        )),
    }
}

fn version_from_package(step: &Step) -> Option<(String, TunedVersion)> {
    let pm = PackageManager::detect(&step.host, step.family().ok()?, Retry::default()).ok()?;
    let text = pm.installed_version("tuned").ok()??;
    let version = TunedVersion::parse(&text)?;
    log::warn!("`tuned --version` did not answer; using the installed package's version {text}");
    Some((text, version))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_versions_as_tools_print_them() {
        for (text, major, minor) in [
            ("2.21.0", 2, 21),
            ("2.24.1-1ubuntu1", 2, 24),
            ("1:2.24.0-1.el9", 2, 24),
            ("3.0", 3, 0),
        ] {
            assert_eq!(TunedVersion::parse(text), Some(TunedVersion { major, minor }), "{text}");
        }
        assert_eq!(TunedVersion::parse("tuned"), None);
        assert_eq!(TunedVersion::parse("2"), None);
        assert!(TunedVersion { major: 2, minor: 9 } < TunedVersion { major: 2, minor: 24 });
    }

    #[test]
    fn chooses_the_profile_directories_tuned_reads() {
        let old = Tuned::with(
            "2.21.0".into(),
            TunedVersion { major: 2, minor: 21 },
            "profile_dirs = /x\n",
            None,
        );
        assert_eq!(
            old.user_dir,
            PathBuf::from("/etc/tuned"),
            "profile_dirs is unknown before 2.23"
        );
        assert_eq!(old.profile_file("p"), PathBuf::from("/etc/tuned/p/tuned.conf"));
        let new = Tuned::with("2.24.0".into(), TunedVersion { major: 2, minor: 24 }, "", None);
        assert_eq!(new.profile_file("p"), PathBuf::from("/etc/tuned/profiles/p/tuned.conf"));
        assert_eq!(
            new.candidates("balanced").collect::<Vec<_>>(),
            [
                PathBuf::from("/etc/tuned/profiles/balanced/tuned.conf"),
                PathBuf::from("/usr/lib/tuned/profiles/balanced/tuned.conf")
            ]
        );
        let custom = Tuned::with(
            "2.25.0".into(),
            TunedVersion { major: 2, minor: 25 },
            "profile_dirs = /usr/lib/tuned/profiles,/var/lib/mine\n",
            None,
        );
        assert_eq!(custom.user_dir, PathBuf::from("/var/lib/mine"));
    }

    #[test]
    fn a_rhel_9_build_of_a_new_tuned_keeps_the_old_directories() {
        // tuned.spec: %if 0%{?rhel} && 0%{?rhel} < 10 → user profiles in /etc/tuned;
        // the Makefile rewrites consts.py and the commented default in tuned-main.conf.
        let consts = (
            PathBuf::from("/usr/lib/python3.9/site-packages/tuned/consts.py"),
            "USER_PROFILES_DIR = \"/etc/tuned\"\nSYSTEM_PROFILES_DIR = \"/usr/lib/tuned\"\n".to_string(),
        );
        let v = TunedVersion { major: 2, minor: 24 };
        let rhel9 = Tuned::with("2.24.1".into(), v, "", Some(&consts));
        assert_eq!(rhel9.user_dir, PathBuf::from("/etc/tuned"));
        assert_eq!(
            rhel9.dirs,
            [PathBuf::from("/usr/lib/tuned"), PathBuf::from("/etc/tuned")]
        );
        assert!(
            rhel9.dirs_source.contains("python3.9/site-packages"),
            "{}",
            rhel9.dirs_source
        );
        let main = "# profile_dirs = /usr/lib/tuned,/etc/tuned\n";
        let commented = Tuned::with("2.24.1".into(), v, main, None);
        assert_eq!(
            commented.user_dir,
            PathBuf::from("/etc/tuned"),
            "the build's commented default"
        );
        let set = Tuned::with(
            "2.24.1".into(),
            v,
            "profile_dirs = /usr/lib/tuned,/srv/p\n",
            Some(&consts),
        );
        assert_eq!(set.user_dir, PathBuf::from("/srv/p"), "an explicit profile_dirs wins");
        let old = "LOAD_DIRECTORIES = [\"/usr/lib/tuned\", \"/etc/tuned\"]\n";
        assert_eq!(
            consts_profile_dirs(old).unwrap(),
            [PathBuf::from("/usr/lib/tuned"), PathBuf::from("/etc/tuned")]
        );
        assert_eq!(consts_profile_dirs("X = 1\n"), None);
    }
}

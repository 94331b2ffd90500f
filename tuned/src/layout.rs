// SPDX-License-Identifier: Apache-2.0
//! Which tuned the node runs and where it looks for profiles.
//!
//! tuned 2.23.0 (June 2024) moved profiles from `/usr/lib/tuned/<name>` and
//! `/etc/tuned/<name>` to `/usr/lib/tuned/profiles/<name>` and
//! `/etc/tuned/profiles/<name>`, and added the `profile_dirs` option of
//! `/etc/tuned/tuned-main.conf` (tuned's own consts.py and spec changelog). Older
//! tuned never reads `/etc/tuned/profiles`, newer tuned never reads `/etc/tuned/<name>`,
//! so custom profiles go to the directory the installed tuned actually reads.

use std::fmt;
use std::path::{Path, PathBuf};

use skyhook_core::command::Cmd;
use skyhook_core::pkgmgr::{PackageManager, Retry};
use skyhook_core::{Error, Host, Result};

use crate::conf;

/// tuned's global configuration file.
pub const MAIN_CONF: &str = "/etc/tuned/tuned-main.conf";

/// The first tuned that reads profiles from `…/profiles/` and knows `profile_dirs`.
pub const PROFILES_SUBDIR_SINCE: TunedVersion = TunedVersion { major: 2, minor: 23 };

/// The first tuned this package accepts several profiles in `tuned_profile` for
/// (the bash package's rule, kept for compatibility).
pub const MULTIPLE_PROFILES_SINCE: TunedVersion = TunedVersion { major: 2, minor: 24 };

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
    /// Asks the node: `tuned --version`, falling back to the package manager's record.
    pub fn detect(host: &Host) -> Result<Self> {
        let (text, version) = match version_from_binary(host) {
            Ok(found) => found,
            Err(why) => version_from_package(host).ok_or_else(|| {
                Error::action(format!(
                    "cannot tell which tuned this node runs ({why}); tuned must be installed before config: \
                     check that this package's apply (or upgrade) step succeeded on this node"
                ))
            })?,
        };
        let main_conf = host.read_to_string(MAIN_CONF)?.unwrap_or_default();
        Ok(Self::with(text, version, &main_conf))
    }

    /// The layout for tuned `version` with tuned-main.conf text `main_conf`.
    pub fn with(version_text: String, version: TunedVersion, main_conf: &str) -> Self {
        let configured = (version >= PROFILES_SUBDIR_SINCE)
            .then(|| conf::main_conf_profile_dirs(main_conf))
            .flatten();
        let (dirs, dirs_source) = match configured {
            Some(dirs) => (dirs, format!("profile_dirs in {MAIN_CONF}")),
            None if version >= PROFILES_SUBDIR_SINCE => (
                vec!["/usr/lib/tuned/profiles".into(), "/etc/tuned/profiles".into()],
                format!("the default of tuned ≥ {PROFILES_SUBDIR_SINCE}"),
            ),
            None => (
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

fn version_from_package(host: &Host) -> Option<(String, TunedVersion)> {
    let family = skyhook_core::distro::OsRelease::read(host).ok()?.family().ok()?;
    let pm = PackageManager::detect(host, family, Retry::default()).ok()?;
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
        );
        assert_eq!(
            old.user_dir,
            PathBuf::from("/etc/tuned"),
            "profile_dirs is unknown before 2.23"
        );
        assert_eq!(old.profile_file("p"), PathBuf::from("/etc/tuned/p/tuned.conf"));
        let new = Tuned::with("2.24.0".into(), TunedVersion { major: 2, minor: 24 }, "");
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
        );
        assert_eq!(custom.user_dir, PathBuf::from("/var/lib/mine"));
    }
}

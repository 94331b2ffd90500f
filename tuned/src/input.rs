// SPDX-License-Identifier: Apache-2.0
//! What the configMap asks for, read and validated on its own (the node comes in
//! [`crate::plan`]).
//!
//! Keys (kept from the bash package):
//! - `tuned_profile`: one profile name, or several separated by whitespace;
//! - `<name>_script`: a helper script, deployed 0755 as `/etc/tuned/scripts/<name>`
//!   with a link `/etc/tuned/scripts/<name>_script` (the path the bash package wrote);
//! - any other key: a custom profile, deployed as `<user profile dir>/<key>/tuned.conf`.
//!
//! Validation happens in two passes: [`Request::parse`] needs only the configMap (key
//! names, UTF-8, tuned's INI format, profile names); [`Request::plan`] needs the node
//! (tuned's version and directories, profiles and scripts already there, what an
//! earlier run deployed and this run removes).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use skyhook_core::error::{bad_line, excerpt};
use skyhook_core::{ConfigMaps, Error, Result};

use crate::conf::{self, Conf};

/// Validates the configMap offline, with the parsers config uses (the entry point
/// of `skyhook-pkg lint`): `Err(Error::Input)` lists every problem.
pub fn validate(configmaps: &ConfigMaps) -> Result<()> {
    Request::parse(configmaps).map(|_| ())
}

/// The configMap key naming the profile(s) to activate.
pub const PROFILE_KEY: &str = "tuned_profile";
/// The suffix that makes a configMap key a helper script.
pub const SCRIPT_SUFFIX: &str = "_script";
/// Where helper scripts are deployed.
pub const SCRIPTS_DIR: &str = "/etc/tuned/scripts";

/// Names under `/etc/tuned` that belong to tuned itself: a custom profile may not take them.
const RESERVED: &[&str] = &[
    "profiles",
    "scripts",
    "recommend.d",
    "active_profile",
    "profile_mode",
    "post_loaded_profile",
    "tuned-main.conf",
    "bootcmdline",
    "recommend.conf",
    "ppd.conf",
    "ppd_base_profile",
];

/// A custom profile from the configMap.
#[derive(Debug, Clone)]
pub struct ProfileKey {
    /// The key, which is the profile name.
    pub name: String,
    /// The profile text, verbatim.
    pub content: Vec<u8>,
    /// The profile, parsed.
    pub conf: Conf,
}

/// A helper script from the configMap.
#[derive(Debug, Clone)]
pub struct ScriptKey {
    /// The key (`ai_init_script`).
    pub key: String,
    /// The script's file name (`ai_init`; the key itself for a key that is only `_script`).
    pub name: String,
    /// The script, verbatim.
    pub content: Vec<u8>,
}

impl ScriptKey {
    /// The deployed file.
    pub fn file(&self) -> PathBuf {
        Path::new(SCRIPTS_DIR).join(&self.name)
    }

    /// The link at the key's own name, pointing at the file (none when they coincide).
    pub fn link(&self) -> Option<PathBuf> {
        (self.key != self.name).then(|| Path::new(SCRIPTS_DIR).join(&self.key))
    }
}

/// The configMap, parsed and checked on its own.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// The profiles to activate, in order; `None` when `tuned_profile` is absent.
    pub active: Option<Vec<String>>,
    /// The value of `tuned_profile` as written (for messages).
    pub active_text: String,
    /// The custom profiles, by name.
    pub profiles: Vec<ProfileKey>,
    /// The helper scripts.
    pub scripts: Vec<ScriptKey>,
    /// Profile keys that could not be parsed (already reported; they count as present
    /// so that nothing else is reported about them).
    pub broken: Vec<String>,
    /// Further files to deploy (0644), by host path: never from the configMap, only
    /// from a package that drives tuned as a library ([`crate::engine::run`]).
    pub files: BTreeMap<PathBuf, Vec<u8>>,
}

/// The longest profile or script name accepted: one file-name component (Linux's
/// NAME_MAX is 255 bytes).
pub const MAX_NAME_BYTES: usize = 255;

/// Why `name` is not usable as one profile or script file name, if it is not: tuned's
/// characters (letters, digits, `_`, `.`, `-`), not starting with `-` (tuned-adm would
/// read an option) or `.` (`.`, `..` and hidden files), at most [`MAX_NAME_BYTES`].
pub fn name_problem(name: &str) -> Option<String> {
    if name.len() > MAX_NAME_BYTES {
        return Some(format!(
            "the name is {} bytes long; a file name holds at most {MAX_NAME_BYTES}",
            name.len()
        ));
    }
    if !conf::is_safe_profile_name(name) {
        return Some("a name may hold only letters, digits, '_', '.' and '-' (tuned ignores other names)".into());
    }
    if name.starts_with('-') {
        return Some("a name must not start with '-' (tuned-adm would read it as an option)".into());
    }
    if name.starts_with('.') {
        return Some("a name must not start with '.' ('.', '..' and hidden files are no usable file names)".into());
    }
    None
}

fn key_problem(key: &str) -> Option<String> {
    if let Some(why) = name_problem(key) {
        return Some(why);
    }
    if RESERVED.contains(&key) {
        return Some(format!(
            "{key:?} is a name tuned itself uses under /etc/tuned; choose another profile name"
        ));
    }
    None
}

impl Request {
    /// Reads and checks the configMap; every problem is listed.
    pub fn parse(configmaps: &ConfigMaps) -> Result<Self> {
        let (request, problems) = Self::read(configmaps)?;
        if problems.is_empty() {
            Ok(request)
        } else {
            Err(Error::Input(problems))
        }
    }

    /// Reads the configMap: the usable part, and every problem found (an `Err` only for
    /// failures other than bad input).
    pub fn read(configmaps: &ConfigMaps) -> Result<(Self, Vec<String>)> {
        let mut problems = Vec::new();
        let mut request = Request::default();
        for (key, raw) in configmaps.iter() {
            let script = key.strip_suffix(SCRIPT_SUFFIX);
            // Scripts are deployed byte for byte; profiles and tuned_profile are text.
            let text = match script.map_or_else(|| configmaps.text(key), |_| Ok(None)) {
                Ok(t) => t.unwrap_or_default(),
                Err(Error::Input(mut p)) => {
                    if key != PROFILE_KEY {
                        request.broken.push(key.to_string());
                    }
                    problems.append(&mut p);
                    continue;
                }
                Err(e) => return Err(e),
            };
            if key == PROFILE_KEY {
                request.active_text = text.to_string();
                match parse_active(text) {
                    Ok(names) => request.active = Some(names),
                    Err(mut p) => problems.append(&mut p),
                }
            } else if let Some(name) = script {
                match script_key(key, name, raw) {
                    Ok(s) => request.scripts.push(s),
                    Err(problem) => problems.push(problem),
                }
            } else if let Some(why) = key_problem(key) {
                problems.push(format!("configMap key {key:?}: not usable as a profile: {why}"));
            } else {
                match profile_key(key, text, raw) {
                    Ok(p) => request.profiles.push(p),
                    Err(mut p) => {
                        request.broken.push(key.to_string());
                        problems.append(&mut p);
                    }
                }
            }
        }
        let mut seen: BTreeMap<PathBuf, &str> = BTreeMap::new();
        for s in &request.scripts {
            for path in std::iter::once(s.file()).chain(s.link()) {
                if let Some(other) = seen.insert(path.clone(), &s.key) {
                    problems.push(format!(
                        "configMap keys {other:?} and {:?} would both deploy {}; rename one of them",
                        s.key,
                        path.display()
                    ));
                }
            }
        }
        if problems.is_empty() && request.active.is_none() && !configmaps.contains(PROFILE_KEY) {
            log::warn!(
                "the configMap has no {PROFILE_KEY:?} key: profiles and scripts are deployed, \
                 the active tuned profile is left as it is"
            );
        }
        Ok((request, problems))
    }

    /// The profile named `name` in this configMap.
    pub fn profile(&self, name: &str) -> Option<&ProfileKey> {
        self.profiles.iter().find(|p| p.name == name)
    }
}

/// The script key `key` (`name` is the key without its suffix).
fn script_key(key: &str, name: &str, raw: &[u8]) -> std::result::Result<ScriptKey, String> {
    let name = if name.is_empty() { key } else { name };
    if let Some(why) = name_problem(name) {
        return Err(format!(
            "configMap key {key:?}: the script name {name:?} (the key without {SCRIPT_SUFFIX:?}) \
             is not a usable file name in {SCRIPTS_DIR}: {why}"
        ));
    }
    if !raw.starts_with(b"#!") {
        log::warn!(
            "configMap key {key:?}: the script does not start with '#!'; tuned runs it directly, \
             so it needs an interpreter line such as #!/bin/bash"
        );
    }
    Ok(ScriptKey {
        key: key.to_string(),
        name: name.to_string(),
        content: raw.to_vec(),
    })
}

/// The custom profile key `key` with its text, parsed; its format errors otherwise.
fn profile_key(key: &str, text: &str, raw: &[u8]) -> std::result::Result<ProfileKey, Vec<String>> {
    match Conf::parse(text) {
        Ok(conf) => {
            let problems: Vec<String> = conf
                .boot_line_options()
                .filter_map(|o| {
                    conf::boot_line_problem(&o.value)
                        .map(|why| bad_line(key, o.line, &format!("{}={}", o.name, o.value), why))
                })
                .collect();
            if !problems.is_empty() {
                return Err(problems);
            }
            Ok(ProfileKey {
                name: key.to_string(),
                content: raw.to_vec(),
                conf,
            })
        }
        Err(errors) => Err(errors
            .into_iter()
            .map(|e| {
                bad_line(
                    key,
                    e.line,
                    &e.text,
                    format!("{} (tuned.conf format, see tuned.conf(5))", e.reason),
                )
            })
            .collect()),
    }
}

/// The line (1-based) and text of the first line of `text` holding the word `word`.
pub(crate) fn line_of<'t>(text: &'t str, word: &str) -> (usize, &'t str) {
    text.lines()
        .enumerate()
        .find(|(_, l)| l.split_whitespace().any(|w| w == word))
        .map(|(i, l)| (i + 1, l.trim()))
        .unwrap_or((1, text.trim()))
}

fn parse_active(text: &str) -> std::result::Result<Vec<String>, Vec<String>> {
    let names: Vec<String> = text.split_whitespace().map(str::to_string).collect();
    if names.is_empty() {
        return Err(vec![format!(
            "configMap key {PROFILE_KEY:?} is empty: name the profile to activate \
             (e.g. throughput-performance), or remove the key to leave the active profile alone"
        )]);
    }
    let mut problems = Vec::new();
    for n in &names {
        if let Some(why) = name_problem(n) {
            let (line, shown) = line_of(text, n);
            problems.push(bad_line(
                PROFILE_KEY,
                line,
                shown,
                format!("{} is not a valid profile name: {why}", excerpt(n)),
            ));
        }
    }
    let mut unique = BTreeSet::new();
    for n in &names {
        if !unique.insert(n) {
            let (line, shown) = line_of(text, n);
            problems.push(bad_line(
                PROFILE_KEY,
                line,
                shown,
                format!("profile {n:?} is listed twice"),
            ));
        }
    }
    if problems.is_empty() { Ok(names) } else { Err(problems) }
}

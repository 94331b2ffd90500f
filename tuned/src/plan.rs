// SPDX-License-Identifier: Apache-2.0
//! What the configMap asks for, validated in full before anything changes.
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

use skyhook_core::error::bad_line;
use skyhook_core::{ConfigMaps, Error, Host, Result};

use crate::conf::{self, Conf, Include};
use crate::layout::{MULTIPLE_PROFILES_SINCE, Tuned};

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
}

/// One file this package deploys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// A regular file with its content and permission bits.
    File {
        /// The content.
        content: Vec<u8>,
        /// The permission bits.
        mode: u32,
    },
    /// A symbolic link to a file in the same directory.
    Link {
        /// The link's target, relative to its directory.
        target: PathBuf,
    },
}

/// The node as this config must leave it.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// Every deployed path and what it holds.
    pub items: BTreeMap<PathBuf, Item>,
    /// The profiles to activate, `None` when `tuned_profile` is absent.
    pub active: Option<Vec<String>>,
    /// The bootloader options of the active profiles and everything they include (in
    /// load order), then those of every deployed profile: a change here needs a reboot.
    pub bootloader: Vec<String>,
}

fn key_problem(key: &str) -> Option<String> {
    if !conf::is_safe_profile_name(key) {
        return Some(
            "a profile name may hold only letters, digits, '_', '.' and '-' (tuned ignores other names)".into(),
        );
    }
    if key.starts_with('-') {
        return Some("a profile name must not start with '-' (tuned-adm would read it as an option)".into());
    }
    if key.starts_with('.') {
        return Some("a profile name must not start with '.' (a hidden directory)".into());
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
                let name = if name.is_empty() { key } else { name };
                if name == "." || name == ".." {
                    problems.push(format!(
                        "configMap key {key:?}: the script name {name:?} (the key without {SCRIPT_SUFFIX:?}) \
                         is not a usable file name"
                    ));
                    continue;
                }
                if !raw.starts_with(b"#!") {
                    log::warn!(
                        "configMap key {key:?}: the script does not start with '#!'; tuned runs it directly, \
                         so it needs an interpreter line such as #!/bin/bash"
                    );
                }
                request.scripts.push(ScriptKey {
                    key: key.to_string(),
                    name: name.to_string(),
                    content: raw.to_vec(),
                });
            } else {
                if let Some(why) = key_problem(key) {
                    problems.push(format!("configMap key {key:?}: not usable as a profile: {why}"));
                    continue;
                }
                match Conf::parse(text) {
                    Ok(conf) => request.profiles.push(ProfileKey {
                        name: key.to_string(),
                        content: raw.to_vec(),
                        conf,
                    }),
                    Err(errors) => {
                        request.broken.push(key.to_string());
                        problems.extend(errors.into_iter().map(|e| {
                            bad_line(
                                key,
                                e.line,
                                &e.text,
                                format!("{} (tuned.conf format, see tuned.conf(5))", e.reason),
                            )
                        }))
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

    /// Every file and link this request deploys with tuned's layout `tuned`.
    pub fn items(&self, tuned: &Tuned) -> BTreeMap<PathBuf, Item> {
        let mut items = BTreeMap::new();
        for p in &self.profiles {
            items.insert(
                tuned.profile_file(&p.name),
                Item::File {
                    content: p.content.clone(),
                    mode: 0o644,
                },
            );
        }
        for s in &self.scripts {
            items.insert(
                s.file(),
                Item::File {
                    content: s.content.clone(),
                    mode: 0o755,
                },
            );
            if let Some(link) = s.link() {
                items.insert(
                    link,
                    Item::Link {
                        target: s.name.clone().into(),
                    },
                );
            }
        }
        items
    }

    /// Checks the request against the node and lays out every file; `removed` are the
    /// paths an earlier run deployed that this run takes away (they do not count as
    /// present). Every problem is listed.
    pub fn plan(&self, host: &Host, tuned: &Tuned, previously: &BTreeSet<PathBuf>) -> Result<Plan> {
        let mut problems = Vec::new();
        let mut plan = Plan {
            items: self.items(tuned),
            active: self.active.clone(),
            bootloader: Vec::new(),
        };
        for p in &self.profiles {
            let dir = tuned.user_dir.join(&p.name);
            if host.exists(&dir) && !host.is_dir(&dir) {
                problems.push(format!(
                    "configMap key {:?}: the profile would be deployed in {}, but a file of that name exists \
                     there; choose another profile name",
                    p.name,
                    dir.display()
                ));
            }
        }
        let removed: BTreeSet<&PathBuf> = previously.iter().filter(|p| !plan.items.contains_key(*p)).collect();
        let present = |path: &Path| {
            plan.items.contains_key(path) || (host.exists(path) && !removed.contains(&path.to_path_buf()))
        };
        let find =
            |name: &str, skip: Option<&Path>| tuned.candidates(name).find(|c| Some(c.as_path()) != skip && present(c));

        if let Some(names) = &self.active {
            if names.len() > 1 && tuned.version < MULTIPLE_PROFILES_SINCE {
                problems.push(bad_line(
                    PROFILE_KEY,
                    1,
                    self.active_text.trim(),
                    format!(
                        "{} profiles are listed, and activating several profiles at once needs tuned {MULTIPLE_PROFILES_SINCE} \
                         or newer; this node has tuned {}. Workarounds: (1) add one profile to the configMap whose \
                         [main] section includes the others (include={}) and name only that profile in {PROFILE_KEY}; \
                         (2) install tuned {MULTIPLE_PROFILES_SINCE} or newer (a distribution release that ships it, \
                         e.g. Ubuntu 25.04 or later)",
                        names.len(),
                        tuned.version_text,
                        names.join(",")
                    ),
                ));
            }
            for name in names {
                if find(name, None).is_none() {
                    let (line, shown) = line_of(&self.active_text, name);
                    problems.push(bad_line(
                        PROFILE_KEY,
                        line,
                        shown,
                        format!(
                            "profile {name:?} exists neither in this configMap nor on the node (searched {})",
                            describe_dirs(tuned)
                        ),
                    ));
                }
            }
        }

        for p in &self.profiles {
            let own = tuned.profile_file(&p.name);
            if let Some(include) = p.conf.include() {
                for inc in conf::include_names(&include.value) {
                    match inc {
                        Include::Required(name) => {
                            if !conf::is_safe_profile_name(&name) {
                                problems.push(bad_line(
                                    &p.name,
                                    include.line,
                                    &format!("include={}", include.value),
                                    format!("{name:?} is not a valid profile name"),
                                ));
                            } else if find(&name, Some(&own)).is_none() {
                                problems.push(bad_line(
                                    &p.name,
                                    include.line,
                                    &format!("include={}", include.value),
                                    format!(
                                        "the included profile {name:?} exists neither in this configMap nor on the \
                                         node (searched {}); add it as a configMap key or fix the name",
                                        describe_dirs(tuned)
                                    ),
                                ));
                            }
                        }
                        Include::Optional(_) => {}
                        Include::Dynamic(name) => log::warn!(
                            "configMap key {:?} line {}: include {name:?} uses tuned variables or functions; \
                             tuned resolves it when it loads the profile, so it is not checked here",
                            p.name,
                            include.line
                        ),
                    }
                }
            }
            let dir = own.parent().unwrap_or(Path::new("/"));
            for (section, opt) in p.conf.scripts() {
                let Some(path) = conf::script_path(&opt.value, dir) else {
                    log::warn!(
                        "configMap key {:?} line {}: script {:?} uses tuned variables or functions; not checked",
                        p.name,
                        opt.line,
                        opt.value
                    );
                    continue;
                };
                let text = format!("{}={}", opt.name, opt.value);
                let why = match plan.items.get(&path) {
                    Some(Item::File { .. } | Item::Link { .. }) => None,
                    None if !present(&path) && path.parent() == Some(Path::new(SCRIPTS_DIR)) => Some(format!(
                        "the [{}] script {} does not exist on the node and no {SCRIPT_SUFFIX} key deploys it \
                         (a configMap key named {:?} would)",
                        section.name,
                        path.display(),
                        format!(
                            "{}{SCRIPT_SUFFIX}",
                            path.file_name().unwrap_or_default().to_string_lossy()
                        )
                    )),
                    None if !present(&path) => Some(format!(
                        "the [{}] script {} does not exist on the node (only scripts in {SCRIPTS_DIR} can be \
                         deployed from the configMap, as <name>{SCRIPT_SUFFIX} keys)",
                        section.name,
                        path.display()
                    )),
                    None if host.mode(&path)?.is_some_and(|m| m & 0o111 == 0) => Some(format!(
                        "the [{}] script {} exists but is not executable; tuned runs it directly",
                        section.name,
                        path.display()
                    )),
                    None => None,
                };
                if let Some(why) = why {
                    problems.push(bad_line(&p.name, opt.line, &text, why));
                }
            }
        }
        if !problems.is_empty() {
            return Err(Error::Input(problems));
        }
        plan.bootloader = self.bootloader_chain(host, tuned, &present);
        for p in &self.profiles {
            plan.bootloader.extend(
                p.conf
                    .bootloader()
                    .into_iter()
                    .map(|o| format!("deployed {} {o}", p.name)),
            );
        }
        Ok(plan)
    }

    /// The bootloader options of the active profiles and their includes, in the order
    /// tuned loads them (includes first, each file once).
    fn bootloader_chain(&self, host: &Host, tuned: &Tuned, present: &dyn Fn(&Path) -> bool) -> Vec<String> {
        let mut out = Vec::new();
        let mut seen = Vec::new();
        for name in self.active.iter().flatten() {
            self.collect(host, tuned, present, name, &mut seen, &mut out);
        }
        out
    }

    fn collect(
        &self,
        host: &Host,
        tuned: &Tuned,
        present: &dyn Fn(&Path) -> bool,
        name: &str,
        seen: &mut Vec<PathBuf>,
        out: &mut Vec<String>,
    ) {
        let Some(file) = tuned.candidates(name).find(|c| !seen.contains(c) && present(c)) else {
            return;
        };
        seen.push(file.clone());
        let conf = match self.profile(name).filter(|_| file == tuned.profile_file(name)) {
            Some(p) => p.conf.clone(),
            None => match host.read_to_string(&file).ok().flatten().map(|t| Conf::parse(&t)) {
                Some(Ok(c)) => c,
                _ => return,
            },
        };
        if let Some(include) = conf.include() {
            for inc in conf::include_names(&include.value) {
                if let Include::Required(n) | Include::Optional(n) = inc {
                    self.collect(host, tuned, present, &n, seen, out);
                }
            }
        }
        out.extend(conf.bootloader().into_iter().map(|o| format!("active {name} {o}")));
    }
}

fn describe_dirs(tuned: &Tuned) -> String {
    tuned
        .dirs
        .iter()
        .rev()
        .map(|d| format!("{}/<name>/tuned.conf", d.display()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The line (1-based) and text of the first line of `text` holding the word `word`.
fn line_of<'t>(text: &'t str, word: &str) -> (usize, &'t str) {
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
        if !conf::is_safe_profile_name(n) || n.starts_with('-') {
            let (line, shown) = line_of(text, n);
            problems.push(bad_line(
                PROFILE_KEY,
                line,
                shown,
                format!("{n:?} is not a valid profile name (letters, digits, '_', '.', '-'; not starting with '-')"),
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

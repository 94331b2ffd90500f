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

use skyhook_core::error::{bad_line, excerpt};
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
    /// Further files to deploy (0644), by host path: never from the configMap, only
    /// from a package that drives tuned as a library ([`crate::config_with`]).
    pub files: BTreeMap<PathBuf, Vec<u8>>,
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
    /// The custom profiles' directories, the package's own (see [`Request::profile_dirs`]).
    pub profile_dirs: BTreeSet<PathBuf>,
    /// The profiles to activate, `None` when `tuned_profile` is absent.
    pub active: Option<Vec<String>>,
    /// The bootloader options of the active profiles and everything they include (in
    /// load order), then those of every deployed profile: a change here needs a reboot.
    pub bootloader: Vec<String>,
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
        for (path, content) in &self.files {
            items.insert(
                path.clone(),
                Item::File {
                    content: content.clone(),
                    mode: 0o644,
                },
            );
        }
        items
    }

    /// The custom profiles' directories (`<user dir>/<name>`): each is the package's
    /// own, removed with its profile once empty.
    pub fn profile_dirs(&self, tuned: &Tuned) -> BTreeSet<PathBuf> {
        self.profiles.iter().map(|p| tuned.user_dir.join(&p.name)).collect()
    }

    /// Checks the request against the node and lays out every file; `previously` are
    /// the paths an earlier run deployed (those this run takes away do not count as
    /// present). Every problem is listed.
    pub fn plan(&self, host: &Host, tuned: &Tuned, previously: &BTreeSet<PathBuf>) -> Result<Plan> {
        let items = self.items(tuned);
        let view = View::new(host, tuned, &items, previously);
        let mut problems = self.profile_dir_problems(&view);
        problems.extend(self.active_problems(&view));
        for p in &self.profiles {
            problems.extend(include_problems(p, &view));
            problems.extend(script_problems(p, &view)?);
        }
        if !problems.is_empty() {
            return Err(Error::Input(problems));
        }
        let mut bootloader = self.bootloader_chain(&view);
        for p in &self.profiles {
            bootloader.extend(
                p.conf
                    .bootloader()
                    .into_iter()
                    .map(|o| format!("deployed {} {o}", p.name)),
            );
        }
        Ok(Plan {
            profile_dirs: self.profile_dirs(tuned),
            items,
            active: self.active.clone(),
            bootloader,
        })
    }

    /// A custom profile whose directory would be a file already on the node.
    fn profile_dir_problems(&self, view: &View) -> Vec<String> {
        self.profiles
            .iter()
            .map(|p| view.tuned.user_dir.join(&p.name))
            .zip(&self.profiles)
            .filter(|(dir, _)| view.host.exists(dir) && !view.host.is_dir(dir))
            .map(|(dir, p)| {
                format!(
                    "configMap key {:?}: the profile would be deployed in {}, but a file of that name exists \
                     there; choose another profile name",
                    p.name,
                    dir.display()
                )
            })
            .collect()
    }

    /// `tuned_profile`: several profiles only where tuned merges them, each one found.
    fn active_problems(&self, view: &View) -> Vec<String> {
        let mut problems = Vec::new();
        let Some(names) = &self.active else {
            return problems;
        };
        let tuned = view.tuned;
        if names.len() > 1 && tuned.version < MULTIPLE_PROFILES_SINCE {
            problems.push(bad_line(
                PROFILE_KEY,
                1,
                self.active_text.trim(),
                format!(
                    "{} profiles are listed, and activating several profiles at once needs tuned {MULTIPLE_PROFILES_SINCE} \
                     or newer; this node has tuned {}. Workarounds: (1) add one profile to the configMap whose \
                     [main] section includes the others (include={}) and name only that profile in {PROFILE_KEY}; \
                     (2) install tuned {MULTIPLE_PROFILES_SINCE} or newer",
                    names.len(),
                    tuned.version_text,
                    names.join(",")
                ),
            ));
        }
        for name in names.iter().filter(|n| view.find(n, None).is_none()) {
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
        problems
    }

    /// The bootloader options of the active profiles and their includes, in the order
    /// tuned loads them (includes first, each file once).
    fn bootloader_chain(&self, view: &View) -> Vec<String> {
        let mut out = Vec::new();
        let mut seen = Vec::new();
        for name in self.active.iter().flatten() {
            self.collect(view, name, &mut seen, &mut out);
        }
        out
    }

    fn collect(&self, view: &View, name: &str, seen: &mut Vec<PathBuf>, out: &mut Vec<String>) {
        let tuned = view.tuned;
        let Some(file) = tuned.candidates(name).find(|c| !seen.contains(c) && view.present(c)) else {
            return;
        };
        seen.push(file.clone());
        let conf = match self.profile(name).filter(|_| file == tuned.profile_file(name)) {
            Some(p) => p.conf.clone(),
            None => match view.host.read_to_string(&file).ok().flatten().map(|t| Conf::parse(&t)) {
                Some(Ok(c)) => c,
                _ => return,
            },
        };
        if let Some(include) = conf.include() {
            for inc in conf::include_names(&include.value) {
                if let Include::Required(n) | Include::Optional(n) = inc {
                    self.collect(view, &n, seen, out);
                }
            }
        }
        out.extend(conf.bootloader().into_iter().map(|o| format!("active {name} {o}")));
    }
}

/// The node as this config leaves it, for the checks: what it deploys, and what is
/// there already and stays.
struct View<'a> {
    host: &'a Host,
    tuned: &'a Tuned,
    items: &'a BTreeMap<PathBuf, Item>,
    /// Paths an earlier run deployed that this run takes away.
    removed: BTreeSet<&'a PathBuf>,
}

impl<'a> View<'a> {
    fn new(
        host: &'a Host,
        tuned: &'a Tuned,
        items: &'a BTreeMap<PathBuf, Item>,
        previously: &'a BTreeSet<PathBuf>,
    ) -> Self {
        let removed = previously.iter().filter(|p| !items.contains_key(*p)).collect();
        View {
            host,
            tuned,
            items,
            removed,
        }
    }

    /// Whether `path` exists once this config is deployed.
    fn present(&self, path: &Path) -> bool {
        self.items.contains_key(path) || (self.host.exists(path) && !self.removed.contains(&path.to_path_buf()))
    }

    /// The profile file tuned would load for `name` (other than `skip`).
    fn find(&self, name: &str, skip: Option<&Path>) -> Option<PathBuf> {
        self.tuned
            .candidates(name)
            .find(|c| Some(c.as_path()) != skip && self.present(c))
    }
}

/// A profile's `include=`: every required profile exists (in the configMap or on the node).
fn include_problems(p: &ProfileKey, view: &View) -> Vec<String> {
    let mut problems = Vec::new();
    let Some(include) = p.conf.include() else {
        return problems;
    };
    let own = view.tuned.profile_file(&p.name);
    let shown = format!("include={}", include.value);
    for inc in conf::include_names(&include.value) {
        match inc {
            Include::Required(name) | Include::Optional(name) if name_problem(&name).is_some() => {
                problems.push(bad_line(
                    &p.name,
                    include.line,
                    &shown,
                    format!(
                        "{} is not a valid profile name: {}",
                        excerpt(&name),
                        name_problem(&name).unwrap_or_default()
                    ),
                ))
            }
            Include::Required(name) if view.find(&name, Some(&own)).is_none() => problems.push(bad_line(
                &p.name,
                include.line,
                &shown,
                format!(
                    "the included profile {name:?} exists neither in this configMap nor on the node (searched {}); \
                     add it as a configMap key or fix the name",
                    describe_dirs(view.tuned)
                ),
            )),
            Include::Required(_) | Include::Optional(_) => {}
            Include::Dynamic(name) => log::warn!(
                "configMap key {:?} line {}: include {name:?} uses tuned variables or functions; \
                 tuned resolves it when it loads the profile, so it is not checked here",
                p.name,
                include.line
            ),
        }
    }
    problems
}

/// A profile's `[script]` options: each script deployed by this config, or on the node
/// and executable.
fn script_problems(p: &ProfileKey, view: &View) -> Result<Vec<String>> {
    let mut problems = Vec::new();
    let own = view.tuned.profile_file(&p.name);
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
        if let Some(why) = script_problem(&section.name, &path, view)? {
            problems.push(bad_line(&p.name, opt.line, &format!("{}={}", opt.name, opt.value), why));
        }
    }
    Ok(problems)
}

/// Why the `[section]` script `path` cannot run, if it cannot.
fn script_problem(section: &str, path: &Path, view: &View) -> Result<Option<String>> {
    let shown = path.display();
    Ok(if view.items.contains_key(path) {
        None
    } else if !view.present(path) && path.parent() == Some(Path::new(SCRIPTS_DIR)) {
        Some(format!(
            "the [{section}] script {shown} does not exist on the node and no {SCRIPT_SUFFIX} key deploys it \
             (a configMap key named {:?} would)",
            format!(
                "{}{SCRIPT_SUFFIX}",
                path.file_name().unwrap_or_default().to_string_lossy()
            )
        ))
    } else if !view.present(path) {
        Some(format!(
            "the [{section}] script {shown} does not exist on the node (only scripts in {SCRIPTS_DIR} can be \
             deployed from the configMap, as <name>{SCRIPT_SUFFIX} keys)"
        ))
    } else if view.host.mode(path)?.is_some_and(|m| m & 0o111 == 0) {
        Some(format!(
            "the [{section}] script {shown} exists but is not executable; tuned runs it directly"
        ))
    } else {
        None
    })
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

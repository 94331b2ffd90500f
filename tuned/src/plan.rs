// SPDX-License-Identifier: Apache-2.0
//! The node as this config must leave it: the request ([`crate::input`]) checked
//! against the node (tuned's version and directories, profiles and scripts already
//! there, what an earlier run deployed and this run removes), every problem listed
//! before anything changes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use skyhook_core::error::{bad_line, excerpt};
use skyhook_core::{Error, Host, Result};

use crate::conf::{self, Conf, Include};
use crate::input::{PROFILE_KEY, ProfileKey, Request, SCRIPT_SUFFIX, SCRIPTS_DIR, line_of, name_problem};
use crate::layout::{MULTIPLE_PROFILES_SINCE, Tuned};

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

impl Request {
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

fn describe_dirs(tuned: &Tuned) -> String {
    tuned
        .dirs
        .iter()
        .rev()
        .map(|d| format!("{}/<name>/tuned.conf", d.display()))
        .collect::<Vec<_>>()
        .join(", ")
}

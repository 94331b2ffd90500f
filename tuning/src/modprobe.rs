// SPDX-License-Identifier: Apache-2.0
//! configMap key `modprobe.conf`: `blacklist`, `install` and `options` lines of
//! modprobe.d(5), written to a modprobe.d file of this entry
//! (`/etc/modprobe.d/zz-skyhook-<name>-tuning.conf`, or a preset's own file, see
//! [`PresetFile`]).
//!
//! Every line is checked against what kmod's configuration parser
//! (libkmod-config.c) does with it, so that nothing is silently ignored or changed
//! on the node: kmod skips empty lines and lines whose first byte is `#`, joins a
//! line ending in a backslash with the next and drops a backslash before any other
//! character, takes the first word as the command (splitting on spaces and tabs)
//! and ignores, with an error, a line whose command it does not know; `blacklist`
//! reads one module name and ignores the rest of the line; `install` and `options`
//! take the rest of the line verbatim; a `-` in a module name is a `_`. For a
//! module, the first `install` line kmod reads wins (files are read in file-name
//! order over `/etc/modprobe.d`, `/run/modprobe.d`, `/usr/local/lib/modprobe.d`,
//! `/usr/lib/modprobe.d` and `/lib/modprobe.d`; a name in an earlier directory hides
//! the same name in a later one), which [`overrides`] looks for.
//!
//! A module the value keeps out (an `install` line whose command does nothing, or a
//! `blacklist` line) is one that must not be loaded: [`crate::modules`] unloads it
//! and checks it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use skyhook_core::error::{bad_line, excerpt};
use skyhook_core::{Error, Host, Result};

use crate::paths::{FileKind, Managed, Paths};
use crate::state::State;

/// The configMap key.
pub const KEY: &str = "modprobe.conf";

/// The modprobe.d directories kmod reads, in its order of precedence.
pub const DIRS: [&str; 5] = [
    "/etc/modprobe.d",
    "/run/modprobe.d",
    "/usr/local/lib/modprobe.d",
    "/usr/lib/modprobe.d",
    "/lib/modprobe.d",
];

/// The longest module name the kernel keeps: `MODULE_NAME_LEN` (64 bytes less an
/// unsigned long, on the 64-bit kernels this package runs on) less its NUL.
pub const MAX_NAME: usize = 55;

/// `install` commands that load nothing: the module is kept out.
pub const REFUSALS: [&str; 4] = ["/bin/false", "/usr/bin/false", "/bin/true", "/usr/bin/true"];

/// A preset's own modprobe.d file, in place of this entry's
/// `zz-skyhook-<name>-tuning.conf`: written at `path` holding exactly `text` (no
/// header), taken over when the node already has it with exactly that content
/// (as the package the preset replaces left it) and refused, before any change,
/// when it holds anything else this package did not write.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct PresetFile {
    /// Where it lives.
    pub path: PathBuf,
    /// Its whole content.
    pub text: String,
}

/// What a line asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// `blacklist <module>`: the module's own aliases are ignored.
    Blacklist,
    /// `install <module> <command>`: the command runs instead of loading it.
    Install(String),
    /// `options <module> <parameters>`: parameters given when it is loaded.
    Options(String),
}

/// One line of the value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// Its number (1-based).
    pub line: usize,
    /// The line as written.
    pub text: String,
    /// The module, as the kernel names it (`-` read as `_`).
    pub module: String,
    /// What it asks for.
    pub command: Command,
}

impl Line {
    /// Whether the line keeps its module out: a `blacklist` line, or an `install`
    /// line whose command is one of [`REFUSALS`] (modprobe runs it instead of
    /// loading the module).
    pub fn keeps_out(&self) -> bool {
        match &self.command {
            Command::Blacklist => true,
            Command::Install(cmd) => REFUSALS.contains(&cmd.trim()),
            Command::Options(_) => false,
        }
    }
}

/// A parsed `modprobe.conf` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModprobeConf {
    /// The value as given (written verbatim).
    pub text: String,
    /// Its commands, in order.
    pub lines: Vec<Line>,
}

impl ModprobeConf {
    /// Parses the value; every bad line is reported.
    pub fn parse(text: &str) -> std::result::Result<Self, Vec<String>> {
        let mut problems = Vec::new();
        let mut lines: Vec<Line> = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let n = i + 1;
            match parse_line(raw) {
                Ok(None) => {}
                Ok(Some((module, command))) => {
                    if let Command::Install(_) = command
                        && let Some(first) = lines
                            .iter()
                            .find(|l| l.module == module && matches!(l.command, Command::Install(_)))
                    {
                        problems.push(bad_line(
                            KEY,
                            n,
                            raw,
                            format!(
                                "a second install line for {module} (the first is line {}): kmod uses only the \
                                 first one it reads; keep one",
                                first.line
                            ),
                        ));
                        continue;
                    }
                    lines.push(Line {
                        line: n,
                        text: raw.to_string(),
                        module,
                        command,
                    });
                }
                Err(why) => problems.push(bad_line(KEY, n, raw, why)),
            }
        }
        if problems.is_empty() {
            Ok(ModprobeConf {
                text: text.to_string(),
                lines,
            })
        } else {
            Err(problems)
        }
    }

    /// The file's content: the value verbatim, below the header unless the file is
    /// a preset's own ([`PresetFile`]), which holds exactly the value.
    pub fn render(&self, paths: &Paths) -> String {
        if paths.modprobe_preset.is_some() {
            let mut out = self.text.clone();
            if !out.is_empty() && !out.ends_with('\n') {
                out.push('\n');
            }
            return out;
        }
        paths.verbatim(KEY, &self.text)
    }

    /// The modules the value keeps out, each with the first line doing it.
    pub fn kept_out(&self) -> Vec<&Line> {
        let mut seen = BTreeSet::new();
        self.lines
            .iter()
            .filter(|l| l.keeps_out() && seen.insert(l.module.as_str()))
            .collect()
    }

    /// The modules the value gives options to.
    pub fn with_options(&self) -> BTreeSet<&str> {
        self.lines
            .iter()
            .filter(|l| matches!(l.command, Command::Options(_)))
            .map(|l| l.module.as_str())
            .collect()
    }
}

/// A module name as the kernel and kmod compare it: `-` read as `_`.
pub fn normalize(name: &str) -> String {
    name.replace('-', "_")
}

/// Why `name` is not a module name this key accepts, if it is not.
fn check_module(name: &str) -> std::result::Result<(), String> {
    let valid = !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if valid {
        Ok(())
    } else {
        Err(format!(
            "{} is not a module name: ASCII letters, digits, '_' and '-', at most {MAX_NAME} bytes (the kernel's \
             limit); patterns such as '*' are not accepted here: name each module",
            excerpt(name)
        ))
    }
}

/// One line of the value: `None` for a blank or comment line, else the module and
/// what is asked for it, or why kmod would not do what the line says.
fn parse_line(raw: &str) -> std::result::Result<Option<(String, Command)>, String> {
    if raw.starts_with('#') || raw.trim_matches([' ', '\t']).is_empty() {
        return Ok(None);
    }
    if let Some(c) = raw.chars().find(|&c| c.is_control() && c != '\t') {
        return Err(format!(
            "the line holds the control character U+{:04X}; modprobe.d lines are text",
            c as u32
        ));
    }
    if raw.contains('\\') {
        return Err(
            "the line holds a backslash: kmod joins a line ending in one with the next and drops one \
                    before any other character, so the line would not mean what it says; write it without"
                .to_string(),
        );
    }
    let mut words = raw.split([' ', '\t']).filter(|w| !w.is_empty());
    let cmd = words.next().unwrap_or_default();
    if cmd.starts_with('#') {
        return Err(
            "a comment must start in the first column: kmod reads this line as a command and rejects it".into(),
        );
    }
    if raw.contains('#') {
        return Err(
            "modprobe.d(5) has no comments after a command: kmod would pass the '#' and what follows on as \
                    part of the line; put the comment on a line of its own"
                .into(),
        );
    }
    let rest_after = |module: &str| -> String {
        let start = module.as_ptr() as usize - raw.as_ptr() as usize + module.len();
        raw[start..].trim_matches([' ', '\t']).to_string()
    };
    match cmd {
        "blacklist" => {
            let Some(module) = words.next() else {
                return Err("blacklist needs a module name: blacklist <module>".into());
            };
            check_module(module)?;
            if let Some(extra) = words.next() {
                return Err(format!(
                    "blacklist takes one module name; kmod ignores the rest of the line ({}): write one blacklist \
                     line per module",
                    excerpt(extra)
                ));
            }
            Ok(Some((normalize(module), Command::Blacklist)))
        }
        "install" | "options" => {
            let Some(module) = words.next() else {
                return Err(format!("{cmd} needs a module name and what follows it"));
            };
            check_module(module)?;
            let rest = rest_after(module);
            if rest.is_empty() {
                return Err(match cmd {
                    "install" => format!("install {module} needs a command to run instead of loading it"),
                    _ => format!("options {module} needs at least one parameter (name=value)"),
                });
            }
            let command = match cmd {
                "install" => Command::Install(rest),
                _ => Command::Options(rest),
            };
            Ok(Some((normalize(module), command)))
        }
        "alias" | "remove" | "softdep" | "weakdep" => Err(format!(
            "{cmd} lines are not taken by this key: it takes blacklist, install and options lines"
        )),
        "include" | "config" => Err(format!(
            "{cmd} is obsolete: kmod ignores it with an error; it takes blacklist, install and options lines"
        )),
        other => Err(format!(
            "{} is not a modprobe.d command (kmod would ignore the line with an error): the lines are \
             blacklist <module>, install <module> <command> and options <module> <parameters>",
            excerpt(other)
        )),
    }
}

/// This entry's modprobe.d file on the node, when it is there and is this entry's:
/// the entry's own name, or a preset's file holding exactly the preset's content
/// (what the package it replaces wrote). Used to take it over ([`crate::legacy`]).
pub fn on_node(host: &Host, paths: &Paths) -> Result<Option<Managed>> {
    let path = paths.modprobe();
    let ours = match &paths.modprobe_preset {
        None => host.exists(&path),
        Some(p) => host.read(&path)?.is_some_and(|b| b == p.text.as_bytes()),
    };
    Ok(ours.then_some(Managed {
        path,
        kind: FileKind::Modprobe,
    }))
}

/// Refuses, before any change, to write a preset's file over one this package did
/// not write and does not hold the preset's exact content (see [`PresetFile`]).
pub fn refuse_foreign(host: &Host, paths: &Paths, state: &State) -> Result<()> {
    let Some(preset) = &paths.modprobe_preset else {
        return Ok(());
    };
    if state.footprint.files.contains(&preset.path) {
        return Ok(());
    }
    let Some(found) = host.read(&preset.path)? else {
        return Ok(());
    };
    Err(Error::action(format!(
        "{} is already there and was not written by {}: it holds {}, not exactly {}. It is left as it is, so that \
         an uninstall never removes a file someone else made; move it away (or make it hold exactly that line) \
         and run config again",
        preset.path.display(),
        paths.owner,
        excerpt(&String::from_utf8_lossy(&found)),
        excerpt(&preset.text)
    )))
}

/// An `install` line of another modprobe.d file that kmod reads before ours for a
/// module ours keeps out: it wins.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Override {
    /// The file.
    pub file: PathBuf,
    /// Its (first physical) line.
    pub line: usize,
    /// The module.
    pub module: String,
    /// The command it installs.
    pub command: String,
}

/// The `install` lines kmod reads before `ours` for the modules of `modules`:
/// files of [`DIRS`] whose names sort before `ours`'s (a file named like one in an
/// earlier directory is hidden, as kmod hides it), each read the way kmod reads it.
pub fn overrides(host: &Host, ours: &Path, modules: &BTreeSet<&str>) -> Result<Vec<Override>> {
    let Some(our_name) = ours.file_name().and_then(|n| n.to_str()) else {
        return Ok(Vec::new());
    };
    let mut files: BTreeMap<String, PathBuf> = BTreeMap::new();
    for dir in DIRS {
        for name in host.list_dir(dir)? {
            let is_conf = !name.starts_with('.') && (name.ends_with(".conf") || name.ends_with(".alias"));
            if is_conf && name.as_str() < our_name {
                files.entry(name.clone()).or_insert_with(|| Path::new(dir).join(&name));
            }
        }
    }
    let mut found = Vec::new();
    for file in files.values() {
        if !host.is_dir(file)
            && let Some(bytes) = host.read(file)?
        {
            found.extend(install_lines(&String::from_utf8_lossy(&bytes)).into_iter().filter_map(
                |(line, module, command)| {
                    modules.contains(module.as_str()).then(|| Override {
                        file: file.clone(),
                        line,
                        module,
                        command,
                    })
                },
            ));
        }
    }
    Ok(found)
}

/// The `install` lines of a modprobe.d file as kmod reads them: (first physical
/// line, module as the kernel names it, command).
fn install_lines(text: &str) -> Vec<(usize, String, String)> {
    let mut out = Vec::new();
    let mut logical = String::new();
    let mut start = 1;
    let mut chars = text.chars().peekable();
    let mut line = 1;
    let mut finish = |logical: &mut String, start: usize| {
        let mut words = logical.split([' ', '\t']).filter(|w| !w.is_empty());
        if !logical.starts_with('#')
            && words.next() == Some("install")
            && let Some(module) = words.next()
        {
            let at = module.as_ptr() as usize - logical.as_ptr() as usize + module.len();
            let command = logical[at..].trim_matches([' ', '\t']).to_string();
            if !command.is_empty() {
                out.push((start, normalize(module), command));
            }
        }
        logical.clear();
    };
    while let Some(c) = chars.next() {
        match c {
            '\n' => {
                line += 1;
                finish(&mut logical, start);
                start = line;
            }
            '\\' => match chars.next() {
                Some('\n') => line += 1,
                Some(other) => logical.push(other),
                None => {}
            },
            other => logical.push(other),
        }
    }
    if !logical.is_empty() {
        finish(&mut logical, start);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problems(text: &str) -> Vec<String> {
        ModprobeConf::parse(text).unwrap_err()
    }

    #[test]
    fn reads_blacklist_install_and_options_lines() {
        let c = ModprobeConf::parse(
            "# keep algif_aead out (CVE-2026-31431)\ninstall algif-aead /bin/false\n\nblacklist nouveau\n\
             options\tnvidia  NVreg_EnableGpuFirmware=0 x=\"a b\"\n   \t\n",
        )
        .unwrap();
        let got: Vec<(usize, &str, &Command)> = c
            .lines
            .iter()
            .map(|l| (l.line, l.module.as_str(), &l.command))
            .collect();
        assert_eq!(
            got,
            [
                (2, "algif_aead", &Command::Install("/bin/false".into())),
                (4, "nouveau", &Command::Blacklist),
                (
                    5,
                    "nvidia",
                    &Command::Options("NVreg_EnableGpuFirmware=0 x=\"a b\"".into())
                ),
            ]
        );
        let out: Vec<&str> = c.kept_out().iter().map(|l| l.module.as_str()).collect();
        assert_eq!(out, ["algif_aead", "nouveau"]);
        assert_eq!(c.with_options().into_iter().collect::<Vec<_>>(), ["nvidia"]);
    }

    #[test]
    fn only_commands_that_load_nothing_keep_a_module_out() {
        for (cmd, out) in [
            ("/bin/false", true),
            ("/usr/bin/true", true),
            ("/bin/true ", true),
            ("/sbin/modprobe --ignore-install x", false),
            ("/bin/false; modprobe x", false),
        ] {
            let c = ModprobeConf::parse(&format!("install x {cmd}\n")).unwrap();
            assert_eq!(c.kept_out().len(), usize::from(out), "{cmd}");
        }
    }

    #[test]
    fn lines_kmod_would_ignore_or_change_are_refused_naming_line_and_why() {
        for (text, why) in [
            ("blacklist\n", "blacklist needs a module name"),
            ("blacklist a b\n", "kmod ignores the rest of the line (\"b\")"),
            ("install x\n", "install x needs a command"),
            ("options x\n", "options x needs at least one parameter"),
            ("alias pci:v* x\n", "alias lines are not taken by this key"),
            ("softdep x pre: y\n", "softdep lines are not taken"),
            ("include /etc/other.conf\n", "include is obsolete"),
            ("blaclist x\n", "\"blaclist\" is not a modprobe.d command"),
            ("  # indented comment\n", "a comment must start in the first column"),
            ("blacklist x # why\n", "no comments after a command"),
            ("install x /bin/false \\\n", "holds a backslash"),
            ("options x a=\\b\n", "holds a backslash"),
            ("blacklist x\x1b[2J\n", "control character U+001B"),
            (
                "blacklist ../../etc/shadow\n",
                "\"../../etc/shadow\" is not a module name",
            ),
            ("blacklist algif_*\n", "not a module name"),
            ("blacklist x;reboot\n", "not a module name"),
            ("\u{feff}blacklist x\n", "is not a modprobe.d command"),
        ] {
            let p = problems(text);
            assert_eq!(p.len(), 1, "{text:?}: {p:#?}");
            assert!(p[0].starts_with("configMap key \"modprobe.conf\" line 1 ("), "{}", p[0]);
            assert!(p[0].contains(why), "{text:?}: {}", p[0]);
        }
        let long = format!("blacklist {}\n", "m".repeat(MAX_NAME + 1));
        assert!(problems(&long)[0].contains("at most 55 bytes"));
        assert!(ModprobeConf::parse(&format!("blacklist {}\n", "m".repeat(MAX_NAME))).is_ok());
    }

    #[test]
    fn a_second_install_line_for_a_module_is_refused() {
        let p = problems("install algif_aead /bin/false\ninstall algif-aead /bin/true\n");
        assert_eq!(p.len(), 1);
        assert!(
            p[0].contains("line 2") && p[0].contains("the first is line 1"),
            "{}",
            p[0]
        );
    }

    #[test]
    fn every_bad_line_is_listed() {
        assert_eq!(problems("bogus\nblacklist ok\nblacklist\n#fine\noptions x\n").len(), 3);
    }

    #[test]
    fn install_lines_are_read_as_kmod_reads_them() {
        let text = "# install a /bin/false\ninstall  b \\\n  /sbin/modprobe --ignore-install b\nblacklist c\n\
                    install d-e /bin/tr\\ue\ninstall f";
        assert_eq!(
            install_lines(text),
            [
                (2, "b".to_string(), "/sbin/modprobe --ignore-install b".to_string()),
                (5, "d_e".to_string(), "/bin/true".to_string()),
            ]
        );
    }
}

// SPDX-License-Identifier: Apache-2.0
//! `skyhook-pkg lint SCR.yaml…`: checks Skyhook resources against our packages,
//! offline, with the parsers the packages use on the node (each package's one
//! `validate` entry point), before a rollout. Every finding names the file, the
//! package entry, the key, its line and a bounded excerpt of the value:
//!
//! - configMap values a package would refuse, and keys it does not read;
//! - interrupts: spellings the SCR does not accept, configInterrupts keys matching no
//!   configMap key (the admission webhook rejects those), a change needing a reboot
//!   without one, a reboot where a cheaper interrupt does;
//! - uninstall: a package whose uninstall matters without `uninstall: {enabled: true}`;
//! - version: an entry whose version differs from the image tag or the package's;
//! - what a package warns of where the node decides (huge page sizes some node's
//!   kernel cannot register): warnings, which do not fail the run.
//!
//! Entries whose image is not one of our packages are skipped.

use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use skyhook_core::Error;
use skyhook_core::review::{Entry, Review};
use skyhook_core::runtime::interrupt::Interrupt;

use crate::agent::scr::{Scr, ScrEntry, key_matches, parse_interrupt};
use crate::console;
use crate::error::ToolError;
use crate::review::packages;

/// Output formats.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// One line per finding: `FILE:LINE: entry …`.
    #[default]
    Text,
    /// A JSON array of findings, for CI pipelines.
    Json,
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The SCR file.
    pub file: PathBuf,
    /// The package entry.
    pub entry: String,
    /// The key the finding is about (`configMap` key, `interrupt`, `version`, …).
    pub key: String,
    /// Its 1-based line in the file (0: not found).
    pub line: usize,
    /// A bounded excerpt of the value, as written (the text output quotes it).
    pub value: String,
    /// What is wrong and what to do.
    pub message: String,
    /// A warning: worth reading, but what it is about is decided on the node, so it
    /// does not fail the run.
    pub warning: bool,
}

impl Finding {
    fn to_json(&self) -> Value {
        json!({"file": self.file, "entry": self.entry, "key": self.key, "line": self.line,
               "value": self.value, "message": self.message,
               "severity": if self.warning { "warning" } else { "error" }})
    }
}

/// The package an entry's image names (the last part of its image name), if ours.
fn package_of(entry: &ScrEntry) -> Option<&'static dyn Review> {
    let name = entry.image_name().rsplit('/').next()?;
    packages::named(name)
}

/// What a package's configMap and env problems are: its own validation, then, for a
/// catalog package whose keys are each valid, the combination its catalog lacks.
fn problems(package: &dyn Review, entry: &Entry) -> Vec<String> {
    match package.validate(entry) {
        Ok(()) => combination_problem(package, entry).into_iter().collect(),
        Err(Error::Input(problems)) => problems,
        Err(e) => vec![e.to_string()],
    }
}

/// For a catalog package: the combination its catalog does not ship, if so.
fn combination_problem(package: &dyn Review, entry: &Entry) -> Option<String> {
    let (catalog, default_intent) = package.catalog()?;
    let request = entry.request(&default_intent);
    if !request.selections(catalog.as_ref()).is_empty() {
        return None;
    }
    let mut ships: Vec<String> = catalog
        .combinations()
        .iter()
        .filter(|s| request.accelerator == "auto" || s.accelerator == request.accelerator)
        .map(|s| {
            format!(
                "{} {}{}",
                s.accelerator,
                s.intent,
                s.service
                    .as_ref()
                    .map_or(String::new(), |v| format!(" with service {v}"))
            )
        })
        .collect();
    // Each combination once, whichever OS versions ship it.
    let mut seen = std::collections::BTreeSet::new();
    ships.retain(|s| seen.insert(s.clone()));
    Some(format!(
        "configMap keys \"accelerator\" {:?}, \"intent\" {:?}, \"service\" {:?}: {} ships no such combination; it ships: {}",
        request.accelerator,
        request.intent,
        request.service.unwrap_or("(none)"),
        catalog.package(),
        ships.join(", ")
    ))
}

/// Whether the first installation's need can be told from the entry: the package
/// says so, and a catalog package's configMap selects some combination.
fn first_install_knowable(package: &dyn Review, entry: &Entry) -> bool {
    package.first_install_knowable(entry)
        && package.catalog().is_none_or(|(catalog, default_intent)| {
            !entry.request(&default_intent).selections(catalog.as_ref()).is_empty()
        })
}

/// `skyhook-pkg lint`: true when no SCR has findings other than warnings. Every SCR is linted, those
/// that cannot be read reported and counted; findings are in the order of the files
/// given, then by line. `-` reads one SCR from standard input.
pub fn run(paths: &[PathBuf], format: Format) -> Result<bool, ToolError> {
    if paths.iter().filter(|p| is_stdin(p)).count() > 1 {
        return Err(ToolError::usage(
            "`-` (the SCR on standard input) is given more than once; standard input holds one SCR",
        ));
    }
    let mut findings: Vec<Finding> = Vec::new();
    let mut unreadable = Vec::new();
    for path in paths {
        match load(path) {
            Ok(scr) => findings.extend(sorted(lint(&scr))),
            Err(e) => unreadable.push(e),
        }
    }
    if unreadable.len() == paths.len() {
        // Nothing was linted: no findings to print, only why.
        return console::inputs_checked("SCR files", unreadable, paths.len()).map(|()| true);
    }
    match format {
        Format::Json => {
            let all: Vec<Value> = findings.iter().map(Finding::to_json).collect();
            outln!("{}", Value::Array(all));
        }
        Format::Text => {
            for f in &findings {
                outln!(
                    "{}:{}: entry {:?}, {} ({:?}): {}{}",
                    f.file.display(),
                    f.line,
                    f.entry,
                    f.key,
                    f.value,
                    if f.warning { "warning: " } else { "" },
                    f.message
                );
            }
            errln!(
                "{} finding(s) ({} warning(s)) in {} file(s)",
                findings.len(),
                findings.iter().filter(|f| f.warning).count(),
                paths.len() - unreadable.len()
            );
        }
    }
    console::inputs_checked("SCR files", unreadable, paths.len())?;
    Ok(findings.iter().all(|f| f.warning))
}

/// Whether `path` is `-`: standard input.
fn is_stdin(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// The SCR at `path`, or on standard input for `-` (named `<stdin>` in findings).
fn load(path: &Path) -> Result<Scr, ToolError> {
    if !is_stdin(path) {
        return Scr::load(path);
    }
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .map_err(|e| ToolError::io("read the SCR from standard input", path, e))?;
    Scr::parse(Path::new(STDIN_NAME), text)
}

/// The file name of findings in the SCR read from standard input.
const STDIN_NAME: &str = "<stdin>";

/// One SCR's findings by line (stable: findings of one line keep their order).
fn sorted(mut findings: Vec<Finding>) -> Vec<Finding> {
    findings.sort_by_key(|f| f.line);
    findings
}

/// Every finding of one SCR.
pub fn lint(scr: &Scr) -> Vec<Finding> {
    let mut findings = Vec::new();
    for (name, entry) in &scr.packages {
        let Some(package) = package_of(entry) else {
            errln!(
                "{}: entry {name:?}: image {:?} is not one of our packages; not checked",
                scr.path.display(),
                entry.image
            );
            continue;
        };
        let mut at = Report {
            scr,
            entry: name,
            findings: &mut findings,
        };
        let env = entry.env_pairs();
        let reviewed = Entry {
            config_map: &entry.config_map,
            env: &env,
        };
        check_version(&mut at, package, entry);
        check_configmap(&mut at, package, entry, &reviewed);
        check_warnings(&mut at, package, &reviewed);
        check_interrupts(&mut at, package, entry, &reviewed);
        if package.uninstall_matters(&reviewed) && !entry.uninstall_enabled() {
            at.add(
                &["uninstall"],
                "uninstall",
                "(not enabled)",
                "this package changes the node, and current operators uninstall it only with \
                 `uninstall: {enabled: true}` (removing the entry without it runs nothing on the nodes); add it",
            );
        }
    }
    findings
}

/// Where findings of one entry go.
struct Report<'a> {
    scr: &'a Scr,
    entry: &'a str,
    findings: &'a mut Vec<Finding>,
}

impl Report<'_> {
    fn add(&mut self, path: &[&str], key: &str, value: &str, message: impl Into<String>) {
        self.push(path, key, value, message.into(), false);
    }

    /// A finding that does not fail the run ([`Finding::warning`]).
    fn warn(&mut self, path: &[&str], key: &str, value: &str, message: impl Into<String>) {
        self.push(path, key, value, message.into(), true);
    }

    fn push(&mut self, path: &[&str], key: &str, value: &str, message: String, warning: bool) {
        self.findings.push(Finding {
            file: self.scr.path.clone(),
            entry: self.entry.to_string(),
            key: key.to_string(),
            line: self.scr.line_of(self.entry, path),
            value: excerpt(value),
            message,
            warning,
        });
    }
}

/// At most the first 60 characters of the value, trimmed, as written (quoting and
/// escaping is the output format's: the text output's `{:?}` keeps it on one line).
fn excerpt(value: &str) -> String {
    let value = value.trim();
    let mut short: String = value.chars().take(60).collect();
    if value.chars().count() > 60 {
        short.push('…');
    }
    short
}

fn check_version(at: &mut Report, package: &dyn Review, entry: &ScrEntry) {
    if let Some(tag) = entry.image_tag().filter(|t| *t != entry.version) {
        at.add(
            &["image"],
            "image",
            &entry.image,
            format!(
                "the image tag {tag:?} differs from the entry's version {:?}: the operator pulls the tag named by \
                 version; give the same string in both (or drop the tag)",
                entry.version
            ),
        );
    }
    let ours = package.version();
    if entry.version != ours {
        at.add(
            &["version"],
            "version",
            &entry.version,
            format!("this package's version is {ours:?}; the entry's version must be the same string"),
        );
    }
}

fn check_configmap(at: &mut Report, package: &dyn Review, entry: &ScrEntry, reviewed: &Entry) {
    for problem in problems(package, reviewed) {
        let key = entry
            .config_map
            .keys()
            .find(|k| problem.contains(&format!("{k:?}")))
            .cloned()
            .unwrap_or_else(|| "configMap".to_string());
        let value = entry.config_map.get(&key).map_or("", String::as_str);
        at.add(&["configMap", &key], &key, value, problem);
    }
}

/// What the package warns of where the node decides (huge page sizes some node's
/// kernel cannot register): findings that do not fail the run.
fn check_warnings(at: &mut Report, package: &dyn Review, entry: &Entry) {
    for (key, message) in package.warnings(entry) {
        let value = entry.config_map.get(&key).map_or("", String::as_str);
        at.warn(&["configMap", &key], &key, value, message);
    }
}

fn check_interrupts(at: &mut Report, package: &dyn Review, entry: &ScrEntry, reviewed: &Entry) {
    let declared = match entry.interrupt.as_ref().map(parse_interrupt).transpose() {
        Ok(d) => d,
        Err(why) => {
            let raw = entry.interrupt.as_ref().map(Value::to_string).unwrap_or_default();
            at.add(&["interrupt"], "interrupt", &raw, why.to_string());
            None
        }
    };
    let mut overall: Vec<Interrupt> = Vec::new();
    for (pattern, raw) in &entry.config_interrupts {
        if !entry.config_map.keys().any(|k| key_matches(pattern, k)) {
            at.add(
                &["configInterrupts", pattern],
                pattern,
                &raw.to_string(),
                "matches no configMap key: the admission webhook rejects the SCR (fix the key or remove it)",
            );
        }
        if let Err(why) = parse_interrupt(raw) {
            at.add(
                &["configInterrupts", pattern],
                pattern,
                &raw.to_string(),
                why.to_string(),
            );
        }
    }
    for key in entry.config_map.keys() {
        let Some(needed) = package.change_needs(key, reviewed) else {
            check_reboot_of_an_unknown_need(at, package, entry, key);
            continue;
        };
        if !package.is_change_only_key(key) {
            overall.push(needed.clone());
        }
        if package.is_hardware_key(key) {
            continue;
        }
        let given: Vec<Interrupt> = entry
            .config_interrupts
            .iter()
            .filter(|(p, _)| key_matches(p, key))
            .filter_map(|(_, raw)| parse_interrupt(raw).ok())
            .collect();
        check_key_interrupt(at, key, &entry.config_map[key], &needed, &given);
    }
    if !first_install_knowable(package, reviewed) {
        return;
    }
    let needed = Interrupt::covering(overall);
    match declared {
        Some(Interrupt::Reboot) if needed != Interrupt::Reboot => at.add(
            &["interrupt"],
            "interrupt",
            "reboot",
            format!(
                "no key of this configMap needs a reboot; {needed} covers the first installation \
                 (a reboot of a GPU node costs minutes of its time)"
            ),
        ),
        Some(d) if d.clone().combine(needed.clone()) != d => at.add(
            &["interrupt"],
            "interrupt",
            &d.to_string(),
            format!("the first installation needs {needed}, which the declared interrupt does not cover"),
        ),
        None if needed != Interrupt::NoOp => at.add(
            &["interrupt"],
            "interrupt",
            "(none)",
            format!("the first installation needs {needed}: declare it as the package's interrupt"),
        ),
        _ => {}
    }
}

/// A key whose need depends on the node, declared a reboot: names the cheaper interrupt.
fn check_reboot_of_an_unknown_need(at: &mut Report, package: &dyn Review, entry: &ScrEntry, key: &str) {
    let Some(cheaper) = package.cheaper_than_reboot(key) else {
        return;
    };
    let reboot = entry
        .config_interrupts
        .iter()
        .any(|(p, raw)| key_matches(p, key) && matches!(parse_interrupt(raw), Ok(Interrupt::Reboot)));
    if reboot {
        at.add(
            &["configInterrupts", key],
            key,
            "reboot",
            format!("a change of {key:?} needs no reboot: {cheaper} is enough (a reboot of a GPU node costs minutes of its time)"),
        );
    }
}

/// A configMap key's declared configInterrupts against what its change needs.
fn check_key_interrupt(at: &mut Report, key: &str, value: &str, needed: &Interrupt, given: &[Interrupt]) {
    let declared = Interrupt::covering(given.iter().cloned());
    if *needed == Interrupt::Reboot && declared != Interrupt::Reboot {
        at.add(
            &["configMap", key],
            key,
            value,
            format!(
                "a change of {key:?} changes the kernel command line and takes effect only after a reboot, \
                 and its configInterrupt is {declared}; add configInterrupts: {{{key}: {{type: reboot}}}}"
            ),
        );
    } else if declared == Interrupt::Reboot && *needed != Interrupt::Reboot {
        at.add(
            &["configInterrupts", key],
            key,
            "reboot",
            format!(
                "a change of {key:?} needs no reboot: {needed} is enough (a reboot of a GPU node costs minutes of its time)"
            ),
        );
    } else if declared.clone().combine(needed.clone()) != declared && !given.is_empty() {
        at.add(
            &["configInterrupts", key],
            key,
            &declared.to_string(),
            format!("a change of {key:?} needs {needed}, which the declared configInterrupt does not cover"),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The SCR examples (```yaml blocks holding `kind: Skyhook`) of a Markdown file.
    pub fn examples(markdown: &str) -> Vec<String> {
        let mut blocks = Vec::new();
        let mut current: Option<String> = None;
        for line in markdown.lines() {
            match (&mut current, line.trim_start()) {
                (None, l) if l.starts_with("```yaml") => current = Some(String::new()),
                (Some(block), l) if l.starts_with("```") => {
                    if block.contains("kind: Skyhook") {
                        blocks.push(std::mem::take(block));
                    }
                    current = None;
                }
                (Some(block), _) => {
                    block.push_str(line);
                    block.push('\n');
                }
                _ => {}
            }
        }
        blocks
    }

    /// Lints `text` as if read from `path` (tests and the README check).
    pub fn lint_text(path: &std::path::Path, text: &str) -> Result<Vec<Finding>, ToolError> {
        Ok(lint(&Scr::parse(path, text.to_string())?))
    }

    #[test]
    fn excerpts_are_bounded_and_unquoted() {
        assert_eq!(excerpt(" a\nb\n"), "a\nb");
        let long = "x".repeat(100);
        assert_eq!(excerpt(&long), format!("{}…", "x".repeat(60)));
    }

    #[test]
    fn examples_are_the_skyhook_yaml_blocks() {
        let md = "text\n```yaml\nkind: Skyhook\nspec: {}\n```\n```yaml\nkind: Pod\n```\n";
        assert_eq!(examples(md), ["kind: Skyhook\nspec: {}\n"]);
    }

    fn repo() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
    }

    #[test]
    fn the_readme_examples_lint_clean() {
        let mut count = 0;
        let readmes = std::iter::once("README.md".to_string()).chain(
            crate::review::packages::all()
                .into_iter()
                .map(|p| format!("{}/README.md", p.name())),
        );
        for readme in readmes {
            let text = std::fs::read_to_string(repo().join(&readme)).unwrap();
            for (i, example) in examples(&text).iter().enumerate() {
                let name = format!("{readme} example {}", i + 1);
                let mut findings = lint_text(std::path::Path::new(&name), example).unwrap();
                // Warnings are about what the node decides (a Grace chain's 512M pages).
                findings.retain(|f| !f.warning);
                assert!(findings.is_empty(), "{name}:\n{findings:#?}");
                count += 1;
            }
        }
        assert!(count >= 12, "only {count} examples found");
    }

    /// Each file of tests/lint/ is a broken SCR; its `# expect: ` lines are
    /// `key | part of the message` of findings it must produce.
    #[test]
    fn every_broken_scr_of_the_corpus_has_its_finding() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/lint");
        let mut files: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.path()).collect();
        files.sort();
        assert!(files.len() >= 10, "{files:?}");
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            let findings = lint_text(&file, &text).unwrap();
            let expected: Vec<&str> = text.lines().filter_map(|l| l.strip_prefix("# expect: ")).collect();
            assert!(!expected.is_empty(), "{}: no `# expect:` line", file.display());
            for e in expected {
                let (key, message) = e.split_once(" | ").unwrap();
                assert!(
                    findings
                        .iter()
                        .any(|f| f.key == key && f.message.contains(message) && f.line > 0),
                    "{}: no finding on {key:?} containing {message:?}:\n{findings:#?}",
                    file.display()
                );
            }
        }
    }
}

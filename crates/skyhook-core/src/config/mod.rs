// SPDX-License-Identifier: Apache-2.0
//! config.json, schema v1: the model, and the checks the tool applies after the JSON
//! schema (which the developer tool holds: `skyhook-pkg`'s `review::schema`): the
//! agent's load rules, then the step files on disk, then the version against the
//! crate's. Every problem is reported at once, each with its exact place
//! (`modes.config[0].returncodes`).

#[cfg(any(test, feature = "fixtures"))]
pub mod fixtures;

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::host::command::is_executable;
use crate::runtime::mode::Mode;
use crate::runtime::semver::Version;

/// A package's config.json.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PackageConfig {
    /// Always `v1`.
    pub schema_version: String,
    /// The package's name.
    pub package_name: String,
    /// The package's version (strict semver).
    pub package_version: String,
    /// configMap keys that must exist.
    pub expected_config_files: Vec<String>,
    /// Steps per mode, keyed by the agent's mode spelling.
    pub modes: BTreeMap<String, Vec<StepConfig>>,
}

/// One step of a mode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepConfig {
    /// The step's name (`^[a-zA-Z0-9_\-.]+$`).
    pub name: String,
    /// The executable, relative to `skyhook_dir`.
    pub path: String,
    /// Arguments (`env:NAME` is replaced by `$NAME` by the agent).
    pub arguments: Vec<String>,
    /// Exit codes that mean success.
    pub returncodes: Vec<i64>,
    /// Run on the host.
    pub on_host: bool,
    /// The step handles its own idempotence (run every time).
    pub idempotence: bool,
    /// An upgrade step (versions appended as arguments).
    pub upgrade_step: bool,
    /// Environment of the step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<BTreeMap<String, String>>,
}

impl PackageConfig {
    /// The steps of `mode` (empty when the mode is absent).
    pub fn steps(&self, mode: Mode) -> &[StepConfig] {
        self.modes.get(mode.as_str()).map(Vec::as_slice).unwrap_or(&[])
    }

    /// The modes that have at least one step, in lifecycle order.
    pub fn defined_modes(&self) -> Vec<Mode> {
        Mode::ALL.into_iter().filter(|m| !self.steps(*m).is_empty()).collect()
    }
}

/// One finding of the validation, with its place in config.json.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Where: `modes.config[0].returncodes`, or `(top level)`.
    pub location: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.location, self.message)
    }
}

/// Everything the validation found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Problems: the agent would refuse the package.
    pub errors: Vec<Finding>,
    /// Warnings: the agent would log them.
    pub warnings: Vec<Finding>,
}

impl Report {
    /// Whether no error was found.
    pub fn is_ok(&self) -> bool {
        self.errors.is_empty()
    }

    /// Adds an error found at `location` (a dotted place, `modes.config[0].name`).
    pub fn error(&mut self, location: impl Into<String>, message: impl Into<String>) {
        self.errors.push(Finding {
            location: location.into(),
            message: message.into(),
        });
    }

    fn warn(&mut self, location: impl Into<String>, message: impl Into<String>) {
        self.warnings.push(Finding {
            location: location.into(),
            message: message.into(),
        });
    }
}

/// Parses config.json text into the model; a syntax or type error is reported with
/// its line and column.
pub fn parse(text: &str) -> Result<PackageConfig, Report> {
    serde_json::from_str(text).map_err(|e| {
        let mut r = Report::default();
        r.error(format!("line {} column {}", e.line(), e.column()), e.to_string());
        r
    })
}

fn step_location(mode: &str, index: usize, field: &str) -> String {
    format!("modes.{mode}[{index}].{field}")
}

/// Applies the agent's load rules: at least one step; at least one action mode with
/// steps; every action mode with steps has steps in its check mode; an upgrade step
/// only in upgrade modes and without arguments; plus what the schema says, for a
/// model that did not go through it (semver, names, return codes).
pub fn check_rules(cfg: &PackageConfig, report: &mut Report) {
    if cfg.schema_version != "v1" {
        report.error(
            "schema_version",
            format!("{:?} is not supported; expected \"v1\"", cfg.schema_version),
        );
    }
    if let Err(e) = cfg.package_version.parse::<Version>() {
        report.error("package_version", e.to_string());
    }
    for (mode, steps) in &cfg.modes {
        let Ok(parsed) = mode.parse::<Mode>() else {
            report.error(format!("modes.{mode}"), format!("unknown mode {mode:?}"));
            continue;
        };
        if parsed.as_str() != mode {
            report.error(
                format!("modes.{mode}"),
                format!("write the mode as {:?}", parsed.as_str()),
            );
        }
        for (i, step) in steps.iter().enumerate() {
            if step.name.is_empty()
                || !step
                    .name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b))
            {
                report.error(
                    step_location(mode, i, "name"),
                    format!("{:?} must match ^[a-zA-Z0-9_\\-.]+$", step.name),
                );
            }
            if step.returncodes.is_empty() {
                report.error(step_location(mode, i, "returncodes"), "needs at least one exit code");
            }
            if step.upgrade_step {
                if !parsed.is_upgrade() {
                    report.error(
                        step_location(mode, i, "upgrade_step"),
                        format!("an upgrade step may appear only in upgrade or upgrade-check, not in {mode}"),
                    );
                }
                if !step.arguments.is_empty() {
                    report.error(
                        step_location(mode, i, "arguments"),
                        "an upgrade step takes no arguments: the agent appends the previous and current versions",
                    );
                }
            }
        }
    }
    let defined = cfg.defined_modes();
    if defined.is_empty() {
        report.error("modes", "no mode has any step");
    } else if defined.iter().all(|m| m.is_check()) {
        report.error("modes", "no action mode has steps (only check modes do)");
    }
    for action in defined.iter().filter(|m| !m.is_check()) {
        let check = action.check().expect("action modes have checks");
        if cfg.steps(check).is_empty() {
            report.error(
                format!("modes.{check}"),
                format!("{action} has steps, so its check mode {check} must have steps too"),
            );
        }
    }
}

/// Checks that every step's `path` exists under `skyhook_dir` and is executable, and
/// warns, as the agent does, when an action step's `<stem>_check<.ext>` is absent.
pub fn check_step_files(cfg: &PackageConfig, skyhook_dir: &Path, report: &mut Report) {
    for (mode, steps) in &cfg.modes {
        let is_check = mode.parse::<Mode>().map(Mode::is_check).unwrap_or(true);
        for (i, step) in steps.iter().enumerate() {
            let loc = step_location(mode, i, "path");
            let rel = Path::new(&step.path);
            if rel.is_absolute() || rel.components().any(|c| c == std::path::Component::ParentDir) {
                report.error(loc, format!("{:?} must be a path inside skyhook_dir", step.path));
                continue;
            }
            let file = skyhook_dir.join(rel);
            if !file.exists() {
                report.error(loc, format!("{} does not exist", file.display()));
                continue;
            }
            if !is_executable(&file) {
                report.error(
                    loc.clone(),
                    format!("{} is not an executable file (chmod +x it)", file.display()),
                );
            }
            if !is_check {
                let check = check_companion(&step.path);
                if !skyhook_dir.join(&check).exists() {
                    report.warn(loc, format!("the agent will warn that {check} does not exist"));
                }
            }
        }
    }
}

/// `<stem>_check<.ext>` of a step path: `install.sh` → `install_check.sh`.
pub fn check_companion(path: &str) -> String {
    let (dir, file) = match path.rsplit_once('/') {
        Some((d, f)) => (format!("{d}/"), f),
        None => (String::new(), path),
    };
    match file.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => format!("{dir}{stem}_check.{ext}"),
        _ => format!("{dir}{file}_check"),
    }
}

/// Checks that `package_version` equals the crate's version.
pub fn check_version(cfg: &PackageConfig, crate_version: &str, report: &mut Report) {
    if cfg.package_version != crate_version {
        report.error(
            "package_version",
            format!(
                "{:?} differs from the crate version {crate_version:?} in Cargo.toml; they must be the same string",
                cfg.package_version
            ),
        );
    }
}

/// The `version` of the `[package]` table of a Cargo.toml.
pub fn cargo_package_version(cargo_toml: &str) -> Option<String> {
    let mut in_package = false;
    for line in cargo_toml.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_package = line == "[package]";
            continue;
        }
        if in_package && let Some(rest) = line.strip_prefix("version") {
            let value = rest.trim_start().strip_prefix('=')?.trim();
            return value.strip_prefix('"')?.split('"').next().map(str::to_string);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::fixtures::GOOD;
    use super::*;

    fn rules(text: &str) -> Report {
        let cfg = parse(text).unwrap();
        let mut r = Report::default();
        check_rules(&cfg, &mut r);
        r
    }

    #[test]
    fn accepts_a_good_config() {
        assert!(rules(GOOD).is_ok(), "{:?}", rules(GOOD));
        let cfg = parse(GOOD).unwrap();
        assert_eq!(cfg.defined_modes(), [Mode::Config, Mode::ConfigCheck]);
        assert_eq!(cfg.steps(Mode::Apply), []);
    }

    #[test]
    fn reports_syntax_errors_with_line_and_column() {
        let r = parse("{\n  \"schema_version\": \"v1\",,\n}").unwrap_err();
        assert_eq!(r.errors[0].location, "line 2 column 26");
    }

    #[test]
    fn action_mode_needs_its_check() {
        let r = rules(&GOOD.replace("\"config-check\": [{", "\"uninstall-check\": [{"));
        assert!(
            r.errors
                .iter()
                .any(|f| f.location == "modes.config-check" && f.message.contains("config has steps")),
            "{r:?}"
        );
    }

    #[test]
    fn upgrade_step_rules() {
        let r = rules(&GOOD.replace("\"upgrade_step\": false, \"env\"", "\"upgrade_step\": true, \"env\""));
        let locs: Vec<&str> = r.errors.iter().map(|f| f.location.as_str()).collect();
        assert_eq!(locs, ["modes.config[0].upgrade_step", "modes.config[0].arguments"]);
    }

    #[test]
    fn needs_an_action_mode_with_steps() {
        let only_check = GOOD.replace("\"config\": [{", "\"apply-check\": [{");
        let r = rules(&only_check);
        assert!(r.errors.iter().any(|f| f.message.contains("no action mode")), "{r:?}");
        let r = rules(
            r#"{"schema_version":"v1","package_name":"x","package_version":"1.0.0","expected_config_files":[],"modes":{}}"#,
        );
        assert!(
            r.errors.iter().any(|f| f.message.contains("no mode has any step")),
            "{r:?}"
        );
    }

    #[test]
    fn check_companion_names() {
        assert_eq!(check_companion("install.sh"), "install_check.sh");
        assert_eq!(check_companion("tuning"), "tuning_check");
        assert_eq!(check_companion("steps/a.b.sh"), "steps/a.b_check.sh");
        assert_eq!(check_companion(".hidden"), ".hidden_check");
    }

    #[test]
    fn step_files_must_exist_and_be_executable() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let cfg = parse(GOOD).unwrap();
        let mut r = Report::default();
        check_step_files(&cfg, d.path(), &mut r);
        assert!(
            r.errors.iter().all(|f| f.message.contains("does not exist")) && r.errors.len() == 2,
            "{r:?}"
        );
        std::fs::write(d.path().join("demo"), "#!/bin/sh\n").unwrap();
        std::fs::write(d.path().join("demo_check"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(d.path().join("demo_check"), std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut r = Report::default();
        check_step_files(&cfg, d.path(), &mut r);
        assert_eq!(r.errors.len(), 1);
        assert_eq!(r.errors[0].location, "modes.config[0].path");
        assert!(r.errors[0].message.contains("not an executable"), "{r:?}");
        assert!(r.warnings.is_empty(), "demo_check exists: {r:?}");
    }

    #[test]
    fn version_must_equal_the_crates() {
        let cfg = parse(GOOD).unwrap();
        let mut r = Report::default();
        check_version(&cfg, "1.0.1", &mut r);
        assert!(
            r.errors[0]
                .message
                .contains("\"1.0.0\" differs from the crate version \"1.0.1\"")
        );
        assert_eq!(
            cargo_package_version("[package]\nname = \"x\"\nversion = \"2.0.0\"\n[dependencies]\nversion = \"9\""),
            Some("2.0.0".into())
        );
        assert_eq!(cargo_package_version("[workspace]\nversion = \"1\""), None);
    }
}

// SPDX-License-Identifier: Apache-2.0
//! `skyhook-pkg validate`: the validation the agent's load applies (and the checks
//! it does not), for a package directory — source crate or assembled tree — or a
//! config.json file. The Skyhook documentation promises this tool; the agent does
//! not ship one.

use std::fs;
use std::path::{Path, PathBuf};

use skyhook_core::config::Report;

use crate::console;
use crate::error::{ToolError, ValidateError};
use crate::workspace;

/// What to validate: the config.json, where its step files are, which version it must have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The config.json file.
    pub config: PathBuf,
    /// The directory holding the step files (`skyhook_dir`).
    pub skyhook_dir: PathBuf,
    /// The crate version config.json must equal, when the package has a Cargo.toml.
    pub crate_version: Option<String>,
}

/// Works out what `path` (a directory or a config.json) means.
pub fn target(path: &Path, workspace_root: &Path) -> Result<Target, ValidateError> {
    if path.symlink_metadata().is_err() {
        return Err(ValidateError::Missing {
            path: path.to_path_buf(),
        });
    }
    let (dir, config) = if path.is_dir() {
        (path.to_path_buf(), path.join("config.json"))
    } else {
        (
            path.parent().unwrap_or(Path::new(".")).to_path_buf(),
            path.to_path_buf(),
        )
    };
    if !config.is_file() {
        return Err(ValidateError::NoConfig {
            path: path.to_path_buf(),
        });
    }
    let crate_version = workspace::crate_version(&dir);
    let own = dir.join("skyhook_dir");
    let skyhook_dir = if own.is_dir() || crate_version.is_none() {
        own
    } else {
        // A source crate: its step files are the binaries `dist` assembles.
        let name = dir
            .canonicalize()
            .ok()
            .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_default();
        let assembled = workspace_root.join("dist").join(&name).join("skyhook_dir");
        if !assembled.is_dir() {
            return Err(ValidateError::NotAssembled {
                path: path.to_path_buf(),
                package: name,
            });
        }
        assembled
    };
    Ok(Target {
        config,
        skyhook_dir,
        crate_version,
    })
}

/// Validates one target.
pub fn check(t: &Target) -> Result<Report, ToolError> {
    let text = fs::read_to_string(&t.config).map_err(|e| ToolError::io("read config.json", &t.config, e))?;
    Ok(super::schema::validate(
        &text,
        Some(&t.skyhook_dir),
        t.crate_version.as_deref(),
    ))
}

/// Prints a report under a heading; returns whether it passed.
pub fn print(name: &str, report: &Report) -> bool {
    if report.is_ok() {
        outln!("ok    {name}");
    } else {
        outln!("FAIL  {name}: {} error(s)", report.errors.len());
    }
    for e in &report.errors {
        outln!("        error    {e}");
    }
    for w in &report.warnings {
        outln!("        warning  {w}");
    }
    report.is_ok()
}

/// `skyhook-pkg validate <paths>…`: true when every one passes. A path that is not
/// a package (missing, no config.json, not assembled, unreadable) is bad input: it
/// is reported, the others are validated, and the command fails with exit 2.
pub fn run(paths: &[PathBuf]) -> Result<bool, ToolError> {
    let root = workspace::root();
    let mut all_ok = true;
    let mut unusable = Vec::new();
    for path in paths {
        let name = path.display().to_string();
        match target(path, &root).map_err(ToolError::from).and_then(|t| check(&t)) {
            Ok(report) => all_ok &= print(&name, &report),
            Err(e) => unusable.push(e),
        }
    }
    console::inputs_checked("packages", unusable, paths.len())?;
    Ok(all_ok)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn package(dir: &Path, config: &str) {
        fs::create_dir_all(dir.join("skyhook_dir")).unwrap();
        fs::write(dir.join("config.json"), config).unwrap();
        for f in ["demo", "demo_check"] {
            let p = dir.join("skyhook_dir").join(f);
            fs::write(&p, "#!/bin/sh\n").unwrap();
            fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
        }
    }

    const CONFIG: &str = r#"{"schema_version":"v1","package_name":"demo","package_version":"1.0.0","expected_config_files":[],
      "modes":{"config":[{"name":"config","path":"demo","arguments":["config"],"returncodes":[0],"on_host":true,"idempotence":true,"upgrade_step":false}],
               "config-check":[{"name":"config-check","path":"demo_check","arguments":["config-check"],"returncodes":[0],"on_host":true,"idempotence":true,"upgrade_step":false}]}}"#;

    #[test]
    fn validates_an_assembled_tree_and_its_step_files() {
        let d = tempfile::tempdir().unwrap();
        package(d.path(), CONFIG);
        let t = target(d.path(), d.path()).unwrap();
        assert_eq!(t.crate_version, None);
        assert!(check(&t).unwrap().is_ok());
        fs::remove_file(d.path().join("skyhook_dir/demo_check")).unwrap();
        let r = check(&t).unwrap();
        assert_eq!(r.errors.len(), 1);
        assert_eq!(r.errors[0].location, "modes.config-check[0].path");
    }

    #[test]
    fn compares_the_version_with_cargo_toml() {
        let d = tempfile::tempdir().unwrap();
        package(d.path(), CONFIG);
        fs::write(
            d.path().join("Cargo.toml"),
            "[package]\nname = \"demo\"\nversion = \"1.1.0\"\n",
        )
        .unwrap();
        let r = check(&target(&d.path().join("config.json"), d.path()).unwrap()).unwrap();
        assert!(r.errors.iter().any(|e| e.location == "package_version"), "{r:?}");
    }

    #[test]
    fn a_source_crate_needs_its_assembled_tree() {
        let d = tempfile::tempdir().unwrap();
        let src = d.path().join("demo");
        fs::create_dir_all(&src).unwrap();
        fs::write(src.join("config.json"), CONFIG).unwrap();
        fs::write(src.join("Cargo.toml"), "[package]\nversion = \"1.0.0\"\n").unwrap();
        let e = target(&src, d.path()).unwrap_err();
        assert!(
            matches!(&e, ValidateError::NotAssembled { path, package } if path == &src && package == "demo"),
            "{e}"
        );
        let e = target(&d.path().join("nowhere"), d.path()).unwrap_err();
        assert!(matches!(e, ValidateError::Missing { .. }), "{e}");
        let e = target(d.path(), d.path()).unwrap_err();
        assert!(matches!(e, ValidateError::NoConfig { .. }), "{e}");
        package(&d.path().join("dist/demo"), CONFIG);
        let t = target(&src, d.path()).unwrap();
        assert_eq!(t.skyhook_dir, d.path().join("dist/demo/skyhook_dir"));
        assert!(check(&t).unwrap().is_ok());
    }
}

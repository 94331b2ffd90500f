// SPDX-License-Identifier: Apache-2.0
//! The workspace: where it is, and which of its members are Skyhook packages (a
//! top-level directory holding both Cargo.toml and config.json).

use std::fs;
use std::path::{Path, PathBuf};

/// The workspace root: the nearest ancestor of the current directory whose
/// Cargo.toml has a `[workspace]` table, else the one this tool was built in.
pub fn root() -> PathBuf {
    let start = std::env::current_dir().unwrap_or_default();
    start
        .ancestors()
        .find(|d| {
            fs::read_to_string(d.join("Cargo.toml"))
                .map(|t| t.lines().any(|l| l.trim() == "[workspace]"))
                .unwrap_or(false)
        })
        .map(Path::to_path_buf)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
}

/// The packages of the workspace at `root`, sorted by name.
pub fn packages(root: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(root)
        .map(|r| {
            r.flatten()
                .filter(|e| e.path().join("Cargo.toml").is_file() && e.path().join("config.json").is_file())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// The other packages of the workspace at `root` that `package`'s Cargo.toml lists
/// under `[dependencies]` (an NVIDIA package is built on the tuned or tuning engine).
pub fn package_dependencies(root: &Path, package: &str) -> Vec<String> {
    let Ok(text) = fs::read_to_string(root.join(package).join("Cargo.toml")) else {
        return Vec::new();
    };
    let packages = packages(root);
    let mut in_dependencies = false;
    let mut found = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            in_dependencies = line == "[dependencies]";
            continue;
        }
        let name = line.split(['=', '.', ' ']).next().unwrap_or_default();
        if in_dependencies && name != package && packages.iter().any(|p| p == name) {
            found.push(name.to_string());
        }
    }
    found
}

/// The version in a crate directory's Cargo.toml, `None` when it has none.
pub fn crate_version(dir: &Path) -> Option<String> {
    let text = fs::read_to_string(dir.join("Cargo.toml")).ok()?;
    skyhook_core::config::cargo_package_version(&text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_packages() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        assert_eq!(
            packages(&root),
            [
                "bind-mount",
                "copy-fail",
                "kdump",
                "nvidia-setup",
                "nvidia-tuned",
                "nvidia-tuning-gke",
                "shellscript",
                "tuned",
                "tuning"
            ]
        );
        assert!(crate_version(&root.join("tuning")).is_some());
        assert_eq!(crate_version(&root.join("schemas")), None);
        assert_eq!(package_dependencies(&root, "nvidia-tuned"), ["tuned"]);
        assert_eq!(package_dependencies(&root, "nvidia-tuning-gke"), ["tuning"]);
        assert_eq!(package_dependencies(&root, "copy-fail"), ["tuning"]);
        assert_eq!(package_dependencies(&root, "nvidia-setup"), ["tuning"]);
        assert!(package_dependencies(&root, "tuning").is_empty());
    }
}

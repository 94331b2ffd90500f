// SPDX-License-Identifier: Apache-2.0
//! `skyhook-pkg changed`: which package images a change affects, for the pull
//! request workflow's image builds.
//!
//! | a changed path under | affects |
//! |---|---|
//! | `<package>/` | that package, and every package whose Cargo.toml depends on it (nvidia-tuned on tuned, nvidia-tuning-gke, copy-fail and nvidia-setup on tuning) |
//! | `crates/skyhook-core/`, `crates/skyhook-pkg/` (builds the images), `schemas/`, the workspace `Cargo.toml`/`Cargo.lock`, `.dockerignore`, `ci/`, `.github/workflows/` | every package |
//! | anything else (documentation, `crates/skyhook-testkit/`, `.ci/`) | none |
//!
//! The test tier (`crates/skyhook-testkit`, `.ci/run`) does not reach an image; the
//! pull request workflow runs the whole test suite for every change anyway.

use std::io::Read;
use std::path::Path;
use std::process::Command;

use crate::error::{ChangedError, ToolError};
use crate::workspace;

/// Paths (relative to the repository root) whose change affects every package image.
const EVERY_PACKAGE: [&str; 9] = [
    "crates/skyhook-core/",
    "crates/skyhook-pkg/",
    "schemas/",
    "ci/",
    ".github/workflows/",
    "Cargo.toml",
    "Cargo.lock",
    ".dockerignore",
    "rust-toolchain.toml",
];

/// The packages (of `packages`, sorted as given) whose images the changed `paths`
/// affect; `uses(p)` names the packages `p` is built from, so a change to an engine
/// (tuned) reaches the packages that drive it (nvidia-tuned).
pub fn affected(paths: &[String], packages: &[String], uses: impl Fn(&str) -> Vec<String>) -> Vec<String> {
    let mut hit = vec![false; packages.len()];
    for path in paths {
        let path = path.trim().trim_start_matches("./");
        if EVERY_PACKAGE.iter().any(|p| {
            if p.ends_with('/') {
                path.starts_with(p)
            } else {
                path == *p
            }
        }) {
            return packages.to_vec();
        }
        if let Some((top, _)) = path.split_once('/')
            && let Some(i) = packages.iter().position(|p| p == top)
        {
            hit[i] = true;
        }
    }
    let uses: Vec<Vec<String>> = packages.iter().map(|p| uses(p)).collect();
    // Dependents of a hit package are hit too, through any depth of dependency.
    while let Some(i) = (0..packages.len()).find(|&i| {
        !hit[i]
            && uses[i]
                .iter()
                .any(|u| packages.iter().position(|p| p == u).is_some_and(|j| hit[j]))
    }) {
        hit[i] = true;
    }
    packages
        .iter()
        .zip(hit)
        .filter(|(_, h)| *h)
        .map(|(p, _)| p.clone())
        .collect()
}

/// The paths changed between two git revisions of the repository at `dir`
/// (`git diff --name-only base...head`: what the pull request changes since it left
/// its base).
pub fn git_changed_paths(dir: &Path, base: &str, head: &str) -> Result<Vec<String>, ToolError> {
    let out = Command::new("git")
        .current_dir(dir)
        .args(["diff", "--name-only", "--no-renames", &format!("{base}...{head}"), "--"])
        .output()
        .map_err(|e| ToolError::spawn("git diff", e))?;
    if !out.status.success() {
        return Err(ChangedError::GitDiff {
            base: base.to_string(),
            head: head.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        }
        .into());
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect())
}

/// The `packages=<JSON array>` line for `$GITHUB_OUTPUT` (a build matrix).
pub fn output(packages: &[String]) -> String {
    format!("packages={}\n", serde_json::json!(packages))
}

/// `skyhook-pkg changed [--base REV [--head REV]] [PATH…|-]`: paths from git, the
/// arguments, or standard input (`-`).
pub fn run(paths: &[String], base: Option<&str>, head: &str) -> Result<bool, ToolError> {
    let paths = match (base, paths) {
        (Some(base), []) => git_changed_paths(&workspace::root(), base, head)?,
        (Some(_), _) => return Err(ToolError::usage("give either --base or changed paths, not both")),
        (None, [dash]) if dash == "-" => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(ChangedError::Stdin)?;
            text.lines()
                .filter(|l| !l.trim().is_empty())
                .map(str::to_string)
                .collect()
        }
        (None, paths) => paths.to_vec(),
    };
    let root = workspace::root();
    let packages = affected(&paths, &workspace::packages(&root), |p| {
        workspace::package_dependencies(&root, p)
    });
    errln!(
        "{} changed path(s); images to build: {}",
        paths.len(),
        if packages.is_empty() {
            "none".to_string()
        } else {
            packages.join(", ")
        }
    );
    out!("{}", output(&packages));
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packages() -> Vec<String> {
        [
            "copy-fail",
            "kdump",
            "nvidia-tuned",
            "nvidia-tuning-gke",
            "shellscript",
            "tuned",
            "tuning",
        ]
        .map(String::from)
        .to_vec()
    }

    fn affected_by(paths: &[&str]) -> Vec<String> {
        affected(
            &paths.iter().map(|p| p.to_string()).collect::<Vec<_>>(),
            &packages(),
            |p| match p {
                "nvidia-tuned" => vec!["tuned".to_string()],
                "nvidia-tuning-gke" | "copy-fail" => vec!["tuning".to_string()],
                _ => vec![],
            },
        )
    }

    #[test]
    fn an_engine_change_affects_the_packages_built_on_it() {
        assert_eq!(affected_by(&["tuned/src/plan.rs"]), ["nvidia-tuned", "tuned"]);
        assert_eq!(
            affected_by(&["tuning/src/live.rs"]),
            ["copy-fail", "nvidia-tuning-gke", "tuning"]
        );
        assert_eq!(affected_by(&["nvidia-tuned/catalog/manifest.json"]), ["nvidia-tuned"]);
    }

    #[test]
    fn a_package_change_affects_that_package() {
        assert_eq!(affected_by(&["kdump/src/boot.rs"]), ["kdump"]);
        assert_eq!(
            affected_by(&["shellscript/README.md", "kdump/config.json", "shellscript/tests/x.rs"]),
            ["kdump", "shellscript"]
        );
        assert_eq!(affected_by(&["./shellscript/Dockerfile"]), ["shellscript"]);
    }

    #[test]
    fn a_core_or_workspace_change_affects_every_package() {
        for path in [
            "crates/skyhook-core/src/host.rs",
            "crates/skyhook-pkg/src/build/dist.rs",
            "Cargo.lock",
            "Cargo.toml",
            "schemas/v1/skyhook-agent-schema.json",
            "ci/Dockerfile.in",
            ".dockerignore",
            ".github/workflows/release.yml",
        ] {
            assert_eq!(affected_by(&["README.md", path]), packages(), "{path}");
        }
    }

    #[test]
    fn documentation_and_test_tier_changes_affect_none() {
        assert!(
            affected_by(&[
                "README.md",
                "CONTRIBUTING.md",
                "DESIGN.md",
                "crates/skyhook-testkit/src/lib.rs",
                ".ci/run",
                "LICENSE",
            ])
            .is_empty()
        );
        assert!(affected_by(&[]).is_empty());
        // A file merely named like a package is not the package's directory.
        assert!(affected_by(&["tuning", "docs/tuning/x.md", "tuning.md"]).is_empty());
        // Nor is a nested Cargo.toml the workspace's.
        assert!(affected_by(&["crates/skyhook-testkit/Cargo.toml"]).is_empty());
    }

    #[test]
    fn prints_a_build_matrix() {
        assert_eq!(
            output(&["kdump".into(), "tuning".into()]),
            "packages=[\"kdump\",\"tuning\"]\n"
        );
        assert_eq!(output(&[]), "packages=[]\n");
    }

    #[test]
    fn reads_the_changes_of_a_git_range() {
        let d = tempfile::tempdir().unwrap();
        let git = |args: &[&str]| {
            let out = Command::new("git")
                .current_dir(d.path())
                .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
                .args(args)
                .output()
                .unwrap();
            assert!(out.status.success(), "git {args:?}: {out:?}");
        };
        git(&["init", "-q", "-b", "main"]);
        std::fs::write(d.path().join("README.md"), "a").unwrap();
        git(&["add", "."]);
        git(&["commit", "-qm", "base"]);
        git(&["checkout", "-qb", "pr"]);
        std::fs::create_dir_all(d.path().join("tuning/src")).unwrap();
        std::fs::write(d.path().join("tuning/src/lib.rs"), "x").unwrap();
        git(&["add", "."]);
        git(&["commit", "-qm", "change"]);
        // The base moving on after the branch left it is not the pull request's change.
        git(&["checkout", "-q", "main"]);
        std::fs::write(d.path().join("Cargo.lock"), "b").unwrap();
        git(&["add", "."]);
        git(&["commit", "-qm", "later on main"]);
        assert_eq!(
            git_changed_paths(d.path(), "main", "pr").unwrap(),
            ["tuning/src/lib.rs"]
        );
        assert_eq!(
            git_changed_paths(d.path(), "main", "main").unwrap(),
            Vec::<String>::new()
        );
        let e = git_changed_paths(d.path(), "no-such-revision", "pr").unwrap_err();
        assert!(
            matches!(&e, ToolError::Changed(ChangedError::GitDiff { base, head, stderr })
                if base == "no-such-revision" && head == "pr" && stderr.contains("no-such-revision")),
            "{e}"
        );
        assert!(e.to_string().contains("fetch-depth"), "{e}");
    }
}

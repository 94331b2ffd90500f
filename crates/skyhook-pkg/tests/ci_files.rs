// SPDX-License-Identifier: Apache-2.0
//! The workflows and the image template, checked without docker or the CI service:
//! actions pinned to versions, one Rust version everywhere, the release pushing
//! multi-arch images with SBOM and provenance under the documented name, pull
//! requests building without pushing, and every skyhook-pkg call naming a real
//! subcommand.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(path: &str) -> String {
    fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

const WORKFLOWS: [&str; 2] = [".github/workflows/pull-request.yml", ".github/workflows/release.yml"];

/// The non-empty values of `key: value` lines (any indentation, `- ` list markers
/// allowed); `key:` lines opening a block are left out.
fn values<'a>(text: &'a str, key: &str) -> Vec<&'a str> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim_start().trim_start_matches("- ");
            l.strip_prefix(key)?.strip_prefix(':').map(str::trim)
        })
        .filter(|v| !v.is_empty())
        .collect()
}

#[test]
fn every_action_is_pinned_to_a_full_version() {
    for wf in WORKFLOWS {
        let text = read(wf);
        let uses = values(&text, "uses");
        assert!(!uses.is_empty(), "{wf}");
        for u in uses {
            let (_, version) = u.split_once('@').unwrap_or_else(|| panic!("{wf}: {u} has no version"));
            let numbers: Vec<&str> = version.trim_start_matches('v').split('.').collect();
            assert!(
                version.starts_with('v')
                    && numbers.len() == 3
                    && numbers
                        .iter()
                        .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())),
                "{wf}: {u} is not pinned to a vX.Y.Z version"
            );
        }
    }
}

#[test]
fn one_rust_version_for_images_and_workflows() {
    let template = read("ci/Dockerfile.in");
    let version_of = |s: &str| -> Vec<String> {
        let mut found: Vec<String> = s
            .match_indices("rust:")
            .map(|(i, _)| {
                s[i + 5..]
                    .chars()
                    .take_while(|c| c.is_ascii_digit() || *c == '.')
                    .collect::<String>()
                    .trim_end_matches('.')
                    .to_string()
            })
            .collect();
        found.extend(
            values(s, "RUST_VERSION")
                .into_iter()
                .map(|v| v.trim_matches('"').to_string()),
        );
        found
    };
    let image = version_of(&template);
    assert_eq!(image.len(), 1, "one rust image in the template: {image:?}");
    for wf in WORKFLOWS {
        for v in version_of(&read(wf)) {
            assert_eq!(v, image[0], "{wf} uses Rust {v}, the images {}", image[0]);
        }
    }
}

#[test]
fn the_release_pushes_both_platforms_with_attestations_under_the_package_name() {
    let text = read(".github/workflows/release.yml");
    assert!(
        text.contains("tags: [\"*/*\"]"),
        "triggered by <package>/<version> tags"
    );
    assert!(text.contains("skyhook-pkg -- tag \"$GITHUB_REF_NAME\" --owner \"$GITHUB_REPOSITORY_OWNER\""));
    assert_eq!(values(&text, "push"), ["true"]);
    assert_eq!(values(&text, "sbom"), ["true", "false"]);
    assert_eq!(values(&text, "provenance"), ["mode=max", "false"]);
    assert_eq!(
        values(&text, "tags").last().copied(),
        Some("${{ steps.tag.outputs.image }}:${{ steps.tag.outputs.version }}")
    );
    for platforms in values(&text, "platforms") {
        assert_eq!(platforms, "linux/amd64,linux/arm64");
    }
    assert!(text.contains("VERSION=${{ steps.tag.outputs.version }}"));
    assert!(text.contains("bash ci/github-release.sh image-fs"));
}

#[test]
fn pull_requests_run_the_ci_script_and_build_changed_images_without_pushing() {
    let text = read(".github/workflows/pull-request.yml");
    assert!(values(&text, "run").contains(&"bash .ci/run"));
    assert!(text.contains("skyhook-pkg -- changed --base"));
    assert!(text.contains("fetch-depth: 0"), "the diff needs the base's history");
    assert_eq!(values(&text, "push"), ["false"]);
    assert_eq!(values(&text, "platforms"), ["linux/amd64,linux/arm64"]);
    assert_eq!(values(&text, "file"), ["${{ matrix.package }}/Dockerfile"]);
}

#[test]
fn every_skyhook_pkg_call_names_a_real_subcommand() {
    let mut calls = Vec::new();
    for f in [
        WORKFLOWS[0],
        WORKFLOWS[1],
        "ci/github-release.sh",
        "ci/Dockerfile.in",
        ".ci/run",
    ] {
        let text = read(f);
        for marker in ["skyhook-pkg -- ", "skyhook-pkg "] {
            for (i, _) in text.match_indices(marker) {
                let word: String = text[i + marker.len()..]
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase())
                    .collect();
                if !word.is_empty() {
                    calls.push((f, word));
                }
            }
        }
    }
    assert!(calls.len() >= 8, "{calls:?}");
    for (f, sub) in calls {
        let out = Command::new(env!("CARGO_BIN_EXE_skyhook-pkg"))
            .args([sub.as_str(), "--help"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{f}: `skyhook-pkg {sub}` is not a subcommand: {out:?}"
        );
    }
}

#[test]
fn the_release_script_refuses_an_export_without_both_platforms() {
    let d = tempfile::tempdir().unwrap();
    fs::create_dir_all(d.path().join("linux_amd64/skyhook-package")).unwrap();
    let out = Command::new("bash")
        .arg(root().join("ci/github-release.sh"))
        .arg(d.path())
        .env("PACKAGE", "tuning")
        .env("VERSION", "1.0.0")
        .env_remove("GH_TOKEN")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("expected the trees of linux/amd64 and linux/arm64"),
        "{out:?}"
    );
}

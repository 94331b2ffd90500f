// SPDX-License-Identifier: Apache-2.0
//! `skyhook-pkg tag <package>/<version>`: the release tag check. A tag publishes
//! the image `<registry>/<owner>/skyhook-packages/<package>:<version>`, so it is
//! refused unless:
//!
//! - it names a package of the workspace;
//! - its version is strict semver (no `v`, no leading zeros) without build metadata
//!   (`+` cannot appear in an image tag);
//! - that version is the one in the package's Cargo.toml and config.json;
//! - the package's CHANGELOG.md has a section for it (the release notes).
//!
//! On success it prints `key=value` lines for `$GITHUB_OUTPUT`.

use std::fs;
use std::path::Path;

use skyhook_core::runtime::semver::Version;

use crate::error::{ReleaseError, ToolError};
use crate::release::notes;
use crate::workspace;

/// A release tag, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tag {
    /// The package it releases.
    pub package: String,
    /// Its version.
    pub version: Version,
}

/// Parses `<package>/<version>` against the workspace's `packages`.
pub fn parse(tag: &str, packages: &[String]) -> Result<Tag, ReleaseError> {
    let shape = || ReleaseError::Shape {
        tag: tag.to_string(),
        packages: packages.to_vec(),
    };
    let (package, version) = tag.split_once('/').ok_or_else(shape)?;
    if package.is_empty() || version.is_empty() || version.contains('/') {
        return Err(shape());
    }
    if !packages.iter().any(|p| p == package) {
        return Err(ReleaseError::NotAPackage {
            tag: tag.to_string(),
            package: package.to_string(),
            packages: packages.to_vec(),
        });
    }
    let version: Version = version.parse().map_err(|source| ReleaseError::Version {
        tag: tag.to_string(),
        source,
    })?;
    if !version.build.is_empty() {
        let pre = if version.pre.is_empty() {
            String::new()
        } else {
            format!("-{}", version.pre.join("."))
        };
        return Err(ReleaseError::BuildMetadata {
            tag: tag.to_string(),
            build: version.build.clone(),
            without: format!("{}.{}.{}{pre}", version.major, version.minor, version.patch),
        });
    }
    Ok(Tag {
        package: package.to_string(),
        version,
    })
}

/// Compares the tag's version with the package's two version fields; the message
/// names all three values.
pub fn check_versions(tag: &Tag, cargo: Option<&str>, config: Option<&str>) -> Result<(), ReleaseError> {
    let want = tag.version.to_string();
    if cargo == Some(want.as_str()) && config == Some(want.as_str()) {
        return Ok(());
    }
    Err(ReleaseError::VersionMismatch {
        package: tag.package.clone(),
        want,
        cargo: cargo.map(str::to_string),
        config: config.map(str::to_string),
    })
}

/// The facts the release workflow needs, once the tag passed every check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Release {
    /// The package.
    pub package: String,
    /// The version.
    pub version: String,
    /// Whether the version is a pre-release (`2.0.0-rc.1`).
    pub prerelease: bool,
    /// The package's Cargo.toml description (the image's description label).
    pub description: String,
    /// The image name, when an owner was given.
    pub image: Option<String>,
}

impl Release {
    /// The `key=value` lines for `$GITHUB_OUTPUT`.
    pub fn output(&self) -> String {
        let mut s = format!(
            "package={}\nversion={}\nprerelease={}\ndescription={}\n",
            self.package, self.version, self.prerelease, self.description
        );
        if let Some(image) = &self.image {
            s.push_str(&format!("image={image}\n"));
        }
        s
    }
}

/// The image name for a package: `<registry>/<owner>/skyhook-packages/<package>`, lower case
/// (registries refuse upper-case repository names; GitHub owners may have them).
pub fn image(registry: &str, owner: &str, package: &str) -> String {
    format!("{registry}/{owner}/skyhook-packages/{package}").to_ascii_lowercase()
}

/// The `description` of a Cargo.toml's `[package]` table (one-line string form).
pub fn cargo_description(cargo_toml: &str) -> Option<String> {
    let mut in_package = false;
    for line in cargo_toml.lines().map(str::trim) {
        if line.starts_with('[') {
            in_package = line == "[package]";
        } else if in_package && let Some(rest) = line.strip_prefix("description") {
            let value = rest.trim_start().strip_prefix('=')?.trim();
            return value
                .strip_prefix('"')?
                .strip_suffix('"')
                .map(|v| v.replace("\\\"", "\""));
        }
    }
    None
}

/// Checks `tag` against the package sources under `root`.
pub fn check(root: &Path, tag: &str, registry: &str, owner: Option<&str>) -> Result<Release, ToolError> {
    let tag = parse(tag, &workspace::packages(root))?;
    let dir = root.join(&tag.package);
    let config = fs::read_to_string(dir.join("config.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| v.get("package_version")?.as_str().map(str::to_string));
    check_versions(&tag, workspace::crate_version(&dir).as_deref(), config.as_deref())?;
    let version = tag.version.to_string();
    notes::changelog_section(&dir.join("CHANGELOG.md"), &version)?;
    let cargo = fs::read_to_string(dir.join("Cargo.toml")).unwrap_or_default();
    Ok(Release {
        description: cargo_description(&cargo).unwrap_or_else(|| format!("Skyhook package {}", tag.package)),
        image: owner.map(|o| image(registry, o, &tag.package)),
        prerelease: !tag.version.pre.is_empty(),
        package: tag.package,
        version,
    })
}

/// `skyhook-pkg tag <tag> [--registry] [--owner]`.
pub fn run(tag: &str, registry: &str, owner: Option<&str>) -> Result<bool, ToolError> {
    out!("{}", check(&workspace::root(), tag, registry, owner)?.output());
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

    #[test]
    fn good_tags_parse() {
        let t = parse("tuning/2.0.0", &packages()).unwrap();
        assert_eq!(t.package, "tuning");
        assert_eq!(t.version.to_string(), "2.0.0");
        let t = parse("kdump/10.20.30-rc.1", &packages()).unwrap();
        assert_eq!((t.package.as_str(), t.version.pre.len()), ("kdump", 2));
    }

    #[test]
    fn a_tag_for_an_unknown_package_is_refused() {
        let e = parse("tunning/2.0.0", &packages()).unwrap_err();
        assert!(
            matches!(&e, ReleaseError::NotAPackage { package, packages: known, .. }
                if package == "tunning" && known == &packages()),
            "{e}"
        );
        assert!(
            e.to_string()
                .contains("copy-fail, kdump, nvidia-tuned, nvidia-tuning-gke, shellscript, tuned, tuning"),
            "{e}"
        );
    }

    #[test]
    fn v_prefixes_leading_zeros_and_loose_versions_are_refused() {
        for (tag, why) in [
            ("tuning/v2.0.0", "no 'v' prefix"),
            ("tuning/V2.0.0", "no 'v' prefix"),
            ("tuning/02.0.0", "leading zeros"),
            ("tuning/2.00.0", "leading zeros"),
            ("tuning/2.0.0-rc.01", "without leading zeros"),
            ("tuning/2.0", "three numbers"),
            ("tuning/2.0.0.1", "three numbers"),
            ("tuning/latest", "three numbers"),
        ] {
            let e = parse(tag, &packages()).unwrap_err();
            assert!(
                matches!(&e, ReleaseError::Version { tag: t, source } if t == tag && source.reason.contains(why)),
                "{tag}: {e}"
            );
        }
        let e = parse("tuning/2.0.0-rc.1+build.5", &packages()).unwrap_err();
        assert!(
            matches!(&e, ReleaseError::BuildMetadata { build, without, .. } if build == "build.5" && without == "2.0.0-rc.1"),
            "{e}"
        );
        for tag in ["tuning", "tuning/", "/2.0.0", "tuning/2.0.0/x", "v2.0.0", ""] {
            let e = parse(tag, &packages()).unwrap_err();
            assert!(
                matches!(&e, ReleaseError::Shape { tag: t, .. } if t == tag),
                "{tag}: {e}"
            );
        }
    }

    #[test]
    fn a_version_mismatch_names_the_three_values() {
        let t = parse("tuning/2.0.1", &packages()).unwrap();
        check_versions(&t, Some("2.0.1"), Some("2.0.1")).unwrap();
        let e = check_versions(&t, Some("2.0.0"), Some("1.9.0"))
            .unwrap_err()
            .to_string();
        for part in [
            "the tag says \"2.0.1\"",
            "tuning/Cargo.toml says \"2.0.0\"",
            "tuning/config.json says \"1.9.0\"",
        ] {
            assert!(e.contains(part), "{part} missing in: {e}");
        }
        // One file bumped and not the other is still refused.
        assert!(check_versions(&t, Some("2.0.1"), Some("2.0.0")).is_err());
        let e = check_versions(&t, None, Some("2.0.1")).unwrap_err();
        assert!(
            matches!(&e, ReleaseError::VersionMismatch { cargo: None, config: Some(c), .. } if c == "2.0.1"),
            "{e}"
        );
        assert!(e.to_string().contains("Cargo.toml says no version"), "{e}");
    }

    #[test]
    fn image_names_are_lower_case() {
        assert_eq!(
            image("ghcr.io", "NVIDIA", "tuning"),
            "ghcr.io/nvidia/skyhook-packages/tuning"
        );
    }

    #[test]
    fn reads_the_package_description() {
        let toml = "[package]\nname = \"x\"\ndescription = \"Skyhook package: a \\\"b\\\"\"\n[dependencies]\ndescription = \"no\"\n";
        assert_eq!(cargo_description(toml).as_deref(), Some("Skyhook package: a \"b\""));
        assert_eq!(cargo_description("[dependencies]\ndescription = \"no\"\n"), None);
    }

    /// A workspace with one package `demo` at `version` in both files.
    fn workspace(version: &str, changelog: &str) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("demo");
        fs::create_dir_all(&p).unwrap();
        fs::write(
            p.join("Cargo.toml"),
            format!("[package]\nname = \"demo\"\nversion = \"{version}\"\ndescription = \"A demo\"\n"),
        )
        .unwrap();
        fs::write(p.join("config.json"), format!(r#"{{"package_version": "{version}"}}"#)).unwrap();
        fs::write(p.join("CHANGELOG.md"), changelog).unwrap();
        d
    }

    #[test]
    fn checks_the_tag_against_the_package_files_and_prints_the_outputs() {
        let d = workspace("2.0.0-rc.1", "# Changelog\n\n## 2.0.0-rc.1\n\n- First.\n");
        let r = check(d.path(), "demo/2.0.0-rc.1", "ghcr.io", Some("My-Org")).unwrap();
        assert_eq!(
            r.output(),
            "package=demo\nversion=2.0.0-rc.1\nprerelease=true\ndescription=A demo\n\
             image=ghcr.io/my-org/skyhook-packages/demo\n"
        );
        let e = check(d.path(), "demo/2.0.0", "ghcr.io", None).unwrap_err();
        assert!(
            matches!(&e, ToolError::Release(ReleaseError::VersionMismatch { cargo: Some(c), .. }) if c == "2.0.0-rc.1"),
            "{e}"
        );
        let e = check(d.path(), "other/2.0.0-rc.1", "ghcr.io", None).unwrap_err();
        assert!(matches!(e, ToolError::Release(ReleaseError::NotAPackage { .. })), "{e}");
    }

    #[test]
    fn a_release_without_its_changelog_section_is_refused() {
        let d = workspace("2.0.0", "# Changelog\n\n## 1.0.0\n\n- Old.\n");
        let e = check(d.path(), "demo/2.0.0", "ghcr.io", None).unwrap_err();
        assert!(
            matches!(&e, ToolError::Notes(crate::error::NotesError::NoSection { version, .. }) if version == "2.0.0"),
            "{e}"
        );
    }

    #[test]
    fn the_workspace_packages_carry_their_release_facts() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        for p in workspace::packages(&root) {
            let cargo = fs::read_to_string(root.join(&p).join("Cargo.toml")).unwrap();
            assert!(cargo_description(&cargo).is_some(), "{p}/Cargo.toml has no description");
            let version = workspace::crate_version(&root.join(&p)).unwrap();
            let r = check(&root, &format!("{p}/{version}"), "ghcr.io", Some("NVIDIA")).unwrap();
            assert_eq!(r.image.unwrap(), format!("ghcr.io/nvidia/skyhook-packages/{p}"));
        }
    }
}

// SPDX-License-Identifier: Apache-2.0
//! `skyhook-pkg notes <package> <version> [--tree DIR]… [--image NAME:TAG@DIGEST]`:
//! the release notes of a version — its CHANGELOG section (the text under
//! `## <version>` up to the next `## ` heading) followed, when assembled trees are
//! given, by a table of the binary sizes per platform, and, when the pushed image is
//! given, its digest with the commands that pull it by digest and verify its
//! signature and provenance.

use std::fs;
use std::path::{Path, PathBuf};

use crate::build::{elf, platform};
use crate::error::{NotesError, ToolError};
use crate::workspace;

/// The text under the `## <version>` heading of a changelog, up to the next `## `
/// heading, without surrounding blank lines. A heading may carry more after the
/// version (`## 2.0.0 — 2026-05-01`), but `## 2.0.0-rc.1` is not `## 2.0.0`.
pub fn section(changelog: &str, version: &str) -> Option<String> {
    let is_heading = |l: &str| l.starts_with("## ");
    let mut lines = changelog.lines();
    lines.find(|l| {
        l.strip_prefix("## ")
            .map(str::trim_start)
            .and_then(|rest| rest.strip_prefix(version))
            .is_some_and(|after| after.is_empty() || after.starts_with(char::is_whitespace))
    })?;
    let body: Vec<&str> = lines.take_while(|l| !is_heading(l)).collect();
    Some(body.join("\n").trim_matches('\n').trim_end().to_string())
}

/// The section of `version` in the changelog file at `path`; an error when the
/// file, the section or its text is missing.
pub fn changelog_section(path: &Path, version: &str) -> Result<String, ToolError> {
    let text = fs::read_to_string(path).map_err(|e| ToolError::io("read the changelog", path, e))?;
    let (path, version) = (path.to_path_buf(), version.to_string());
    match section(&text, &version) {
        None => Err(NotesError::NoSection { path, version }.into()),
        Some(s) if s.trim().is_empty() => Err(NotesError::EmptySection { path, version }.into()),
        Some(s) => Ok(s),
    }
}

/// One binary of an assembled tree, for the size table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binary {
    /// The Docker platform (`linux/arm64`), or the ELF architecture when unknown.
    pub platform: String,
    /// Size in bytes.
    pub size: u64,
    /// Whether it is static.
    pub is_static: bool,
}

/// Reads the binary of `package` in the assembled tree `tree` (a `dist/<package>/`
/// or an image's `/skyhook-package`).
pub fn binary(tree: &Path, package: &str) -> Result<Binary, ToolError> {
    let path = tree.join("skyhook_dir").join(package);
    let size = fs::metadata(&path)
        .map_err(|e| ToolError::io("read the size of the binary", &path, e))?
        .len();
    let info = elf::inspect(&path).map_err(|e| ToolError::io("read the ELF header of the binary", &path, e))?;
    Ok(Binary {
        platform: platform::platform_of_arch(&info.arch).unwrap_or(info.arch),
        size,
        is_static: info.is_static,
    })
}

/// The size table, in platform order.
pub fn size_table(package: &str, binaries: &[Binary]) -> String {
    let mut sorted = binaries.to_vec();
    sorted.sort_by(|a, b| a.platform.cmp(&b.platform));
    let mut s =
        format!("### Binary sizes\n\n| platform | `skyhook_dir/{package}` | bytes | static |\n|---|---:|---:|---|\n");
    for b in &sorted {
        s.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            b.platform,
            skyhook_core::formats::human::size(b.size),
            b.size,
            if b.is_static { "yes" } else { "NO" }
        ));
    }
    s
}

/// The image section of the notes for the pushed `image`, `<name>:<tag>@sha256:<hex>`;
/// `None` when it is not of that shape.
pub fn image_section(image: &str) -> Option<String> {
    let (tagged, digest) = image.split_once('@')?;
    let hex = digest.strip_prefix("sha256:")?;
    if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let slash = tagged.rfind('/')?;
    let (name, _tag) = tagged.split_at(slash + tagged[slash..].find(':')?);
    let owner = name.split('/').nth(1)?;
    let by_digest = format!("{name}@{digest}");
    Some(format!(
        "### Image\n\n`{tagged}` (linux/amd64, linux/arm64), index digest `{digest}`. Pull it by digest:\n\n\
         ```sh\n{by_digest}\n```\n\nThe release signed it (cosign, keyless) and attested its build provenance:\n\n\
         ```sh\ncosign verify {by_digest} \\\n  --certificate-oidc-issuer https://token.actions.githubusercontent.com \\\n  \
         --certificate-identity-regexp '^https://github.com/{owner}/.+/.github/workflows/release.yml@refs/tags/'\n\
         gh attestation verify oci://{by_digest} --owner {owner}\n```\n"
    ))
}

/// The release notes: the changelog section, then the size table when `trees` are
/// given, then the image section when the pushed `image` is given.
pub fn notes(
    root: &Path,
    package: &str,
    version: &str,
    trees: &[PathBuf],
    image: Option<&str>,
) -> Result<String, ToolError> {
    let known = workspace::packages(root);
    if !known.iter().any(|p| p == package) {
        return Err(ToolError::unknown_package(package, &known));
    }
    let mut s = changelog_section(&root.join(package).join("CHANGELOG.md"), version)?;
    s.push('\n');
    if !trees.is_empty() {
        let binaries = trees
            .iter()
            .map(|t| binary(t, package))
            .collect::<Result<Vec<_>, _>>()?;
        s.push('\n');
        s.push_str(&size_table(package, &binaries));
    }
    if let Some(image) = image {
        let section = image_section(image).ok_or_else(|| {
            ToolError::usage(format!(
                "--image {image:?} is not <name>:<tag>@sha256:<64 hex digits> (the pushed image and its index digest)"
            ))
        })?;
        s.push('\n');
        s.push_str(&section);
    }
    Ok(s)
}

/// `skyhook-pkg notes <package> <version> [--tree DIR]… [--image NAME:TAG@DIGEST]`.
pub fn run(package: &str, version: &str, trees: &[PathBuf], image: Option<&str>) -> Result<bool, ToolError> {
    out!("{}", notes(&workspace::root(), package, version, trees, image)?);
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHANGELOG: &str = "# Changelog: demo\n\nIntro text.\n\n## 2.0.0-rc.1\n\n- Candidate.\n\n\
## 2.0.0 — 2026-05-01\n\n- Rewritten in Rust.\n\n### Compatibility\n\n- Same keys.\n\n\
## 1.1.0\n\n- Older.\n- Last section.\n";

    #[test]
    fn extracts_a_section_up_to_the_next_version_heading() {
        assert_eq!(
            section(CHANGELOG, "2.0.0").unwrap(),
            "- Rewritten in Rust.\n\n### Compatibility\n\n- Same keys."
        );
        assert_eq!(section(CHANGELOG, "2.0.0-rc.1").unwrap(), "- Candidate.");
    }

    #[test]
    fn the_last_section_runs_to_the_end_of_the_file() {
        assert_eq!(section(CHANGELOG, "1.1.0").unwrap(), "- Older.\n- Last section.");
    }

    #[test]
    fn an_absent_version_is_not_a_prefix_match() {
        assert_eq!(section(CHANGELOG, "1.1"), None);
        assert_eq!(section(CHANGELOG, "2.0"), None);
        assert_eq!(section(CHANGELOG, "3.0.0"), None);
        assert_eq!(section("### 3.0.0\n- no\n", "3.0.0"), None);
    }

    #[test]
    fn a_missing_or_empty_section_fails_clearly() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("CHANGELOG.md");
        fs::write(&f, CHANGELOG).unwrap();
        let e = changelog_section(&f, "3.0.0").unwrap_err();
        assert!(
            matches!(&e, ToolError::Notes(NotesError::NoSection { path, version }) if path == &f && version == "3.0.0"),
            "{e}"
        );
        fs::write(&f, "## 3.0.0\n\n## 2.0.0\n- x\n").unwrap();
        let e = changelog_section(&f, "3.0.0").unwrap_err();
        assert!(matches!(e, ToolError::Notes(NotesError::EmptySection { .. })), "{e}");
        let nope = d.path().join("nope.md");
        let e = changelog_section(&nope, "3.0.0").unwrap_err();
        assert!(matches!(&e, ToolError::Io { path, .. } if path == &nope), "{e}");
    }

    #[test]
    fn notes_end_with_the_binary_sizes_of_each_tree() {
        let d = tempfile::tempdir().unwrap();
        let pkg = d.path().join("demo");
        fs::create_dir_all(&pkg).unwrap();
        fs::write(pkg.join("Cargo.toml"), "[package]\nversion = \"2.0.0\"\n").unwrap();
        fs::write(pkg.join("config.json"), "{}").unwrap();
        fs::write(pkg.join("CHANGELOG.md"), CHANGELOG).unwrap();
        // An assembled tree holding this machine's /bin/sh as the binary.
        let tree = d.path().join("linux_here/skyhook-package");
        fs::create_dir_all(tree.join("skyhook_dir")).unwrap();
        fs::copy("/bin/sh", tree.join("skyhook_dir/demo")).unwrap();
        let size = fs::metadata("/bin/sh").unwrap().len();
        let n = notes(d.path(), "demo", "2.0.0", std::slice::from_ref(&tree), None).unwrap();
        let platform = platform::platform_of_arch(std::env::consts::ARCH).unwrap();
        assert!(n.starts_with("- Rewritten in Rust."), "{n}");
        assert!(n.contains("### Binary sizes"), "{n}");
        assert!(
            n.contains(&format!(
                "| {platform} | {} | {size} | NO |",
                skyhook_core::formats::human::size(size)
            )),
            "{n}"
        );
        assert_eq!(
            notes(d.path(), "demo", "2.0.0", &[], None).unwrap(),
            format!("{}\n", section(CHANGELOG, "2.0.0").unwrap())
        );
        let e = notes(d.path(), "other", "2.0.0", &[], None).unwrap_err();
        assert!(
            matches!(&e, ToolError::UnknownPackage { name, known } if name == "other" && known == &["demo"]),
            "{e}"
        );
        let e = notes(d.path(), "demo", "2.0.0", &[d.path().join("missing")], None).unwrap_err();
        assert!(
            matches!(&e, ToolError::Io { path, .. } if path == &d.path().join("missing/skyhook_dir/demo")),
            "{e}"
        );
    }

    #[test]
    fn notes_name_the_pushed_digest_and_how_to_verify_it() {
        let digest = format!("sha256:{}", "ab".repeat(32));
        let image = format!("ghcr.io/nvidia/skyhook-packages/tuning:2.0.0@{digest}");
        let s = image_section(&image).unwrap();
        assert!(s.contains(&format!("index digest `{digest}`")), "{s}");
        assert!(
            s.contains(&format!("\nghcr.io/nvidia/skyhook-packages/tuning@{digest}\n")),
            "{s}"
        );
        assert!(
            s.contains("cosign verify ghcr.io/nvidia/skyhook-packages/tuning@sha256:"),
            "{s}"
        );
        assert!(
            s.contains("github.com/nvidia/.+/.github/workflows/release.yml@refs/tags/"),
            "{s}"
        );
        assert!(
            s.contains("gh attestation verify oci://ghcr.io/nvidia/skyhook-packages/tuning@sha256:"),
            "{s}"
        );
        for bad in [
            "ghcr.io/nvidia/skyhook-packages/tuning:2.0.0".to_string(),
            "ghcr.io/nvidia/skyhook-packages/tuning:2.0.0@sha256:abc".to_string(),
            format!("ghcr.io/nvidia/skyhook-packages/tuning@{digest}"),
        ] {
            assert_eq!(image_section(&bad), None, "{bad}");
        }
    }

    #[test]
    fn the_size_table_is_in_platform_order() {
        let t = size_table(
            "demo",
            &[
                Binary {
                    platform: "linux/arm64".into(),
                    size: 3 << 20,
                    is_static: true,
                },
                Binary {
                    platform: "linux/amd64".into(),
                    size: 512 * 1024,
                    is_static: true,
                },
            ],
        );
        let rows: Vec<&str> = t.lines().filter(|l| l.starts_with("| linux")).collect();
        assert_eq!(
            rows,
            [
                "| linux/amd64 | 512 KiB | 524288 | yes |",
                "| linux/arm64 | 3 MiB | 3145728 | yes |"
            ]
        );
    }
}

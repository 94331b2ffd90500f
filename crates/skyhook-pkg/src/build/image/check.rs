// SPDX-License-Identifier: Apache-2.0
//! `skyhook-pkg image check`: one package's image, on every published platform, used
//! as the operator uses it, against the tree `skyhook-pkg dist` assembled:
//!
//! 1. the image's whole file system (exported with podman): `/skyhook-package` is the
//!    dist tree byte for byte (modes, links), and every ELF file, busybox included,
//!    is of the platform's architecture (an image labelled arm64 holding an x86-64
//!    busybox fails here);
//! 2. the init container ([`init`]), with the configMaps mounted in each [`Style`]:
//!    the node's copy directory is the dist tree plus both configMaps, byte for byte,
//!    and nothing else was written on the node;
//! 3. a step from the copied tree, as the agent runs it: chrooted into the node (a
//!    scratch Debian-like root: `/etc/os-release` and `/run/lock`), the copy's
//!    `skyhook_dir/<package> <mode>` or `<package>_check <mode>-check`, with
//!    `SKYHOOK_DIR` and `SKYHOOK_RESOURCE_ID` set, ending as [`plan`] says for that
//!    package (tuning configures its limits and checks them; the packages that
//!    install distribution packages refuse the bare node, naming the missing
//!    apt-get, and leave it as it was). A platform of another architecture runs
//!    under qemu-user (binfmt_misc, `ci/with-qemu-binfmt`).
//!
//! Each failure is a `FAIL` line naming the platform and what differs; the check
//! fails (exit 1) when any was printed.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use crate::build::image::engine::{self, RUN_FLAGS, Store};
use crate::build::image::init::{self, Style};
use crate::build::image::tree::{self, Snapshot};
use crate::build::platform;
use crate::error::ToolError;

/// Where the init container copies the package on the node (the operator's shape:
/// a directory per package and version under its copy root).
pub const COPY_DIR: &str = "/var/lib/skyhook/image-check/package-1.0.0";

/// One mode run from the copy, and how it must end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// The mode (`config`, `config-check`); a check mode runs `<package>_check`.
    pub mode: &'static str,
    /// The exit code it must end with.
    pub code: i32,
    /// Text its standard error must hold, when it fails.
    pub says: Option<&'static str>,
}

/// The configMap a package's check mounts and the steps it runs from the copy on the
/// bare node.
pub fn plan(package: &str) -> (Vec<(&'static str, &'static str)>, Vec<Step>) {
    let ok = |mode| Step {
        mode,
        code: 0,
        says: None,
    };
    match package {
        "tuning" => (
            vec![("ulimit.conf", "nofile=65536\n")],
            vec![ok("config"), ok("config-check")],
        ),
        // They install distribution packages: the bare node has no apt-get, and they
        // say so before changing anything.
        "kdump" | "tuned" | "nvidia-tuned" => (
            vec![("example.conf", "key=value\n")],
            vec![Step {
                mode: "uninstall",
                code: 1,
                says: Some("has no apt-get"),
            }],
        ),
        _ => (
            vec![("example.conf", "key=value\n")],
            vec![ok("uninstall"), ok("uninstall-check")],
        ),
    }
}

/// The node's `/etc/os-release`: a Debian host, as far as the packages ask.
const OS_RELEASE: &str = "ID=debian\nVERSION_ID=\"12\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n";
/// The node-metadata configMap every check mounts.
const NODE_METADATA: [(&str, &str); 2] = [
    ("labels.json", "{\"kubernetes.io/arch\":\"any\"}\n"),
    ("annotations.json", "{}\n"),
];

/// What one check needs.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// The package.
    pub package: &'a str,
    /// The image, as podman names it (`oci:<layout>:<name>`, `docker://…@sha256:…`).
    pub image: &'a str,
    /// The dist directory holding `<triple>/<package>/` for every platform.
    pub dist: &'a Path,
    /// Where temporary nodes and exports go.
    pub work: &'a Path,
}

/// A link to an OCI layout under a name podman accepts, removed when dropped.
struct LayoutAlias(Option<std::path::PathBuf>);

impl Drop for LayoutAlias {
    fn drop(&mut self) {
        if let Some(link) = &self.0 {
            let _ = fs::remove_file(link);
        }
    }
}

/// podman names an image it reads from an OCI layout (`oci:<dir>:<name>`) after the
/// directory's path, which must then be a valid repository name (lower case, no
/// component starting with a dot: a temporary directory often is not). Such an image
/// is read through a link of a plain name in the temporary directory instead.
fn podman_image(image: &str) -> Result<(String, LayoutAlias), ToolError> {
    let Some((dir, name)) = image.strip_prefix("oci:").and_then(|r| r.rsplit_once(':')) else {
        return Ok((image.to_string(), LayoutAlias(None)));
    };
    let valid = |p: &str| {
        p.split('/').filter(|c| !c.is_empty()).all(|c| {
            c.bytes()
                .next()
                .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
                && c.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b))
        })
    };
    if valid(dir) {
        return Ok((image.to_string(), LayoutAlias(None)));
    }
    let link = Path::new("/tmp").join(format!("skyhook-oci-{}", std::process::id()));
    let _ = fs::remove_file(&link);
    let target = fs::canonicalize(dir).map_err(|e| ToolError::io("find the OCI layout", Path::new(dir), e))?;
    std::os::unix::fs::symlink(&target, &link).map_err(|e| ToolError::io("link the OCI layout", &link, e))?;
    Ok((format!("oci:{}:{name}", link.display()), LayoutAlias(Some(link))))
}

/// Checks the image on every published platform; false when something failed (each
/// printed as a `FAIL` line).
pub fn check(store: &Store, req: &Request) -> Result<bool, ToolError> {
    let (image, _alias) = podman_image(req.image)?;
    let req = &Request {
        image: &image,
        ..req.clone()
    };
    let mut ok = true;
    for (arch, triple) in platform::published() {
        let platform = format!("linux/{arch}");
        let elf_arch = platform::triple_arch(&triple).to_string();
        let expected = tree::snapshot(&req.dist.join(&triple).join(req.package))?;
        let mut problems = image_problems(store, req, &platform, &elf_arch, &expected)?;
        for style in Style::ALL {
            problems.extend(
                init_problems(store, req, &platform, style, &expected)?
                    .into_iter()
                    .map(|p| format!("init container, configMaps as {}: {p}", style.name())),
            );
        }
        for p in &problems {
            outln!("FAIL  {} {platform}: {p}", req.package);
        }
        if problems.is_empty() {
            outln!(
                "ok    {} {platform}: image tree, ELF architecture, init copy (both configMap styles), step",
                req.package
            );
        }
        ok &= problems.is_empty();
    }
    Ok(ok)
}

/// A fresh empty directory `name` under the work directory.
fn fresh(work: &Path, name: &str) -> Result<std::path::PathBuf, ToolError> {
    let dir = work.join(name);
    if dir.exists() {
        fs::remove_dir_all(&dir).map_err(|e| ToolError::io("clear a work directory", &dir, e))?;
    }
    fs::create_dir_all(&dir).map_err(|e| ToolError::io("create a work directory", &dir, e))?;
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o755))
        .map_err(|e| ToolError::io("chmod a work directory", &dir, e))?;
    Ok(dir)
}

/// The image's own file system: the package tree and every ELF file's architecture.
fn image_problems(
    store: &Store,
    req: &Request,
    platform: &str,
    elf_arch: &str,
    expected: &Snapshot,
) -> Result<Vec<String>, ToolError> {
    let rootfs = fresh(req.work, "rootfs")?;
    let tar = req.work.join("rootfs.tar");
    let id = engine::run(
        store
            .command("podman")
            .args(["create", "--pull", "always"])
            .args(RUN_FLAGS)
            .args(["--platform", platform, req.image, "/bin/sh"]),
        &format!("podman create of {} ({platform})", req.image),
    )?;
    let id = id.trim().to_string();
    let export = engine::run(
        store.command("podman").args(["export", "-o"]).arg(&tar).arg(&id),
        "podman export",
    );
    let _ = store.command("podman").args(["rm", "-f", &id]).output();
    export?;
    engine::run(
        Command::new("tar").arg("-xf").arg(&tar).arg("-C").arg(&rootfs),
        "tar -x of the exported image",
    )?;
    let _ = fs::remove_file(&tar);
    let all = tree::snapshot(&rootfs)?;
    let mut problems = Vec::new();
    let (wrong, count) = tree::foreign_elf(&all, elf_arch);
    problems.extend(wrong);
    if count < 2 {
        problems.push(format!(
            "the image holds {count} ELF files: expected busybox and the package binary"
        ));
    }
    if !all.contains_key(Path::new("bin/sh")) {
        problems.push("the image has no /bin/sh: the init container cannot start".into());
    }
    let package = tree::snapshot(&rootfs.join("skyhook-package"))?;
    problems.extend(
        tree::differences(&package, expected)
            .into_iter()
            .map(|d| format!("/skyhook-package/{d}")),
    );
    let _ = fs::remove_dir_all(&rootfs);
    Ok(problems)
}

/// The init container in one configMap style, then one step from the copy.
fn init_problems(
    store: &Store,
    req: &Request,
    platform: &str,
    style: Style,
    expected: &Snapshot,
) -> Result<Vec<String>, ToolError> {
    let node = fresh(req.work, "node")?;
    let configmaps = fresh(req.work, "configmaps")?;
    let metadata = fresh(req.work, "node-metadata")?;
    let (configmap, steps) = plan(req.package);
    init::write_configmap(&configmaps, &configmap, style)?;
    init::write_configmap(&metadata, &NODE_METADATA, style)?;
    let run = init::Run {
        image: req.image,
        platform,
        node: &node,
        configmaps: &configmaps,
        node_metadata: &metadata,
        skyhook_dir: COPY_DIR,
    };
    if let Err(e) = init::run(store, &run) {
        return Ok(vec![e.to_string()]);
    }
    let mut want = expected.clone();
    want.extend(tree::nest(tree::snapshot(&configmaps)?, "configmaps", 0o755));
    want.extend(tree::nest(tree::snapshot(&metadata)?, "node-metadata", 0o755));
    let copy = node.join(COPY_DIR.trim_start_matches('/'));
    let mut problems: Vec<String> = tree::differences(&tree::snapshot(&copy)?, &want)
        .into_iter()
        .map(|d| format!("{COPY_DIR}/{d}"))
        .collect();
    // Nothing else on the node: only the directories leading to the copy.
    let mut ancestors = tree::Snapshot::new();
    let mut p = Path::new(COPY_DIR.trim_start_matches('/'));
    while let Some(parent) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
        ancestors.insert(parent.to_path_buf(), tree::Entry::Dir(0o755));
        p = parent;
    }
    let outside: Snapshot = tree::snapshot(&node)?
        .into_iter()
        .filter(|(path, _)| !path.starts_with(COPY_DIR.trim_start_matches('/')))
        .collect();
    problems.extend(
        tree::differences(&outside, &ancestors)
            .into_iter()
            .map(|d| format!("node /{d}")),
    );
    if problems.is_empty() {
        // What every node has: its os-release, and /run/lock (systemd's tmpfiles make it
        // at boot), where action steps take the node lock.
        let lock = node.join("run/lock");
        fs::create_dir_all(&lock).map_err(|e| ToolError::io("make the node's /run/lock", &lock, e))?;
        let etc = node.join("etc");
        fs::create_dir_all(&etc).map_err(|e| ToolError::io("make the node's /etc", &etc, e))?;
        fs::write(etc.join("os-release"), OS_RELEASE)
            .map_err(|e| ToolError::io("write the node's /etc/os-release", &etc, e))?;
        problems.extend(step_problems(req.package, &node, &steps));
    }
    Ok(problems)
}

/// The steps from the copied tree, chrooted into the node.
fn step_problems(package: &str, node: &Path, steps: &[Step]) -> Vec<String> {
    let mut problems = Vec::new();
    for step in steps {
        let binary = if step.mode.ends_with("-check") {
            format!("{package}_check")
        } else {
            package.to_string()
        };
        let program = format!("{COPY_DIR}/skyhook_dir/{binary}");
        // A step that must fail must also leave the node as it was.
        let before = (step.code != 0).then(|| tree::snapshot(node));
        let out = Command::new("chroot")
            .arg(node)
            .args([&program, step.mode])
            .env_clear()
            .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
            .env("SKYHOOK_DIR", COPY_DIR)
            .env("SKYHOOK_RESOURCE_ID", format!("image-check_{package}_1.0.0"))
            .output();
        match out {
            Ok(o) => {
                let stderr = String::from_utf8_lossy(&o.stderr);
                let said = step.says.is_none_or(|s| stderr.contains(s));
                if o.status.code() != Some(step.code) || !said {
                    problems.push(format!(
                        "step `{program} {}` in a chroot of the node ended with {} (expected exit {}{}): {}",
                        step.mode,
                        o.status,
                        step.code,
                        step.says.map(|s| format!(" saying {s:?}")).unwrap_or_default(),
                        engine::tail(&stderr)
                    ));
                }
            }
            Err(e) => problems.push(format!("cannot run chroot(8) for `{program} {}`: {e}", step.mode)),
        }
        if let Some(Ok(before)) = before {
            match tree::snapshot(node) {
                Ok(after) => problems.extend(
                    tree::differences(&after, &before)
                        .into_iter()
                        .map(|d| format!("the failed step `{program} {}` changed the node: /{d}", step.mode)),
                ),
                Err(e) => problems.push(e.to_string()),
            }
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_package_has_a_step_and_check_modes_run_the_check_link() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let packages = crate::workspace::packages(&root);
        assert!(packages.len() >= 8, "{packages:?}");
        for p in &packages {
            let (configmap, steps) = plan(p);
            assert!(!configmap.is_empty() && !steps.is_empty(), "{p}");
        }
        assert_eq!(plan("tuning").1[1].mode, "config-check");
    }

    #[test]
    fn a_layout_podman_cannot_name_is_read_through_a_plain_link() {
        let (same, alias) = podman_image("oci:/tmp/skyhook-x/oci-1:tuning").unwrap();
        assert_eq!(
            (same.as_str(), alias.0.is_none()),
            ("oci:/tmp/skyhook-x/oci-1:tuning", true)
        );
        let (same, _) = podman_image("docker://ghcr.io/nvidia/skyhook-packages/tuning@sha256:00").unwrap();
        assert_eq!(same, "docker://ghcr.io/nvidia/skyhook-packages/tuning@sha256:00");
        let d = tempfile::Builder::new().prefix(".Odd").tempdir().unwrap();
        let (aliased, alias) = podman_image(&format!("oci:{}:tuning", d.path().display())).unwrap();
        let link = alias.0.clone().unwrap();
        assert_eq!(aliased, format!("oci:{}:tuning", link.display()));
        assert_eq!(fs::read_link(&link).unwrap(), fs::canonicalize(d.path()).unwrap());
        drop(alias);
        assert!(fs::symlink_metadata(&link).is_err(), "the link goes with the check");
    }
}

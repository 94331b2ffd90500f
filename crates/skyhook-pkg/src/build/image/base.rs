// SPDX-License-Identifier: Apache-2.0
//! `skyhook-pkg image base`: a busybox base image for every published platform, made
//! here from Debian's `busybox-static` (no registry needed): `apt-get download
//! busybox-static:<arch>` (the arm64 one after `dpkg --add-architecture arm64`, which
//! `ci/setup-toolchain` does), its `/bin/busybox` plus one link per applet in `/bin`
//! (the applet list of the package's busybox for this machine: Debian builds both
//! architectures from one configuration), built `FROM scratch` with buildah for the
//! platform and stamped with the build time. The package images are then built with
//! `BASE` pointing at it: `localhost/skyhook-busybox:<arch>`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::build::image::engine::{self, Store};
use crate::build::{elf, platform};
use crate::error::{ImageError, ToolError};

/// The Debian package the base is made from.
pub const DEBIAN_PACKAGE: &str = "busybox-static";

/// The name of the base image of a Docker architecture (`amd64`).
pub fn image_name(arch: &str) -> String {
    format!("localhost/skyhook-busybox:{arch}")
}

/// The `--base` value that points `image build` at these images.
pub const BASE_TEMPLATE: &str = "localhost/skyhook-busybox:{arch}";

/// The `.deb` of `busybox-static` for the Debian architecture `arch` in `dir`,
/// downloaded with apt-get when it is not there.
fn download(dir: &Path, arch: &str) -> Result<PathBuf, ToolError> {
    let find = || -> Option<PathBuf> {
        fs::read_dir(dir).ok()?.flatten().map(|e| e.path()).find(|p| {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            name.starts_with(&format!("{DEBIAN_PACKAGE}_")) && name.ends_with(&format!("_{arch}.deb"))
        })
    };
    if let Some(deb) = find() {
        return Ok(deb);
    }
    engine::run(
        Command::new("apt-get")
            .current_dir(dir)
            .args(["download", "-q", &format!("{DEBIAN_PACKAGE}:{arch}")]),
        &format!(
            "apt-get download {DEBIAN_PACKAGE}:{arch} (for arm64 on amd64: dpkg --add-architecture arm64 and apt-get update, as ci/setup-toolchain does)"
        ),
    )?;
    find().ok_or_else(|| {
        ImageError::Layout {
            layout: dir.to_path_buf(),
            why: format!("apt-get download left no {DEBIAN_PACKAGE} .deb for {arch}"),
        }
        .into()
    })
}

/// The applets of a busybox binary (`busybox --list`), sorted.
fn applets(busybox: &Path) -> Result<Vec<String>, ToolError> {
    let out = engine::run(
        Command::new(busybox).arg("--list"),
        &format!("{} --list", busybox.display()),
    )?;
    let mut list: Vec<String> = out
        .lines()
        .map(str::trim)
        .filter(|a| !a.is_empty() && *a != "busybox" && !a.contains('/'))
        .map(str::to_string)
        .collect();
    list.sort();
    Ok(list)
}

/// Writes the build context of one platform's base: `rootfs/bin/busybox`, a link per
/// applet, and a Containerfile copying the root file system into an empty image.
fn context(dir: &Path, deb: &Path, applets: &[String], version: &str) -> Result<PathBuf, ToolError> {
    let io = |what: &str, path: &Path, e| ToolError::io(format!("make the busybox base: {what}"), path, e);
    fs::create_dir_all(dir).map_err(|e| io("create", dir, e))?;
    let unpacked = dir.join("unpacked");
    if unpacked.exists() {
        fs::remove_dir_all(&unpacked).map_err(|e| io("clear", &unpacked, e))?;
    }
    engine::run(
        Command::new("dpkg-deb").arg("-x").arg(deb).arg(&unpacked),
        &format!("dpkg-deb -x {}", deb.display()),
    )?;
    let ctx = dir.join("context");
    if ctx.exists() {
        fs::remove_dir_all(&ctx).map_err(|e| io("clear", &ctx, e))?;
    }
    let bin = ctx.join("rootfs/bin");
    fs::create_dir_all(&bin).map_err(|e| io("create", &bin, e))?;
    fs::copy(unpacked.join("bin/busybox"), bin.join("busybox")).map_err(|e| io("copy", &bin, e))?;
    for a in applets {
        std::os::unix::fs::symlink("busybox", bin.join(a)).map_err(|e| io("link an applet", &bin.join(a), e))?;
    }
    let containerfile = format!(
        "FROM scratch\nLABEL org.opencontainers.image.title=\"busybox\" \\\n      \
         org.opencontainers.image.version=\"{version}\" \\\n      \
         org.opencontainers.image.description=\"Debian's {DEBIAN_PACKAGE} {version}\"\nCOPY rootfs/ /\n"
    );
    let file = ctx.join("Containerfile");
    fs::write(&file, containerfile).map_err(|e| io("write", &file, e))?;
    Ok(ctx)
}

/// Makes the base image of every published platform in `store`, working in `work`
/// (where downloaded `.deb`s are kept and reused); the images' names.
pub fn make(store: &Store, work: &Path, timestamp: u64) -> Result<Vec<String>, ToolError> {
    fs::create_dir_all(work).map_err(|e| ToolError::io("create the work directory", work, e))?;
    let debs: Vec<(&str, PathBuf)> = platform::published()
        .into_iter()
        .map(|(arch, _)| download(work, arch).map(|d| (arch, d)))
        .collect::<Result<_, _>>()?;
    // The applet list, from the busybox this machine runs.
    let mut list = None;
    for (arch, deb) in &debs {
        let dir = work.join(format!("list-{arch}"));
        let _ = fs::remove_dir_all(&dir);
        engine::run(Command::new("dpkg-deb").arg("-x").arg(deb).arg(&dir), "dpkg-deb -x")?;
        let busybox = dir.join("bin/busybox");
        let own = elf::inspect(&busybox)
            .map(|e| e.arch == std::env::consts::ARCH)
            .unwrap_or(false);
        if own {
            list = Some(applets(&busybox)?);
        }
        let _ = fs::remove_dir_all(&dir);
    }
    let list = list.ok_or_else(|| {
        ToolError::usage(format!(
            "no {DEBIAN_PACKAGE} of this machine's architecture ({}) among the published platforms",
            std::env::consts::ARCH
        ))
    })?;
    let mut names = Vec::new();
    for (arch, deb) in &debs {
        let version = engine::run(
            Command::new("dpkg-deb").args(["-f"]).arg(deb).arg("Version"),
            "dpkg-deb -f Version",
        )?;
        let ctx = context(&work.join(format!("base-{arch}")), deb, &list, version.trim())?;
        let name = image_name(arch);
        engine::run(
            store
                .command("buildah")
                .args(["build", "--quiet", "--platform", &format!("linux/{arch}")])
                .args(["--timestamp", &timestamp.to_string(), "-t", &name, "-f"])
                .arg(ctx.join("Containerfile"))
                .arg(&ctx),
            &format!("buildah build of the busybox base for linux/{arch}"),
        )?;
        errln!(
            "base linux/{arch}: {name} from Debian's {DEBIAN_PACKAGE} {}",
            version.trim()
        );
        names.push(name);
    }
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_base_template_names_the_images_made() {
        assert_eq!(BASE_TEMPLATE.replace("{arch}", "arm64"), image_name("arm64"));
    }
}

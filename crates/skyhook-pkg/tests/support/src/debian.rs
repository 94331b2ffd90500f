// SPDX-License-Identifier: Apache-2.0
//! The Debian roots of the chroot tier, one per architecture (this machine's, and
//! arm64 with debootstrap's second stage run under qemu-user emulation): built once
//! with debootstrap (installed first when missing), cached between runs on this
//! machine, copied for each test.
//!
//! Cache: `$SKYHOOK_CHROOT_CACHE` (default `/var/cache/skyhook-packages/chroot`), one
//! directory per recipe key and architecture; rebuilt when absent. Mirror:
//! `$SKYHOOK_DEBIAN_MIRROR`, else the one this machine's apt sources use for the
//! suite, else debootstrap's own default.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

use crate::apt_sources;

/// The suite the tier runs on.
pub const SUITE: &str = "bookworm";
/// Packages added to minbase: what every real node has and the packages rely on.
pub const INCLUDE: &str = "systemd,python3";
/// Bump when the recipe changes, so that old caches are not reused.
const RECIPE: u32 = 1;

fn mirror() -> Option<String> {
    std::env::var("SKYHOOK_DEBIAN_MIRROR")
        .ok()
        .or_else(|| apt_sources::mirror_of(&apt_sources::of_this_machine(), SUITE))
}

/// This machine's Debian architecture (`amd64`, `arm64`).
pub fn native_arch() -> String {
    must(
        Command::new("dpkg").arg("--print-architecture"),
        "the chroot tier needs dpkg",
    )
    .trim()
    .to_string()
}

fn cache_dir() -> PathBuf {
    std::env::var_os("SKYHOOK_CHROOT_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/var/cache/skyhook-packages/chroot"))
}

/// Runs `cmd`, panicking with its output and `why` when it fails.
pub fn must(cmd: &mut Command, why: &str) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{why}: cannot run {cmd:?}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{why}: {cmd:?} failed ({}):\n{text}", out.status);
    text
}

fn ensure_debootstrap() {
    // Two roots may be built at once: one apt-get at a time.
    static INSTALLING: Mutex<()> = Mutex::new(());
    let _one = INSTALLING.lock().unwrap_or_else(|e| e.into_inner());
    if Path::new("/usr/sbin/debootstrap").exists() {
        return;
    }
    eprintln!("chroot tier: installing debootstrap with apt-get");
    for args in [&["update", "-q"][..], &["install", "-y", "-q", "debootstrap"]] {
        must(
            Command::new("apt-get")
                .args(args)
                .env("DEBIAN_FRONTEND", "noninteractive"),
            "the chroot tier needs debootstrap (apt-get failed: is the Debian mirror reachable? ci/setup-toolchain installs it)",
        );
    }
}

/// The cached Debian root of `arch` (a Debian architecture), built on first use; a
/// foreign one needs qemu-user registered with binfmt_misc (see `emulation`). Each
/// architecture is built under its own lock: the native scenarios go on while the
/// arm64 root's emulated debootstrap (minutes) runs.
pub fn cached_root_of(arch: &str) -> &'static Path {
    static ROOTS: Mutex<BTreeMap<String, &'static OnceLock<PathBuf>>> = Mutex::new(BTreeMap::new());
    let cell = *ROOTS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(arch.to_string())
        .or_insert_with(|| Box::leak(Box::new(OnceLock::new())));
    cell.get_or_init(|| build_root(arch))
}

/// The cache key of the Debian root of `arch`.
fn key_of(arch: &str) -> String {
    format!("debian-{SUITE}-{arch}-minbase-{}-r{RECIPE}", INCLUDE.replace(',', "+"))
}

/// A root derived from the cached Debian root of `arch` by `build` (given a private
/// copy, chrooted into with [`must`]), cached beside it as `<key>+<name>`: built on
/// first use, once per test run at most, kept for later runs. Bump `name`'s recipe
/// suffix when `build` changes.
pub fn cached_derivative(arch: &str, name: &str, build: impl FnOnce(&Path)) -> PathBuf {
    let base = cached_root_of(arch);
    let key = format!("{}+{name}", key_of(arch));
    let dir = cache_dir().join(&key);
    if dir.join("etc/os-release").exists() {
        return dir;
    }
    let tmp = cache_dir().join(format!("{key}.building-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    eprintln!("chroot tier: deriving {} (cached for later runs)", dir.display());
    must(
        Command::new("cp").arg("-a").arg(base).arg(&tmp),
        "copy the cached Debian root",
    );
    build(&tmp);
    must(
        Command::new("chroot").arg(&tmp).args(["apt-get", "clean"]),
        "apt-get clean in the derived root",
    );
    if let Err(e) = std::fs::rename(&tmp, &dir) {
        assert!(
            dir.join("etc/os-release").exists(),
            "move the derived root {} into the cache: {e}",
            tmp.display()
        );
        let _ = std::fs::remove_dir_all(&tmp);
    }
    dir
}

fn build_root(arch: &str) -> PathBuf {
    let key = key_of(arch);
    let dir = cache_dir().join(&key);
    if dir.join("etc/os-release").exists() {
        return dir;
    }
    ensure_debootstrap();
    std::fs::create_dir_all(cache_dir()).expect("create the chroot cache directory");
    let tmp = cache_dir().join(format!("{key}.building-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    eprintln!(
        "chroot tier: debootstrap --arch={arch} {SUITE} into {} (cached for later runs)",
        dir.display()
    );
    must(
        Command::new("debootstrap")
            .args([
                &format!("--arch={arch}"),
                "--variant=minbase",
                &format!("--include={INCLUDE}"),
                SUITE,
            ])
            .arg(&tmp)
            .args(mirror()),
        "debootstrap failed: the chroot tier needs root and the Debian mirror (set SKYHOOK_DEBIAN_MIRROR to use another)",
    );
    must(
        Command::new("chroot").arg(&tmp).args(["apt-get", "clean"]),
        "apt-get clean in the new root",
    );
    if let Err(e) = std::fs::rename(&tmp, &dir) {
        // Another run built the same root meanwhile: theirs is as good as ours.
        assert!(
            dir.join("etc/os-release").exists(),
            "move the new root {} into the cache: {e}",
            tmp.display()
        );
        let _ = std::fs::remove_dir_all(&tmp);
    }
    dir
}

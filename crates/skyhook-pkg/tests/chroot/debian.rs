// SPDX-License-Identifier: Apache-2.0
//! The Debian root of the chroot tier: built once with debootstrap (installed first
//! when missing), cached between runs on this machine, copied for each test.
//!
//! Cache: `$SKYHOOK_CHROOT_CACHE` (default `/var/cache/skyhook-packages/chroot`), one
//! directory per recipe key; rebuilt when absent. Mirror: `$SKYHOOK_DEBIAN_MIRROR`
//! (default `http://deb.debian.org/debian`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The suite the tier runs on.
pub const SUITE: &str = "bookworm";
/// Packages added to minbase: what every real node has and the packages rely on.
pub const INCLUDE: &str = "systemd,python3";
/// Bump when the recipe changes, so that old caches are not reused.
const RECIPE: u32 = 1;

fn mirror() -> String {
    std::env::var("SKYHOOK_DEBIAN_MIRROR").unwrap_or_else(|_| "http://deb.debian.org/debian".into())
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
    if Path::new("/usr/sbin/debootstrap").exists() {
        return;
    }
    eprintln!("chroot tier: installing debootstrap with apt-get");
    must(
        Command::new("apt-get")
            .args(["install", "-y", "-q", "debootstrap"])
            .env("DEBIAN_FRONTEND", "noninteractive"),
        "the chroot tier needs debootstrap (apt-get install debootstrap failed: is the Debian mirror reachable?)",
    );
}

/// The cached Debian root, built on first use.
pub fn cached_root() -> &'static Path {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        let arch = must(Command::new("dpkg").arg("--print-architecture"), "the chroot tier needs dpkg");
        let key = format!("debian-{SUITE}-{}-minbase-{}-r{RECIPE}", arch.trim(), INCLUDE.replace(',', "+"));
        let dir = cache_dir().join(&key);
        if dir.join("etc/os-release").exists() {
            return dir;
        }
        ensure_debootstrap();
        std::fs::create_dir_all(cache_dir()).expect("create the chroot cache directory");
        let tmp = cache_dir().join(format!("{key}.building-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        eprintln!("chroot tier: debootstrap {SUITE} into {} (cached for later runs)", dir.display());
        must(
            Command::new("debootstrap")
                .args(["--variant=minbase", &format!("--include={INCLUDE}"), SUITE])
                .arg(&tmp)
                .arg(mirror()),
            "debootstrap failed: the chroot tier needs root and the Debian mirror (set SKYHOOK_DEBIAN_MIRROR to use another)",
        );
        must(Command::new("chroot").arg(&tmp).args(["apt-get", "clean"]), "apt-get clean in the new root");
        std::fs::rename(&tmp, &dir).expect("move the new root into the cache");
        dir
    })
}

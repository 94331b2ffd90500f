// SPDX-License-Identifier: Apache-2.0
//! Which Rust compiler builds which target. The default toolchain (rustup's, or
//! whatever `cargo`/`rustc` the caller runs) builds every target whose standard
//! library it has — on a developer machine or CI runner, this machine's own
//! architecture. A target it lacks (rustup cannot download targets everywhere) is
//! built by the cross toolchain `ci/setup-toolchain` installs: Debian's `rustc-web`
//! and `cargo-web` (`/usr/bin/cargo`, `/usr/bin/rustc`) with the target's standard
//! library from `libstd-rust-web-dev:<arch>`. `SKYHOOK_CROSS_RUST` names another
//! directory holding a `cargo` and a `rustc` for such targets.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::NoStd;

/// Where the cross toolchain lives by default (Debian's rustc-web and cargo-web).
pub const DEFAULT_CROSS_RUST: &str = "/usr/bin";

/// A cargo and the rustc it drives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rust {
    /// The cargo to run.
    pub cargo: PathBuf,
    /// The rustc it must use (`RUSTC`); `None` leaves cargo's own choice.
    pub rustc: Option<PathBuf>,
    /// The rustdoc of the same release (`RUSTDOC`, for doctests); `None` likewise.
    pub rustdoc: Option<PathBuf>,
}

impl Rust {
    /// The caller's toolchain: `$CARGO` and `$RUSTC`, else `cargo` and `rustc` from `PATH`.
    pub fn default_toolchain() -> Rust {
        Rust {
            cargo: std::env::var_os("CARGO").map_or_else(|| "cargo".into(), PathBuf::from),
            rustc: std::env::var_os("RUSTC").map(PathBuf::from),
            rustdoc: std::env::var_os("RUSTDOC").map(PathBuf::from),
        }
    }

    /// The cross toolchain in `$SKYHOOK_CROSS_RUST` (default [`DEFAULT_CROSS_RUST`]):
    /// its `cargo`, `rustc` and `rustdoc`.
    pub fn cross_toolchain() -> Rust {
        let dir = std::env::var_os("SKYHOOK_CROSS_RUST").map_or_else(|| DEFAULT_CROSS_RUST.into(), PathBuf::from);
        Rust {
            cargo: dir.join("cargo"),
            rustc: Some(dir.join("rustc")),
            rustdoc: Some(dir.join("rustdoc")),
        }
    }

    /// The rustc this toolchain compiles with.
    pub fn compiler(&self) -> PathBuf {
        self.rustc.clone().unwrap_or_else(|| "rustc".into())
    }

    /// Whether this toolchain has the standard library of `target`.
    pub fn has_std(&self, target: &str) -> bool {
        Command::new(self.compiler())
            .args(["--print", "target-libdir", "--target", target])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
            .is_some_and(|dir| has_libstd(&dir))
    }

    /// `rustc --version` of this toolchain, for the build log.
    pub fn version(&self) -> String {
        Command::new(self.compiler())
            .arg("--version")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_else(|e| format!("{}: {e}", self.compiler().display()))
    }
}

/// Whether `dir` (a `target-libdir`) holds a compiled standard library.
fn has_libstd(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| {
        entries
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("libstd-"))
    })
}

/// The toolchain that builds `target`: the default one when it has the target's
/// standard library, else the cross toolchain when that has it.
pub fn for_target(target: &str) -> Result<Rust, NoStd> {
    let default = Rust::default_toolchain();
    if default.has_std(target) {
        return Ok(default);
    }
    let cross = Rust::cross_toolchain();
    if cross.has_std(target) {
        return Ok(cross);
    }
    Err(NoStd {
        target: target.to_string(),
        default: default.compiler(),
        cross: cross.compiler(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_toolchain_builds_this_machines_target() {
        let host = crate::build::dist::host_triple().unwrap();
        assert!(Rust::default_toolchain().has_std(&host));
        assert_eq!(for_target(&host).unwrap(), Rust::default_toolchain());
    }

    #[test]
    fn a_target_nobody_has_is_refused_with_what_to_do() {
        let e = for_target("riscv64gc-unknown-linux-gnu").unwrap_err();
        assert_eq!(e.target, "riscv64gc-unknown-linux-gnu");
        assert_eq!(e.cross, Rust::cross_toolchain().compiler());
        assert!(e.to_string().contains("ci/setup-toolchain"), "{e}");
    }

    #[test]
    fn a_libdir_without_libstd_has_no_std() {
        let d = tempfile::tempdir().unwrap();
        assert!(!has_libstd(d.path()));
        assert!(!has_libstd(&d.path().join("missing")));
        std::fs::write(d.path().join("libstd-0123abcd.rlib"), "").unwrap();
        assert!(has_libstd(d.path()));
    }
}

// SPDX-License-Identifier: Apache-2.0
//! What the dist tests share: running `skyhook-pkg dist` from the workspace root,
//! and running one built binary alone in an empty root (no dynamic loader, no
//! library: only a static binary starts there), under qemu-user when it is of
//! another architecture than this machine's.

use std::fs;
use std::path::Path;
use std::process::Command;

/// Runs `skyhook-pkg dist <args> --out <out>` (`skyhook_pkg`: the tool's binary) from the
/// workspace root; its stdout (the summary table). Fails the test, with dist's output,
/// when dist fails.
pub fn dist(skyhook_pkg: &str, args: &[&str], out: &Path) -> String {
    let run = Command::new(skyhook_pkg)
        .arg("dist")
        .args(args)
        .arg("--out")
        .arg(out)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../.."))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
    assert!(
        run.status.success(),
        "skyhook-pkg dist {args:?} failed (a cross build's toolchain comes from ci/setup-toolchain):\n{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    stdout
}

/// chroot(8), once the test is known to run as root (chroot(2) needs it).
pub fn chroot_program() -> &'static str {
    assert!(
        nix::unistd::geteuid().is_root(),
        "the empty-chroot test needs root (chroot(2)); run the test suite as root, as CI does"
    );
    ["/usr/sbin/chroot", "/usr/bin/chroot", "/sbin/chroot"]
        .into_iter()
        .find(|c| Path::new(c).exists())
        .expect("chroot(8) from coreutils")
}

/// An empty root holding one binary (and qemu-user when the binary is of another
/// architecture), removed when dropped.
pub struct EmptyRoot {
    jail: tempfile::TempDir,
    name: String,
    emulated: bool,
}

impl EmptyRoot {
    /// An empty root holding `binary` as `/<name>`, built for `arch` (`x86_64`, `aarch64`).
    pub fn holding(binary: &Path, name: &str, arch: &str) -> EmptyRoot {
        let jail = tempfile::tempdir().unwrap();
        fs::copy(binary, jail.path().join(name)).unwrap();
        let emulated = arch != std::env::consts::ARCH;
        if emulated {
            let qemu = format!("/usr/bin/qemu-{arch}-static");
            assert!(
                Path::new(&qemu).exists(),
                "{qemu} is missing: run ci/setup-toolchain (qemu-user-static)"
            );
            fs::copy(&qemu, jail.path().join("qemu")).unwrap();
        }
        EmptyRoot {
            jail,
            name: name.to_string(),
            emulated,
        }
    }

    /// `chroot <root> [/qemu] /<name>`, ready for arguments and environment.
    pub fn command(&self) -> Command {
        let mut cmd = Command::new(chroot_program());
        cmd.arg(self.jail.path());
        if self.emulated {
            cmd.arg("/qemu");
        }
        cmd.arg(format!("/{}", self.name));
        cmd
    }
}

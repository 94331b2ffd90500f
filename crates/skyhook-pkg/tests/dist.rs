// SPDX-License-Identifier: Apache-2.0
//! `skyhook-pkg dist` end to end: every package is built, assembled in the image
//! layout, validated, and its binary is static — proven by running it in an empty
//! chroot, where no dynamic loader or library exists.

use std::fs;
use std::path::Path;
use std::process::Command;

const PACKAGES: [&str; 4] = ["kdump", "shellscript", "tuned", "tuning"];

#[test]
fn dist_assembles_static_binaries_that_run_in_an_empty_chroot() {
    let out = tempfile::tempdir().unwrap();
    let dist = out.path().join("dist");
    let run = Command::new(env!("CARGO_BIN_EXE_skyhook-pkg"))
        .args(["dist", "--out"])
        .arg(&dist)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "dist failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    for p in PACKAGES {
        assert!(
            stdout.lines().any(|l| l.starts_with(p) && l.contains(" yes ")),
            "{p} not static in:\n{stdout}"
        );
        let tree = dist.join(p);
        let mut names: Vec<String> = fs::read_dir(&tree)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["README.md", "config.json", "skyhook_dir"], "{p}: image layout");
        assert_eq!(
            fs::read_link(tree.join(format!("skyhook_dir/{p}_check"))).unwrap(),
            Path::new(p)
        );
    }

    assert!(
        nix::unistd::geteuid().is_root(),
        "the empty-chroot test needs root (chroot(2)); run the test suite as root, as CI does"
    );
    let chroot = ["/usr/sbin/chroot", "/usr/bin/chroot", "/sbin/chroot"]
        .into_iter()
        .find(|c| Path::new(c).exists())
        .expect("chroot(8) from coreutils");
    for p in PACKAGES {
        let jail = tempfile::tempdir().unwrap();
        fs::copy(dist.join(p).join("skyhook_dir").join(p), jail.path().join(p)).unwrap();
        let out = Command::new(chroot)
            .arg(jail.path())
            .arg(format!("/{p}"))
            .arg("--version")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{p} does not run in an empty chroot: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            String::from_utf8_lossy(&out.stdout).starts_with(&format!("{p} ")),
            "{p}: {out:?}"
        );
        // And a real mode run without any environment reports the missing variables (exit 2),
        // which needs the formatting and logging machinery to work statically too.
        let out = Command::new(chroot)
            .arg(jail.path())
            .arg(format!("/{p}"))
            .arg("bogus-mode")
            .env_clear()
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{p}: {out:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("unknown mode \"bogus-mode\""),
            "{p}: {out:?}"
        );
    }
}

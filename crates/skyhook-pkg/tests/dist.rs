// SPDX-License-Identifier: Apache-2.0
//! `skyhook-pkg dist` end to end: every package is built, assembled in the image
//! layout, validated, and its binary is static — proven by running it in an empty
//! chroot, where no dynamic loader or library exists. The dist binaries are also
//! proven to ignore the test-only hooks (`SKYHOOK_HOST_ROOT`, `SKYHOOK_HOST_COMMANDS`)
//! and to end cleanly on a non-UTF-8 mode or an unwritable stdout, and to carry no
//! path of the machine that built them.

use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::{Command, Stdio};

const PACKAGES: [&str; 9] = [
    "bind-mount",
    "copy-fail",
    "kdump",
    "nvidia-setup",
    "nvidia-tuned",
    "nvidia-tuning-gke",
    "shellscript",
    "tuned",
    "tuning",
];

use skyhook_pkg_support::empty_root;

use empty_root::{EmptyRoot, chroot_program};

#[test]
fn dist_assembles_static_binaries_that_run_in_an_empty_chroot() {
    let out = tempfile::tempdir().unwrap();
    let dist = out.path().join("dist");
    let stdout = empty_root::dist(env!("CARGO_BIN_EXE_skyhook-pkg"), &[], &dist);
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

    for p in PACKAGES {
        let root = EmptyRoot::holding(&dist.join(p).join("skyhook_dir").join(p), p, std::env::consts::ARCH);
        let out = root.command().arg("--version").output().unwrap();
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
        let out = root.command().arg("bogus-mode").env_clear().output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{p}: {out:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("unknown mode \"bogus-mode\""),
            "{p}: {out:?}"
        );
    }
    for p in PACKAGES {
        ends_cleanly_on_odd_arguments_and_a_full_stdout(&dist.join(p).join("skyhook_dir").join(p));
        carries_no_path_of_this_machine(&dist.join(p).join("skyhook_dir").join(p));
    }
    ignores_the_test_hooks(&dist.join("tuning/skyhook_dir/tuning"));
}

/// The binary names neither this checkout nor cargo's home (the registry's sources):
/// dist remaps both, so another checkout, machine or CI runner builds the same bytes.
fn carries_no_path_of_this_machine(binary: &Path) {
    let bytes = fs::read(binary).unwrap();
    let workspace = fs::canonicalize(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| Path::new(&std::env::var_os("HOME").unwrap()).join(".cargo"));
    for path in [workspace, fs::canonicalize(&cargo_home).unwrap_or(cargo_home)] {
        let needle = path.as_os_str().as_bytes();
        assert!(
            !bytes.windows(needle.len()).any(|w| w == needle),
            "{} holds the path {}",
            binary.display(),
            path.display()
        );
    }
}

/// A non-UTF-8 mode exits 2 with a message; `--help` and `--version` with stdout
/// on /dev/full exit 1 with a message: never a panic (exit 134 with panic=abort).
/// Neither reaches the host: arguments are checked before anything else.
fn ends_cleanly_on_odd_arguments_and_a_full_stdout(binary: &Path) {
    let out = Command::new(binary)
        .arg(std::ffi::OsStr::from_bytes(b"conf\xffig"))
        .env_clear()
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{}: {out:?}", binary.display());
    assert!(
        stderr.contains("is not valid UTF-8") && !stderr.contains("panicked"),
        "{stderr}"
    );
    for flag in ["--help", "--version"] {
        let full = fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
        let out = Command::new(binary)
            .arg(flag)
            .env_clear()
            .stdout(Stdio::from(full))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{} {flag}: {out:?}", binary.display());
        assert!(
            stderr.contains("cannot write to stdout") && !stderr.contains("panicked"),
            "{stderr}"
        );
    }
}

/// A dist binary ignores SKYHOOK_HOST_ROOT and SKYHOOK_HOST_COMMANDS (compiled out
/// with skyhook-core's `test-hooks` feature): in an empty chroot, `tuning config`
/// with both pointing elsewhere writes the chroot's own /etc and nothing elsewhere.
fn ignores_the_test_hooks(tuning: &Path) {
    let jail = tempfile::tempdir().unwrap();
    let j = jail.path();
    fs::copy(tuning, j.join("tuning")).unwrap();
    for dir in ["elsewhere", "evil", "copy/configmaps"] {
        fs::create_dir_all(j.join(dir)).unwrap();
    }
    fs::write(j.join("copy/configmaps/ulimit.conf"), "nofile=65536\n").unwrap();
    let out = Command::new(chroot_program())
        .arg(j)
        .args(["/tuning", "config"])
        .env_clear()
        .env("SKYHOOK_DIR", "/copy")
        .env("SKYHOOK_RESOURCE_ID", "scr_hooks_1.0.0")
        .env("SKYHOOK_HOST_ROOT", "/elsewhere")
        .env("SKYHOOK_HOST_COMMANDS", "/evil")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("host root"), "the hook was honoured: {stderr}");
    let limits = fs::read_to_string(j.join("etc/security/limits.d/zz-skyhook-hooks-tuning.conf")).unwrap();
    assert!(limits.contains("65536"), "{limits}");
    assert_eq!(
        fs::read_dir(j.join("elsewhere")).unwrap().count(),
        0,
        "nothing written under SKYHOOK_HOST_ROOT"
    );
}

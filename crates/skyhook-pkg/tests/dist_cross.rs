// SPDX-License-Identifier: Apache-2.0
//! `skyhook-pkg dist --target <another architecture>`, with a stand-in cross
//! toolchain (`SKYHOOK_CROSS_RUST`: a cargo and a rustc that has the target's
//! standard library): dist picks that toolchain for the target the default one
//! lacks, hands cargo the cross linker and that rustc, and refuses a binary that is
//! not of the target's architecture.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use skyhook_pkg_support::empty_root;

use empty_root::EmptyRoot;

#[test]
fn a_cross_build_gets_the_cross_linker_and_a_binary_of_the_wrong_architecture_fails() {
    let (other, linker) = match std::env::consts::ARCH {
        "aarch64" => ("x86_64-unknown-linux-gnu", "x86_64-linux-gnu-gcc"),
        _ => ("aarch64-unknown-linux-gnu", "aarch64-linux-gnu-gcc"),
    };
    let var = format!("CARGO_TARGET_{}_LINKER", other.to_ascii_uppercase().replace('-', "_"));
    let d = tempfile::tempdir().unwrap();
    let target_dir = d.path().join("target");
    let seen = d.path().join("linker-seen");
    // The stand-in rustc has the target's standard library; the stand-in cargo
    // "builds" by copying this machine's /bin/sh: of the wrong architecture.
    let rust = d.path().join("rust");
    let libdir = d.path().join("rustlib").join(other).join("lib");
    fs::create_dir_all(&rust).unwrap();
    fs::create_dir_all(&libdir).unwrap();
    fs::write(libdir.join("libstd-0123.rlib"), "").unwrap();
    let rustc = rust.join("rustc");
    let stand_ins = [
        (
            rustc.clone(),
            format!(
                "#!/bin/sh\ncase \"$*\" in --version) echo 'rustc 0.0.0 (stand-in)' ;; *) echo '{}' ;; esac\n",
                libdir.display()
            ),
        ),
        (
            rust.join("cargo"),
            format!(
                "#!/bin/sh\nprintf '%s %s' \"${var}\" \"$RUSTC\" > '{seen}'\nmkdir -p '{out}'\ncp /bin/sh '{out}/tuning'\n",
                seen = seen.display(),
                out = target_dir.join(other).join("release").display()
            ),
        ),
    ];
    for (path, text) in stand_ins {
        fs::write(&path, text).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    }

    let out = Command::new(env!("CARGO_BIN_EXE_skyhook-pkg"))
        .args(["dist", "tuning", "--target", other, "--out"])
        .arg(d.path().join("dist"))
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .env("SKYHOOK_CROSS_RUST", &rust)
        .env("CARGO_TARGET_DIR", &target_dir)
        .env_remove(&var)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        fs::read_to_string(&seen).unwrap(),
        format!("{linker} {}", rustc.display()),
        "the cross linker and the cross toolchain's rustc were not passed to cargo"
    );
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "FAIL  tuning ({other}): the binary is built for {}, but the target {other} is",
            std::env::consts::ARCH
        )),
        "{stdout}"
    );
}

/// The published platforms' trees, built for real by one `dist --target all`: each
/// binary is static and of its target's architecture (the table says so), and each
/// runs alone in an empty root — the other architecture's under qemu-user, which
/// itself is static, started explicitly (no binfmt registration needed).
#[test]
fn dist_all_builds_static_trees_for_both_architectures_that_run_in_an_empty_chroot() {
    let d = tempfile::tempdir().unwrap();
    let stdout = empty_root::dist(env!("CARGO_BIN_EXE_skyhook-pkg"), &["--target", "all"], d.path());
    for (arch, triple) in [
        ("x86_64", "x86_64-unknown-linux-gnu"),
        ("aarch64", "aarch64-unknown-linux-gnu"),
    ] {
        for p in [
            "bind-mount",
            "copy-fail",
            "kdump",
            "nvidia-setup",
            "nvidia-tuned",
            "nvidia-tuning-gke",
            "shellscript",
            "tuned",
            "tuning",
        ] {
            assert!(
                stdout
                    .lines()
                    .any(|l| l.starts_with(p) && l.contains(&format!(" {arch} ")) && l.contains(" yes ")),
                "{p} for {arch} missing or not static in:\n{stdout}"
            );
            let root = EmptyRoot::holding(&d.path().join(triple).join(p).join("skyhook_dir").join(p), p, arch);
            let out = root.command().arg("--version").output().unwrap();
            assert!(
                out.status.success() && String::from_utf8_lossy(&out.stdout).starts_with(&format!("{p} ")),
                "{p} for {arch} does not run in an empty chroot: {out:?}"
            );
        }
    }
}

// SPDX-License-Identifier: Apache-2.0
//! `skyhook-pkg dist --target <another architecture>`, with a stand-in cargo (this
//! machine has no Rust standard library for other targets): dist hands cargo the
//! cross linker, and refuses a binary that is not of the target's architecture.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::process::Command;

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
    // The stand-in "builds" by copying this machine's /bin/sh: of the wrong architecture.
    let cargo = d.path().join("cargo");
    fs::write(
        &cargo,
        format!(
            "#!/bin/sh\nprintf '%s' \"${var}\" > '{seen}'\nmkdir -p '{out}'\ncp /bin/sh '{out}/tuning'\n",
            seen = seen.display(),
            out = target_dir.join(other).join("release").display()
        ),
    )
    .unwrap();
    fs::set_permissions(&cargo, fs::Permissions::from_mode(0o755)).unwrap();

    let out = Command::new(env!("CARGO_BIN_EXE_skyhook-pkg"))
        .args(["dist", "tuning", "--target", other, "--out"])
        .arg(d.path().join("dist"))
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .env("CARGO", &cargo)
        .env("CARGO_TARGET_DIR", &target_dir)
        .env_remove(&var)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        fs::read_to_string(&seen).unwrap(),
        linker,
        "the cross linker was not passed to cargo"
    );
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "FAIL  tuning: the binary is built for {}, but the target {other} is",
            std::env::consts::ARCH
        )),
        "{stdout}"
    );
}

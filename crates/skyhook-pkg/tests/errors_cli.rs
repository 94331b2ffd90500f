// SPDX-License-Identifier: Apache-2.0
//! The tool's typed errors as an operator sees them: exit 2 and one `error:` line
//! naming the value, what is wrong with it and what to do, for each command that
//! refuses its input before doing anything. Standard output that cannot be written
//! ends every subcommand the way CLI tools end: quietly by SIGPIPE for a closed pipe
//! (`… | head`), exit 2 naming the failure otherwise.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// Runs `skyhook-pkg <args>` from the workspace root: exit code and stderr.
fn run(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_skyhook-pkg"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .output()
        .unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn bad_input_is_exit_2_with_an_error_naming_it_and_what_to_do() {
    for (args, says) in [
        (
            &["platform", "linux/s390x"][..],
            &["unsupported platform \"linux/s390x\"", "linux/amd64 and linux/arm64"][..],
        ),
        (&["tag", "tuning/v2.1.0"], &["tag \"tuning/v2.1.0\"", "no 'v' prefix"]),
        (
            &["tag", "tunning/2.1.0"],
            &[
                "\"tunning\" is not a package",
                "bind-mount, copy-fail, kdump, nvidia-setup, nvidia-tuned, nvidia-tuning-gke, shellscript, tuned, tuning",
            ],
        ),
        (
            &["notes", "nope", "1.0.0"],
            &["unknown package \"nope\"", "the packages are"],
        ),
        (
            &["notes", "tuning", "9.9.9"],
            &["tuning/CHANGELOG.md: no `## 9.9.9` section", "add it"],
        ),
        (&["dist", "nope"], &["unknown package \"nope\""]),
        (
            &["validate", "no/such/package"],
            &[
                "no/such/package: no such file or directory",
                "give a package directory (source or assembled) or its config.json",
            ],
        ),
        (
            &["validate", "ci", "no/such/package"],
            &[
                "ci: no config.json",
                "no/such/package: no such file or directory",
                "2 of the 2 packages given could not be checked",
            ],
        ),
        (
            &["changed", "--base", "no-such-revision"],
            &["git diff no-such-revision...HEAD failed", "fetch-depth: 0"],
        ),
        (
            &["changed", "--base", "HEAD", "tuning/src/lib.rs"],
            &["give either --base or changed paths, not both"],
        ),
        (
            &["test", "--target", "x86_64-unknown-linux-gnu", "--", "--test-threads=1"],
            &["test harness argument \"--test-threads=1\"", "--jobs N"],
        ),
        (
            &["test", "--target", "riscv64gc-unknown-linux-gnu"],
            &[
                "no Rust standard library for riscv64gc-unknown-linux-gnu",
                "ci/setup-toolchain",
            ],
        ),
    ] {
        let (code, stderr) = run(args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(stderr.starts_with("error: "), "{args:?}: {stderr}");
        for part in says {
            assert!(stderr.contains(part), "{args:?}: {part:?} missing in {stderr}");
        }
    }
}

/// Every subcommand that prints on standard output, runnable here in a moment
/// (`validate` on `dir`, a package assembled in it).
fn printing_commands(dir: &Path) -> Vec<Vec<String>> {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    std::fs::copy(format!("{root}/shellscript/config.json"), dir.join("config.json")).unwrap();
    std::fs::create_dir(dir.join("skyhook_dir")).unwrap();
    for step in ["shellscript", "shellscript_check"] {
        let path = dir.join("skyhook_dir").join(step);
        std::fs::write(&path, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let scr = format!("{root}/crates/skyhook-pkg/tests/lint/grub-without-reboot.yaml");
    [
        &["lint", &scr][..],
        &["lint", "--format", "json", &scr],
        &["profiles", "list"],
        &[
            "profiles",
            "show",
            "--package",
            "nvidia-tuned",
            "--accelerator",
            "h100",
            "--intent",
            "inference",
        ],
        &["validate", dir.to_str().unwrap()],
        &["platform", "linux/amd64"],
        &["tag", "tuning/2.1.0"],
        &["notes", "tuning", "2.1.0"],
        &["changed", "tuning/src/lib.rs"],
    ]
    .iter()
    .map(|args| args.iter().map(ToString::to_string).collect())
    .collect()
}

/// Runs `skyhook-pkg <args>` from the workspace root with `stdout` as its output.
fn run_into(args: &[String], stdout: Stdio) -> Output {
    Command::new(env!("CARGO_BIN_EXE_skyhook-pkg"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .stdout(stdout)
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

#[test]
fn a_closed_pipe_on_stdout_ends_every_subcommand_quietly() {
    let d = tempfile::tempdir().unwrap();
    for args in printing_commands(d.path()) {
        // A pipe whose reader is gone before the tool starts, as `| head` is once it has its lines.
        let (reader, writer) = nix::unistd::pipe().unwrap();
        drop(reader);
        let out = run_into(&args, Stdio::from(writer));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.signal(),
            Some(nix::libc::SIGPIPE),
            "{args:?}: not ended by SIGPIPE ({:?}): {stderr}",
            out.status
        );
        assert!(
            !stderr.contains("panicked") && !stderr.contains("Broken pipe"),
            "{args:?}: {stderr}"
        );
    }
}

#[test]
fn stdout_on_a_full_device_is_exit_2_naming_it() {
    let d = tempfile::tempdir().unwrap();
    for args in printing_commands(d.path()) {
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
        let out = run_into(&args, Stdio::from(full));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("error: cannot write to standard output: No space left on device"),
            "{args:?}: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

/// `test --target-dir` builds where it is told, not in cargo's `target/` (the aarch64
/// step of `.ci/run` builds there beside the native test step): a directory cargo
/// cannot create under a file fails the build at once, named, exit 1.
#[test]
fn test_builds_in_the_target_directory_it_is_given() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let wanted = file.join("target");
    let (code, stderr) = run(&[
        "test",
        "--target",
        "x86_64-unknown-linux-gnu",
        "--locked",
        "--target-dir",
        wanted.to_str().unwrap(),
        "-p",
        "skyhook-core",
    ]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("failed to create directory `{}`", file.display())),
        "{stderr}"
    );
    assert!(
        stderr.contains("the tests for x86_64-unknown-linux-gnu did not build"),
        "{stderr}"
    );
}

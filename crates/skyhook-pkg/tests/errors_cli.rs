// SPDX-License-Identifier: Apache-2.0
//! The tool's typed errors as an operator sees them: exit 2 and one `error:` line
//! naming the value, what is wrong with it and what to do, for each command that
//! refuses its input before doing anything.

use std::process::Command;

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
                "kdump, nvidia-tuned, nvidia-tuning-gke, shellscript, tuned, tuning",
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

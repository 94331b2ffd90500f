// SPDX-License-Identifier: Apache-2.0
//! `skyhook-pkg test --target <triple> [--jobs N] [--target-dir DIR] [--skip-target
//! NAME] [cargo test arguments] [-- harness arguments]`: the workspace's tests built for another target exactly as `dist`
//! builds the packages (the toolchain that has the target's standard library, the
//! cross linker, `+crt-static`), then run **one test per process, N at a time**
//! ([`pool`]). Binaries of another architecture run where the kernel can run them:
//! on such a machine, or under qemu-user registered with binfmt_misc
//! (`ci/with-qemu-binfmt aarch64 skyhook-pkg test --target aarch64-unknown-linux-gnu …`).
//!
//! Why one test per process: under qemu-user, a fork in a multi-threaded guest can
//! deadlock the child before its exec (a forked child waiting on a futex for
//! minutes, the run hung). A test alone in its process (`--test-threads=1`) has only
//! libtest's waiting main thread beside its own, which makes that rare (once in
//! about 900 tests, seen in CI), and several such processes at once use the
//! machine's cores again. A test whose processes all go [`IDLE_LIMIT`] without using
//! the CPU is killed (a deadlock), and so is one still running after
//! [`TEST_LIMIT`]; under emulation a test that went idle or failed is run once
//! more, and passes only if that run passes ([`pool`]): a deadlocked fork can also
//! fail a test, when a time limit of the test's own stops the hung step first.
//! Doctests are not run (cargo runs them only for the host).

mod harness;
mod pool;
mod targets;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::build::{dist, platform};
use crate::error::{TestError, ToolError};
use crate::workspace;
use harness::Harness;
use pool::{Binary, Limits, Test};

/// The cargo setting of the tests' optimisation level, and the level used for tests
/// of another architecture when the caller does not set it: under qemu-user,
/// unoptimised code runs many times slower than natively, and the hostile-input
/// corpora and fault campaigns run the packages' code hundreds of times.
/// `opt-level=1` keeps debug assertions and overflow checks; measured on the aarch64
/// step, its longer build cost less than the run saved (the step's time in
/// `.ci/run`'s table).
const OPT_LEVEL_VAR: &str = "CARGO_PROFILE_TEST_OPT_LEVEL";
const EMULATED_OPT_LEVEL: &str = "1";

/// How long one test may run (under emulation, the longest test of the workspace
/// takes under a minute on the development machine).
const TEST_LIMIT: Duration = Duration::from_secs(15 * 60);

/// How long all of a test's processes may go without using the CPU. No test sleeps
/// that long: it waits for a command that works, or for a sleep it ends itself.
const IDLE_LIMIT: Duration = Duration::from_secs(2 * 60);

/// Builds the tests of `packages` (none: cargo's default members) for `target` with
/// `cargo_args`, none of the integration test targets named in `skip_targets`
/// ([`targets`]), and runs those the harness arguments (given after `--`) choose,
/// `jobs` at a time (default: one per core); true when every test passed.
pub fn run(
    target: &str,
    jobs: Option<usize>,
    packages: &[String],
    cargo_args: &[String],
    skip_targets: &[String],
    harness_args: &[String],
) -> Result<bool, ToolError> {
    let harness = Harness::parse(harness_args)?;
    let emulated = platform::triple_arch(&dist::host_triple()?) != platform::triple_arch(target);
    let mut chosen: Vec<String> = packages.iter().flat_map(|p| ["-p".to_string(), p.clone()]).collect();
    if !skip_targets.is_empty() {
        chosen.extend(targets::chosen(&metadata()?, packages, skip_targets)?);
        outln!("not built: the test targets {}", skip_targets.join(", "));
    }
    chosen.extend_from_slice(cargo_args);
    let Some(binaries) = build(target, emulated, &chosen)? else {
        return Ok(false);
    };
    let mut tests = Vec::new();
    for binary in &binaries {
        for name in list(binary, &harness.selection)? {
            tests.push(Test { binary, name });
        }
    }
    let jobs = jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    outln!(
        "{} tests of {} binaries for {target}, each in its own process, {jobs} at a time",
        tests.len(),
        binaries.len()
    );
    let started = Instant::now();
    let limits = Limits {
        total: TEST_LIMIT,
        idle: IDLE_LIMIT,
        retry: emulated,
    };
    let summary = pool::run(&tests, &harness.mode, jobs, limits);
    let minutes = started.elapsed().as_secs() / 60;
    let seconds = started.elapsed().as_secs() % 60;
    outln!(
        "\n{target}: {} passed, {} failed, {} ignored, in {minutes} min {seconds} s",
        summary.passed,
        summary.failed.len(),
        summary.ignored
    );
    for failed in &summary.failed {
        outln!("    failed: {failed}");
    }
    for passed in &summary.passed_when_run_again {
        outln!("    failed or went idle, then passed when run again: {passed}");
    }
    Ok(summary.failed.is_empty())
}

/// `cargo test --no-run` for `target` (run under emulation when `emulated`): the
/// test binaries it built, by label; `None` when the build failed (cargo has said why).
fn build(target: &str, emulated: bool, cargo_args: &[String]) -> Result<Option<Vec<Binary>>, ToolError> {
    let mut cmd = dist::cargo_for(&workspace::root(), &["test"], target)?;
    if emulated && std::env::var_os(OPT_LEVEL_VAR).is_none() {
        errln!("tests of another architecture, run under emulation: {OPT_LEVEL_VAR}={EMULATED_OPT_LEVEL}");
        cmd.env(OPT_LEVEL_VAR, EMULATED_OPT_LEVEL);
    }
    cmd.args(["--no-run", "--message-format=json-render-diagnostics"])
        .args(cargo_args)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let out = cmd
        .output()
        .map_err(|e| ToolError::spawn(format!("{} test --no-run", cmd.get_program().to_string_lossy()), e))?;
    if !out.status.success() {
        errln!("error: the tests for {target} did not build ({})", out.status);
        return Ok(None);
    }
    let mut binaries = test_binaries(&String::from_utf8_lossy(&out.stdout))?;
    binaries.sort_by(|a, b| a.label.cmp(&b.label));
    Ok(Some(binaries))
}

/// `cargo metadata --no-deps` of the workspace (the cargo that runs this tool).
fn metadata() -> Result<String, ToolError> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = std::process::Command::new(&cargo)
        .args(["metadata", "--no-deps", "--format-version", "1", "--offline"])
        .current_dir(workspace::root())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| ToolError::spawn(format!("{} metadata", cargo.to_string_lossy()), e))?;
    if !out.status.success() {
        return Err(TestError::Metadata { status: out.status }.into());
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The test executables among cargo's JSON messages.
fn test_binaries(messages: &str) -> Result<Vec<Binary>, TestError> {
    let mut binaries = Vec::new();
    for line in messages.lines().filter(|l| !l.trim().is_empty()) {
        let message: Value = serde_json::from_str(line).map_err(|e| TestError::CargoMessage {
            excerpt: line.chars().take(120).collect(),
            why: e.to_string(),
        })?;
        if message["reason"] != "compiler-artifact" || message["profile"]["test"] != true {
            continue;
        }
        let (Some(executable), Some(manifest)) = (message["executable"].as_str(), message["manifest_path"].as_str())
        else {
            continue;
        };
        let dir = Path::new(manifest).parent().unwrap_or(Path::new("/")).to_path_buf();
        let package = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let kind = message["target"]["kind"][0].as_str().unwrap_or("?");
        let name = message["target"]["name"].as_str().unwrap_or("?");
        let label = match kind {
            "lib" | "proc-macro" => format!("{package} lib"),
            "test" => format!("{package} tests/{name}"),
            other => format!("{package} {other} {name}"),
        };
        binaries.push(Binary {
            executable: PathBuf::from(executable),
            dir,
            label,
        });
    }
    Ok(binaries)
}

/// The names of the tests of `binary` that `selection` chooses (`--list`).
fn list(binary: &Binary, selection: &[String]) -> Result<Vec<String>, TestError> {
    let out = binary
        .command()
        .args(["--list", "--format", "terse"])
        .args(selection)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| TestError::List {
            binary: binary.executable.clone(),
            why: e.to_string(),
        })?;
    if !out.status.success() {
        let text = String::from_utf8_lossy(&out.stderr);
        return Err(TestError::List {
            binary: binary.executable.clone(),
            why: format!("{}: {}", out.status, text.chars().take(400).collect::<String>()),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_suffix(": test"))
        .map(str::to_string)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_test_binaries_are_the_artifacts_of_the_test_profile_that_have_an_executable() {
        let messages = r#"{"reason":"compiler-artifact","package_id":"path+file:///w/tuning#2.1.0","manifest_path":"/w/tuning/Cargo.toml","target":{"kind":["test"],"name":"killpoints"},"profile":{"test":true},"executable":"/t/debug/deps/killpoints-1"}
{"reason":"compiler-artifact","manifest_path":"/w/tuning/Cargo.toml","target":{"kind":["lib"],"name":"tuning"},"profile":{"test":false},"executable":null}
{"reason":"compiler-artifact","manifest_path":"/w/crates/skyhook-core/Cargo.toml","target":{"kind":["lib"],"name":"skyhook_core"},"profile":{"test":true},"executable":"/t/debug/deps/skyhook_core-2"}
{"reason":"build-finished","success":true}
"#;
        let binaries = test_binaries(messages).unwrap();
        let found: Vec<(&str, &Path, &Path)> = binaries
            .iter()
            .map(|b| (b.label.as_str(), b.executable.as_path(), b.dir.as_path()))
            .collect();
        assert_eq!(
            found,
            [
                (
                    "tuning tests/killpoints",
                    Path::new("/t/debug/deps/killpoints-1"),
                    Path::new("/w/tuning")
                ),
                (
                    "skyhook-core lib",
                    Path::new("/t/debug/deps/skyhook_core-2"),
                    Path::new("/w/crates/skyhook-core")
                ),
            ]
        );
        let e = test_binaries("not json\n").unwrap_err().to_string();
        assert!(e.contains("not json"), "{e}");
    }
}

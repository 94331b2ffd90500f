// SPDX-License-Identifier: Apache-2.0
//! `skyhook-pkg run` end to end, chrooted into a minimal root that holds only
//! `/bin/sh` (this machine's, with its libraries): a package of shell-script steps
//! runs exactly as the agent would run it, and the test reads the root afterwards.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A root directory with `/bin/sh` and the shared libraries it needs, for a test
/// that chroots (and so must run as root).
fn minimal_root() -> tempfile::TempDir {
    assert!(
        nix::unistd::geteuid().is_root(),
        "this test chroots: run the test suite as root, as CI does"
    );
    let root = tempfile::tempdir().unwrap();
    let sh = fs::canonicalize("/bin/sh").unwrap();
    let mut files = vec![sh.clone()];
    let ldd = Command::new("ldd").arg(&sh).output().expect("ldd");
    for line in String::from_utf8_lossy(&ldd.stdout).lines() {
        if let Some(p) = line.split_whitespace().find(|w| w.starts_with('/')) {
            files.push(PathBuf::from(p));
        }
    }
    for f in &files {
        let dst = root.path().join(f.strip_prefix("/").unwrap());
        fs::create_dir_all(dst.parent().unwrap()).unwrap();
        fs::copy(f, &dst).unwrap();
    }
    fs::create_dir_all(root.path().join("bin")).unwrap();
    let bin_sh = root.path().join("bin/sh");
    if !bin_sh.exists() {
        std::os::unix::fs::symlink(&sh, &bin_sh).unwrap();
    }
    root
}

fn script(dir: &Path, name: &str, body: &str) {
    let p = dir.join("skyhook_dir").join(name);
    fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
    fs::set_permissions(&p, fs::Permissions::from_mode(0o644)).unwrap(); // the agent sets +x itself
}

fn step(name: &str, path: &str, args: &str, idempotence: bool) -> String {
    format!(
        r#"[{{"name":"{name}","path":"{path}","arguments":{args},"returncodes":[0,3],"on_host":true,"idempotence":{idempotence},"upgrade_step":false,"env":{{"STEP_VAR":"from-step"}}}}]"#
    )
}

/// A package directory with an empty `skyhook_dir`.
fn empty_package() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    fs::create_dir_all(d.path().join("skyhook_dir")).unwrap();
    d
}

/// Writes the config.json of the package at `pkg`: each mode with its steps (from [`step`]).
fn write_config(pkg: &Path, name: &str, version: &str, expected: &[&str], modes: &[(&str, String)]) {
    let modes: Vec<String> = modes
        .iter()
        .map(|(mode, steps)| format!("\"{mode}\":{steps}"))
        .collect();
    let config = format!(
        r#"{{"schema_version":"v1","package_name":"{name}","package_version":"{version}","expected_config_files":{},"modes":{{{}}}}}"#,
        serde_json::json!(expected),
        modes.join(",")
    );
    fs::write(pkg.join("config.json"), config).unwrap();
}

/// A package whose steps record what they see into /record under the root.
fn package(version: &str) -> tempfile::TempDir {
    let d = empty_package();
    let record = r#"cm=; IFS= read -r cm < configmaps/greeting
echo "$0 $* dir=$(pwd) SKYHOOK_DIR=$SKYHOOK_DIR ID=$SKYHOOK_RESOURCE_ID SCR=$SCR_VAR STEP=$STEP_VAR PREV=$PREVIOUS_VERSION CUR=$CURRENT_VERSION cm=$cm" >> /record"#;
    script(
        d.path(),
        "act.sh",
        &format!("{record}\necho 'info: skyhook-interrupt-needed: {{\"type\":\"reboot\"}}' >&2"),
    );
    script(d.path(), "act_check.sh", record);
    script(d.path(), "fail.sh", "echo broken >&2; exit 7");
    let modes = [
        ("apply", "act.sh", r#"["apply","env:SCR_VAR"]"#, false),
        ("apply-check", "act_check.sh", r#"["apply-check"]"#, false),
        ("config", "act.sh", r#"["config"]"#, false),
        ("config-check", "act_check.sh", r#"["config-check"]"#, false),
        ("post-interrupt", "act.sh", r#"["post-interrupt"]"#, false),
        (
            "post-interrupt-check",
            "act_check.sh",
            r#"["post-interrupt-check"]"#,
            false,
        ),
        ("upgrade", "act.sh", r#"["upgrade"]"#, false),
        ("upgrade-check", "act_check.sh", r#"["upgrade-check"]"#, false),
        ("uninstall", "fail.sh", "[]", true),
        ("uninstall-check", "act_check.sh", r#"["uninstall-check"]"#, false),
    ]
    .map(|(mode, path, args, idempotence)| (mode, step(mode, path, args, idempotence)));
    write_config(d.path(), "demo", version, &[], &modes);
    d
}

/// Runs `cmd`: whether it succeeded, and stdout then stderr.
fn outcome(cmd: &mut Command) -> (bool, String) {
    let out = cmd.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

fn skyhook_pkg(root: &Path, pkg: &Path, args: &[&str]) -> (bool, String) {
    outcome(
        Command::new(env!("CARGO_BIN_EXE_skyhook-pkg"))
            .arg("run")
            .arg(pkg)
            .args(args)
            .arg("--root")
            .arg(root)
            .args([
                "--configmap",
                "greeting=hello",
                "--env",
                "SCR_VAR=from-scr",
                "--name",
                "my-demo",
            ]),
    )
}

fn record(root: &Path) -> Vec<String> {
    fs::read_to_string(root.join("record"))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn runs_the_lifecycle_chrooted_with_the_agents_environment_and_rules() {
    let root = minimal_root();
    let pkg = package("2.0.0");
    let (ok, out) = skyhook_pkg(root.path(), pkg.path(), &["--lifecycle"]);
    assert!(ok, "{out}");
    let rec = record(root.path());
    let modes: Vec<&str> = rec.iter().map(|l| l.split_whitespace().nth(1).unwrap()).collect();
    assert_eq!(
        modes,
        [
            "apply",
            "apply-check",
            "config",
            "config-check",
            "post-interrupt",
            "post-interrupt-check"
        ]
    );
    let first = &rec[0];
    assert!(
        first.contains("/var/lib/skyhook/local/my-demo-2.0.0-local-"),
        "copy dir: {first}"
    );
    assert!(first.contains("apply from-scr "), "env: argument resolved: {first}");
    assert!(
        first.contains("ID=local_my-demo_2.0.0 SCR=from-scr STEP=from-step PREV= CUR="),
        "{first}"
    );
    assert!(
        first.contains("cm=hello"),
        "configMap readable from the working directory: {first}"
    );
    let dir = first.split("dir=").nth(1).unwrap().split(' ').next().unwrap();
    assert!(
        first.contains(&format!("SKYHOOK_DIR={dir} ")),
        "cwd is the copy dir: {first}"
    );
    assert!(
        out.contains("[interrupt] not carried out locally: none declared in the SCR; the package said its change needs {type: reboot}; nothing declared covers it"),
        "{out}"
    );
    assert!(
        out.contains("post-interrupt-check") && out.contains(" ok"),
        "summary: {out}"
    );

    // Run again: apply and post-interrupt succeeded and are not idempotent, so they
    // are skipped; config always runs; checks always run.
    fs::remove_file(root.path().join("record")).unwrap();
    let (ok, out) = skyhook_pkg(root.path(), pkg.path(), &["apply", "config", "post-interrupt"]);
    assert!(ok, "{out}");
    let modes: Vec<String> = record(root.path())
        .iter()
        .map(|l| l.split_whitespace().nth(1).unwrap().to_string())
        .collect();
    assert_eq!(modes, ["apply-check", "config", "config-check", "post-interrupt-check"]);
    assert!(out.contains("skipped (succeeded before)"), "{out}");

    // A higher version upgrades, with the versions from the history.
    fs::remove_file(root.path().join("record")).unwrap();
    let newer = package("2.1.0");
    let (ok, out) = skyhook_pkg(root.path(), newer.path(), &["--lifecycle"]);
    assert!(ok, "{out}");
    let rec = record(root.path());
    assert!(
        rec[0].contains(" upgrade ") && rec[0].contains("PREV=2.0.0 CUR=2.1.0"),
        "{rec:?}"
    );

    // A failing step stops the sequence; the summary says why; the exit is non-zero.
    let (ok, out) = skyhook_pkg(root.path(), newer.path(), &["uninstall"]);
    assert!(!ok);
    assert!(
        out.contains("FAILED: exit code 7 is not in returncodes [0, 3]") && out.contains("broken"),
        "{out}"
    );
    assert!(
        !out.contains("[uninstall-check/"),
        "the check does not run after a failed action: {out}"
    );
}

#[test]
fn lifecycle_until_interrupt_stops_where_the_agent_carries_out_the_interrupt() {
    let root = minimal_root();
    let pkg = package("2.0.0");
    let (ok, out) = skyhook_pkg(root.path(), pkg.path(), &["--lifecycle", "--until-interrupt"]);
    assert!(ok, "{out}");
    assert_eq!(
        recorded_modes(root.path()),
        ["apply", "apply-check", "config", "config-check"]
    );
    assert!(
        out.contains("[interrupt] stopping here; the package said its change needs: {type: reboot}; carry it out"),
        "{out}"
    );
    // After the interrupt (a reboot, on a real node), post-interrupt resumes.
    fs::remove_file(root.path().join("record")).unwrap();
    let (ok, out) = skyhook_pkg(root.path(), pkg.path(), &["post-interrupt"]);
    assert!(ok, "{out}");
    assert_eq!(recorded_modes(root.path()), ["post-interrupt", "post-interrupt-check"]);
}

/// The modes the steps recorded, in order.
fn recorded_modes(root: &Path) -> Vec<String> {
    record(root)
        .iter()
        .map(|l| l.split_whitespace().nth(1).unwrap().to_string())
        .collect()
}

#[test]
fn sigterm_to_the_tool_is_passed_on_to_the_running_step() {
    let root = minimal_root();
    let pkg = empty_package();
    // dash has no sleep builtin: a bounded busy loop that traps TERM.
    script(
        pkg.path(),
        "wait.sh",
        "trap 'echo TERM > /got-term; exit 143' TERM\necho up > /started\ni=0\nwhile [ $i -lt 50000000 ]; do i=$((i+1)); done\necho finished > /finished",
    );
    write_config(
        pkg.path(),
        "waiter",
        "1.0.0",
        &[],
        &[
            ("apply", step("apply", "wait.sh", "[]", true)),
            ("apply-check", step("apply-check", "wait.sh", "[]", true)),
        ],
    );
    let child = Command::new(env!("CARGO_BIN_EXE_skyhook-pkg"))
        .arg("run")
        .arg(pkg.path())
        .arg("apply")
        .arg("--root")
        .arg(root.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = root.path().join("started");
    for _ in 0..200 {
        if started.exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(started.exists(), "the step did not start");
    unsafe extern "C" {
        fn kill(pid: i32, sig: i32) -> i32;
    }
    // SAFETY: signalling our own child.
    assert_eq!(unsafe { kill(child.id() as i32, 15) }, 0);
    let out = child.wait_with_output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "the tool ends normally with a failed step:\n{text}"
    );
    assert!(root.path().join("got-term").exists(), "the step got SIGTERM:\n{text}");
    assert!(!root.path().join("finished").exists());
    assert!(text.contains("exit code 143 is not in returncodes"), "{text}");
    assert!(!text.contains("[apply-check/"), "the sequence stops: {text}");
}

#[test]
fn refuses_without_a_root() {
    let pkg = package("1.0.0");
    let out = Command::new(env!("CARGO_BIN_EXE_skyhook-pkg"))
        .arg("run")
        .arg(pkg.path())
        .arg("config")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--root /"));
}

/// An SCR with the demo package: interrupt reboot, explicit uninstall enabled.
const SCR: &str = r#"apiVersion: skyhook.nvidia.com/v1alpha1
kind: Skyhook
metadata:
  name: lab
spec:
  packages:
    demo-a:
      version: 2.0.0
      image: example.org/demo:2.0.0
      interrupt: {type: reboot}
      configInterrupts:
        greeting: {type: service, services: [containerd]}
      uninstall: {enabled: true}
      env:
        - {name: SCR_VAR, value: from-yaml}
      configMap:
        greeting: hello-from-scr
"#;

fn run_scr(root: &Path, pkg: &Path, scr: &Path, args: &[&str]) -> (bool, String) {
    outcome(
        Command::new(env!("CARGO_BIN_EXE_skyhook-pkg"))
            .arg("run")
            .arg(pkg)
            .args(["--scr", scr.to_str().unwrap(), "--package", "demo-a", "--root"])
            .arg(root)
            .args(args),
    )
}

#[test]
fn an_scr_entry_drives_the_stages_and_the_node_metadata() {
    let root = minimal_root();
    let pkg = package("2.0.0");
    let scr = root.path().join("scr.yaml");
    fs::write(&scr, SCR).unwrap();
    let (ok, out) = run_scr(
        root.path(),
        pkg.path(),
        &scr,
        &["--lifecycle", "--label", "nvidia.com/gpu.product=H100"],
    );
    assert!(ok, "{out}");
    let rec = record(root.path());
    assert!(
        rec[0].contains("ID=lab_demo-a_2.0.0 SCR=from-yaml") && rec[0].contains("cm=hello-from-scr"),
        "{rec:?}"
    );
    assert!(
        out.contains("[interrupt] not carried out locally: the SCR declares {type: reboot}"),
        "{out}"
    );
    let copies: Vec<_> = fs::read_dir(root.path().join("var/lib/skyhook/lab"))
        .unwrap()
        .flatten()
        .collect();
    assert_eq!(copies.len(), 1, "one copy dir per entry");
    let meta = copies[0].path().join("node-metadata");
    let labels = fs::read_to_string(meta.join("labels.json")).unwrap();
    assert!(labels.contains("\"nvidia.com/gpu.product\": \"H100\""), "{labels}");
    let packages = fs::read_to_string(meta.join("packages.json")).unwrap();
    assert!(
        packages.contains("\"demo-a\"") && !packages.contains("\"node_restart\"") && packages.contains("reboot"),
        "{packages}"
    );

    // Unchanged configMap, same version: nothing runs.
    fs::remove_file(root.path().join("record")).unwrap();
    let (ok, out) = run_scr(root.path(), pkg.path(), &scr, &["--lifecycle"]);
    assert!(ok && out.contains("nothing to run"), "{out}");
    assert!(record(root.path()).is_empty());

    // A changed key with a configInterrupt: config, its interrupt, post-interrupt.
    fs::write(&scr, SCR.replace("hello-from-scr", "changed")).unwrap();
    let (ok, out) = run_scr(root.path(), pkg.path(), &scr, &["--lifecycle"]);
    assert!(ok, "{out}");
    // post-interrupt succeeded before and is not idempotent: the agent's flag skips it.
    assert_eq!(
        recorded_modes(root.path()),
        ["config", "config-check", "post-interrupt-check"]
    );
    assert!(out.contains("[post-interrupt/post-interrupt] skipped"), "{out}");
    assert!(
        out.contains("the SCR declares {type: service, services: [containerd]}"),
        "{out}"
    );
    let copies = fs::read_dir(root.path().join("var/lib/skyhook/lab")).unwrap().count();
    assert_eq!(copies, 1, "the older generation's copy dir was removed");
}

#[test]
fn explicit_uninstall_on_current_operators_and_the_stub_on_older_ones() {
    let root = minimal_root();
    let pkg = empty_package();
    script(
        pkg.path(),
        "un.sh",
        r#"cm=none; [ -f configmaps/greeting ] && cm=present; echo "$1 cm=$cm SCR=$SCR_VAR" >> /record"#,
    );
    write_config(
        pkg.path(),
        "demo",
        "2.0.0",
        &["greeting"],
        &[
            ("uninstall", step("uninstall", "un.sh", r#"["uninstall"]"#, false)),
            (
                "uninstall-check",
                step("uninstall-check", "un.sh", r#"["uninstall-check"]"#, false),
            ),
        ],
    );
    let scr = root.path().join("scr.yaml");
    fs::write(&scr, SCR).unwrap();

    let (ok, out) = run_scr(root.path(), pkg.path(), &scr, &["--lifecycle", "--uninstall"]);
    assert!(ok, "{out}");
    assert_eq!(
        record(root.path()),
        [
            "uninstall cm=present SCR=from-yaml",
            "uninstall-check cm=present SCR=from-yaml"
        ]
    );
    assert!(
        out.contains("[uninstall-interrupt] not carried out locally: the SCR declares {type: reboot}"),
        "{out}"
    );

    fs::remove_file(root.path().join("record")).unwrap();
    let (ok, out) = run_scr(
        root.path(),
        pkg.path(),
        &scr,
        &["--lifecycle", "--uninstall", "--operator", "older"],
    );
    assert!(ok, "{out}");
    assert_eq!(
        record(root.path()),
        ["uninstall cm=none SCR=", "uninstall-check cm=none SCR="]
    );
    assert!(
        !out.contains("uninstall-interrupt"),
        "older operators run no interrupt: {out}"
    );

    fs::write(&scr, SCR.replace("      uninstall: {enabled: true}\n", "")).unwrap();
    let (ok, out) = run_scr(root.path(), pkg.path(), &scr, &["--lifecycle", "--uninstall"]);
    assert!(
        !ok && out.contains("uninstall only entries with `uninstall: {enabled: true}`"),
        "{out}"
    );
}

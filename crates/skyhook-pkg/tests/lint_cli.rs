// SPDX-License-Identifier: Apache-2.0
//! `skyhook-pkg lint` as CI calls it: exit 0 clean, 1 findings, 2 unreadable input
//! (the other files still linted); `--format json` gives every finding with entry,
//! key, line and value; findings by line; `-` reads the SCR from standard input.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn lint(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_skyhook-pkg"))
        .arg("lint")
        .args(args)
        .output()
        .unwrap()
}

/// `skyhook-pkg lint <args>` with `input` on standard input.
fn lint_with_input(args: &[&str], input: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_skyhook-pkg"))
        .arg("lint")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A run that refuses its arguments exits without reading its input.
    if let Err(e) = child.stdin.take().unwrap().write_all(input.as_bytes()) {
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
    }
    child.wait_with_output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn corpus(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/lint")
        .join(name)
        .display()
        .to_string()
}

#[test]
fn exit_codes_tell_clean_findings_and_unreadable_apart() {
    let d = tempfile::tempdir().unwrap();
    let clean = d.path().join("clean.yaml");
    std::fs::write(
        &clean,
        "kind: Skyhook\nmetadata: {name: ok}\nspec:\n  packages:\n    tuning:\n      version: 2.1.0\n      \
         image: ghcr.io/nvidia/skyhook-packages/tuning\n      uninstall: {enabled: true}\n      \
         configMap:\n        sysctl.conf: vm.swappiness=10\n",
    )
    .unwrap();
    let out = lint(&[clean.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));

    let out = lint(&[&corpus("grub-without-reboot.yaml")]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("grub-without-reboot.yaml:15: entry \"tuning\", grub.conf (\"hugepages=4\")"),
        "text findings name file, line, entry and key: {text}"
    );

    let out = lint(&[d.path().join("missing.yaml").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot read the SCR"));
}

#[test]
fn json_findings_carry_entry_key_line_and_value() {
    let out = lint(&["--format", "json", &corpus("wire-spelling.yaml")]);
    assert_eq!(out.status.code(), Some(1));
    let findings: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let f = &findings[0];
    assert_eq!(f["entry"], "tuning");
    assert_eq!(f["key"], "interrupt");
    assert_eq!(f["line"], 12);
    assert!(f["value"].as_str().unwrap().contains("restart_all_services"), "{f}");
    assert!(
        f["message"].as_str().unwrap().contains("not one the SCR accepts"),
        "{f}"
    );
}

#[test]
fn json_values_are_the_values_not_json_strings_of_them() {
    let out = lint(&["--format", "json", &corpus("grub-without-reboot.yaml")]);
    assert_eq!(out.status.code(), Some(1));
    let findings: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let grub = findings
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["key"] == "grub.conf")
        .unwrap_or_else(|| panic!("no grub.conf finding: {findings}"));
    assert_eq!(grub["value"], "hugepages=4", "{grub}");
}

#[test]
fn an_unreadable_scr_does_not_hide_the_findings_of_the_others() {
    let d = tempfile::tempdir().unwrap();
    let missing = d.path().join("missing.yaml");
    let garbage = d.path().join("garbage.yaml");
    std::fs::write(&garbage, "kind: Pod\n").unwrap();
    let out = lint(&[
        missing.to_str().unwrap(),
        &corpus("grub-without-reboot.yaml"),
        garbage.to_str().unwrap(),
    ]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(2), "unreadable input is exit 2: {stderr}");
    assert!(
        stdout.contains("grub-without-reboot.yaml:15: entry \"tuning\", grub.conf"),
        "the readable SCR's findings: {stdout}\n{stderr}"
    );
    assert!(
        stderr.contains(&format!("cannot read the SCR ({})", missing.display())),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("{}: not a Skyhook resource", garbage.display())),
        "{stderr}"
    );
    assert!(
        stderr.contains("2 of the 3 SCR files given could not be checked"),
        "{stderr}"
    );
}

#[test]
fn findings_are_in_the_order_of_the_files_then_by_line() {
    let d = tempfile::tempdir().unwrap();
    let scr = d.path().join("order.yaml");
    // The configMap before the version: each key's finding comes before the next's.
    std::fs::write(
        &scr,
        "kind: Skyhook\nmetadata: {name: order}\nspec:\n  packages:\n    tuning:\n      configMap:\n        \
         grub.conf: hugepages=4\n      image: ghcr.io/nvidia/skyhook-packages/tuning\n      version: 9.9.9\n",
    )
    .unwrap();
    for format in ["text", "json"] {
        let out = lint(&["--format", format, scr.to_str().unwrap(), &corpus("wire-spelling.yaml")]);
        assert_eq!(out.status.code(), Some(1));
        let stdout = text(&out.stdout);
        let places: Vec<(String, u64)> = match format {
            "text" => stdout
                .lines()
                .map(|l| {
                    let mut parts = l.splitn(3, ':');
                    let file = parts.next().unwrap().to_string();
                    (file, parts.next().unwrap().parse().unwrap())
                })
                .collect(),
            _ => serde_json::from_str::<serde_json::Value>(&stdout)
                .unwrap()
                .as_array()
                .unwrap()
                .iter()
                .map(|f| (f["file"].as_str().unwrap().to_string(), f["line"].as_u64().unwrap()))
                .collect(),
        };
        let lines: Vec<u64> = places
            .iter()
            .filter(|(f, _)| f.ends_with("order.yaml"))
            .map(|p| p.1)
            .collect();
        assert!(lines.contains(&7) && lines.contains(&9), "{format}: {stdout}");
        assert!(lines.is_sorted(), "{format}: not by line: {lines:?}\n{stdout}");
        let files: Vec<bool> = places.iter().map(|(f, _)| f.ends_with("order.yaml")).collect();
        assert!(
            files.first() == Some(&true) && files.last() == Some(&false) && files.is_sorted_by(|a, b| a >= b),
            "{format}: not in the order of the files: {stdout}"
        );
    }
}

#[test]
fn a_dash_reads_the_scr_from_standard_input() {
    let scr = std::fs::read_to_string(corpus("grub-without-reboot.yaml")).unwrap();
    let out = lint_with_input(&["-"], &scr);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("<stdin>:15: entry \"tuning\", grub.conf (\"hugepages=4\")"),
        "{stdout}"
    );
    let out = lint_with_input(&["--format", "json", "-"], &scr);
    let findings: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(findings[0]["file"], "<stdin>", "{findings}");

    let out = lint_with_input(&["-", "-"], &scr);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("given more than once"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn warnings_are_marked_and_do_not_fail_the_run() {
    // Only the warning that a 4k or 16k Grace kernel cannot register 512M pages.
    let out = lint(&["--format", "json", &corpus("nvidia-tuned-gb200-512m-pages.yaml")]);
    let findings: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let all = findings.as_array().unwrap();
    assert!(
        !all.is_empty() && all.iter().all(|f| f["severity"] == "warning"),
        "{findings}"
    );
    assert!(
        all[0]["message"].as_str().unwrap().contains("hugepagesz=512M"),
        "{findings}"
    );
    assert_eq!(out.status.code(), Some(0), "warnings only: {findings}");
    let out = lint(&[&corpus("nvidia-tuned-gb200-512m-pages.yaml")]);
    assert!(
        text(&out.stdout).contains("accelerator (\"gb200\"): warning: gb200 nodes are arm64"),
        "{}",
        text(&out.stdout)
    );
    assert_eq!(out.status.code(), Some(0));
}

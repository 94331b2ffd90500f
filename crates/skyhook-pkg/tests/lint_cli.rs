// SPDX-License-Identifier: Apache-2.0
//! `skyhook-pkg lint` as CI calls it: exit 0 clean, 1 findings, 2 unreadable input;
//! `--format json` gives every finding with entry, key, line and value.

use std::path::Path;
use std::process::{Command, Output};

fn lint(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_skyhook-pkg"))
        .arg("lint")
        .args(args)
        .output()
        .unwrap()
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

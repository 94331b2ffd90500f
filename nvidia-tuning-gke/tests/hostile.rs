// SPDX-License-Identifier: Apache-2.0
//! The hostile-input corpus: the configMap keys `accelerator` and `intent`, the
//! environment variable `USE_CONTAINERD` and the agent's environment, fed what a
//! careful attacker would try, on a configured COS node. Each case must exit 2
//! without a panic, print under 64 KiB naming the key or variable (and a bounded
//! excerpt) and leave the node byte-identical (skyhook_testkit::hostile). Each table
//! is data: add a row to add a case.

mod common;

use common::*;
use skyhook_testkit::hostile::{self, Case, Corpus};

/// One bad value: (what it tries, the value, an excerpt the message quotes; empty
/// for bytes a message can only show escaped).
type Row = (&'static str, &'static [u8], &'static str);

/// Values refused in either key.
const NAMES: &[Row] = &[
    ("empty", b"", "is empty"),
    ("blank", b" \n\t\n", "is empty"),
    ("NUL byte", b"h100\0", ""),
    ("not UTF-8", b"h100\xff\xfe", ""),
    ("two names", b"h100\ngb200\n", "the value must be one word"),
    ("shell metacharacters", b"h100;reboot", "h100;reboot"),
    ("path traversal", b"../../etc/shadow", "../../etc/shadow"),
    ("glob", b"*", "*"),
    ("escape sequence", b"h100\x1b[2J", ""),
    ("one 10 KB name", &[b'a'; 10_000], "aaaaaaaaaa"),
];

fn configured() -> Node {
    let mut n = cos();
    n.env("USE_CONTAINERD", "true");
    select(&n, "gb200", "inference");
    run(&n, "config", 0);
    n
}

fn corpus(cases: Vec<Case>) -> usize {
    let n = configured();
    let report = Corpus::new(&n).run(&cases);
    eprintln!("nvidia-tuning-gke corpus: {} case(s)", report.cases);
    report.assert_passed();
    report.cases
}

#[test]
fn hostile_accelerator_and_intent_values_are_refused() {
    let mut cases = Vec::new();
    for mode in ["config", "config-check", "post-interrupt-check"] {
        for key in ["accelerator", "intent"] {
            for (what, value, excerpt) in NAMES {
                cases.push(
                    Case::new(&format!("{mode} {key}: {what}"), mode)
                        .key(key, value)
                        .says(excerpt),
                );
            }
        }
    }
    assert_eq!(corpus(cases), 60);
}

#[test]
fn hostile_use_containerd_values_are_refused() {
    let values: [(&str, std::ffi::OsString, &str); 5] = [
        ("yes", "yes".into(), "\"yes\""),
        ("1", "1".into(), "\"1\""),
        ("TRUE;reboot", "TRUE;reboot".into(), "TRUE;reboot"),
        ("100k characters", "t".repeat(100_000).into(), "tttttttttt"),
        (
            "not UTF-8",
            std::os::unix::ffi::OsStringExt::from_vec(b"tr\xffue".to_vec()),
            "",
        ),
    ];
    let cases: Vec<Case> = values
        .into_iter()
        .map(|(what, value, excerpt)| {
            Case::new(&format!("USE_CONTAINERD {what}"), "config")
                .env("USE_CONTAINERD", value)
                .says(excerpt)
        })
        .collect();
    assert_eq!(corpus(cases), 5);
}

#[test]
fn configmap_files_that_are_not_plain_values_are_refused() {
    let mut cases = Vec::new();
    for key in ["accelerator", "intent"] {
        cases.extend(hostile::file_cases(key, "config", "h100"));
    }
    assert_eq!(corpus(cases), 10);
}

#[test]
fn hostile_environment_is_refused() {
    assert!(corpus(hostile::environment_cases("config")) > 15);
}

#[test]
fn damaged_records_are_refused_naming_them() {
    let n = configured();
    let cases = hostile::every_record_cases(&n, &["config", "uninstall"]);
    assert!(corpus(cases) > 0);
}

#[test]
fn hostile_node_metadata_never_hangs_a_step() {
    let cases = hostile::node_metadata_cases("config", 2, &[("accelerator", "auto")]);
    assert!(corpus(cases) > 0);
}

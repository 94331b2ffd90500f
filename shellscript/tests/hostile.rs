// SPDX-License-Identifier: Apache-2.0
//! The hostile-input corpus: the stage scripts and the settings the
//! package reads, fed what a careful attacker would try. The node's `config.sh`
//! changes the node when it runs, so a case that lets it run shows up. Each case must
//! exit 2 without a panic, print under 64 KiB naming the key or variable (and the
//! value) and leave the node byte-identical (skyhook_testkit::hostile). Each table
//! is data: add a row to add a case.

mod common;

use common::*;
use skyhook_testkit::hostile::{self, Case, Corpus};

/// A script that changes the node: it must never run on bad input.
const CONFIG: &str = "#!/bin/sh\necho ran > \"$SKYHOOK_HOST_ROOT/ran\"\n";

/// Scripts refused before anything runs: (what it tries, the script, an excerpt).
const SCRIPTS: &[(&str, &[u8], &str)] = &[
    (
        "CRLF line endings",
        b"#!/bin/sh\r\necho ran > \"$SKYHOOK_HOST_ROOT/ran\"\r\n",
        "dos2unix",
    ),
    (
        "BOM",
        b"\xef\xbb\xbf#!/bin/sh\necho ran > \"$SKYHOOK_HOST_ROOT/ran\"\n",
        "config.sh",
    ),
    ("shebang alone", b"#!\necho ran > \"$SKYHOOK_HOST_ROOT/ran\"\n", "#!"),
    (
        "relative interpreter",
        b"#!bash\necho ran > \"$SKYHOOK_HOST_ROOT/ran\"\n",
        "bash",
    ),
];

/// Bad durations, tried for both duration settings.
const DURATIONS: &[&str] = &[
    "ten minutes",
    "-1",
    "1e400",
    "inf",
    "NaN",
    "99999999999999999999h",
    "1.5.5",
    "5d",
    "5 m",
    "$(reboot)",
];

fn corpus(cases: Vec<Case>) {
    let n = node();
    n.configmap("config.sh", CONFIG).configmap("upgrade.sh", CONFIG);
    let report = Corpus::new(&n).run(&cases);
    eprintln!("shellscript corpus: {} case(s)", report.cases);
    report.assert_passed();
}

#[test]
fn scripts_that_would_be_misread_are_refused() {
    let cases = SCRIPTS
        .iter()
        .map(|(what, script, excerpt)| {
            Case::new(&format!("config.sh: {what}"), "config")
                .key("config.sh", script)
                .says(excerpt)
        })
        .collect();
    corpus(cases);
}

#[test]
fn configmap_files_that_are_not_plain_values_are_refused() {
    corpus(hostile::file_cases("config.sh", "config", "# a comment line\n"));
}

#[test]
fn bad_settings_are_refused() {
    let mut cases = Vec::new();
    for var in ["SHELLSCRIPT_TIMEOUT", "SHELLSCRIPT_GRACE_PERIOD"] {
        for value in DURATIONS {
            cases.push(
                Case::new(&format!("{var}={value}"), "config")
                    .env(var, *value)
                    .says(value),
            );
        }
        cases.push(Case::new(&format!("{var} 100k characters"), "config").env(var, "9".repeat(100_000) + "x"));
    }
    corpus(cases);
}

#[test]
fn hostile_environment_is_refused() {
    let mut cases = hostile::environment_cases("config");
    cases.extend(hostile::version_cases("upgrade"));
    corpus(cases);
}

// SPDX-License-Identifier: Apache-2.0
//! The hostile-input corpus: the environment variable `ALLOW_LOADED_MODULE` in
//! every mode that reads it, configMap files that are not plain values (the
//! package reads no key, but the agent's directory is read), the agent's
//! environment and damaged records, on a configured node (it reads no node
//! metadata). Each case must exit 2 (1 for a damaged record) without a panic, print
//! under 64 KiB naming the variable, key or record (and a bounded excerpt) and leave
//! the node byte-identical (skyhook_testkit::hostile). Each table is data: add a row
//! to add a case.

mod common;

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

use common::*;
use skyhook_testkit::hostile::{self, Case, Corpus};

fn configured() -> Node {
    let n = node_with(Some(1));
    run(&n, "config", 0);
    n
}

fn corpus(cases: Vec<Case>) -> usize {
    let n = configured();
    let report = Corpus::new(&n).run(&cases);
    eprintln!("copy-fail corpus: {} case(s)", report.cases);
    report.assert_passed();
    report.cases
}

#[test]
fn hostile_allow_loaded_module_values_are_refused() {
    let values: [(&str, OsString, &str); 7] = [
        ("yes", "yes".into(), "\"yes\""),
        ("1", "1".into(), "\"1\""),
        ("TRUE", "TRUE".into(), "\"TRUE\""),
        ("true;reboot", "true;reboot".into(), "true;reboot"),
        ("escape sequence", "true\x1b[2J".into(), "true"),
        ("100k characters", "t".repeat(100_000).into(), "tttttttttt"),
        ("not UTF-8", OsString::from_vec(b"tr\xffue".to_vec()), ""),
    ];
    let mut cases = Vec::new();
    for mode in ["config", "config-check", "post-interrupt-check"] {
        for (what, value, excerpt) in &values {
            cases.push(
                Case::new(&format!("{mode} ALLOW_LOADED_MODULE {what}"), mode)
                    .env("ALLOW_LOADED_MODULE", value.clone())
                    .says(excerpt),
            );
        }
    }
    assert_eq!(corpus(cases), 21);
}

#[test]
fn configmap_files_that_are_not_plain_values_are_refused() {
    assert_eq!(
        corpus(hostile::file_cases("modprobe.conf", "config", "install x /bin/sh\n")),
        5
    );
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

// SPDX-License-Identifier: Apache-2.0
//! The hostile-input corpus: every configMap key and environment variable
//! the package reads, fed what a careful attacker would try, on a node where apply
//! and config already ran. Each case must exit 2 without a panic, print under 64 KiB
//! naming the key (and an excerpt of the value) and leave the node byte-identical
//! (skyhook_testkit::hostile). Each table is data: add a row to add a case.

mod common;

use common::*;
use skyhook_core::runtime::configmap::MAX_VALUE_BYTES;
use skyhook_testkit::Node;
use skyhook_testkit::hostile::{self, Case, Corpus};

/// One bad `crashkernel` value: (what it tries, the value, an excerpt the message quotes;
/// empty for bytes a message can only show escaped).
type Row = (&'static str, &'static [u8], &'static str);

const CRASHKERNEL: &[Row] = &[
    ("; on the kernel line", b"256M;reboot", "256M;reboot"),
    ("|", b"256M|x", "256M|x"),
    ("&", b"256M&x", "256M&x"),
    ("{", b"256M{x}", "256M{x}"),
    ("<", b"256M<x", "256M<x"),
    (">", b"256M>x", "256M>x"),
    ("#", b"256M#x", "256M#x"),
    ("inline comment", b"256M # note", "256M # note"),
    ("$(…)", b"$(reboot)", "reboot"),
    ("${…}", b"${GRUB_CMDLINE_LINUX}", "GRUB_CMDLINE_LINUX"),
    ("backtick", b"`reboot`", "reboot"),
    ("double quote", b"256M\" quiet \"", "quiet"),
    ("single quote", b"'256M'", "256M"),
    ("backslash", b"256M\\", "256M"),
    ("*", b"256M*", "256M*"),
    ("a second argument", b"256M init=/bin/sh", "init=/bin/sh"),
    ("two lines", b"256M\n512M\n", "512M"),
    ("NUL byte", b"256M\0", "256M"),
    ("CR inside", b"256M\r512M", "512M"),
    ("not UTF-8", b"256M\xff", ""),
    ("BOM", b"\xef\xbb\xbf256M", "256M"),
    ("prefix", b"crashkernel=256M", "crashkernel=256M"),
    ("unit MB", b"256MB", "256MB"),
    ("zero", b"0", "0"),
    ("leading zero", b"0256M", "0256M"),
    ("more than half the memory", b"40G", "40G"),
    (
        "beyond 64 bits",
        b"99999999999999999999999M",
        "99999999999999999999999M",
    ),
    ("range without size", b"1G-4G", "1G-4G"),
    ("range end below start", b"4G-1G:256M", "4G-1G:256M"),
    ("traversal", b"../../etc/shadow", "../../etc/shadow"),
    ("root", b"/", "/"),
];

fn configured(distro: Distro) -> Node {
    let node = node(distro);
    node.run("apply").expect_code(0);
    node.configmap("crashkernel", "256M")
        .configmap("kdump.conf", "path /var/crash\nUSE_KDUMP=1\n");
    node.run("config").expect_code(0);
    node
}

fn corpus(distro: Distro, cases: Vec<Case>) {
    let node = configured(distro);
    let report = Corpus::new(&node).run(&cases);
    eprintln!("kdump corpus: {} case(s)", report.cases);
    report.assert_passed();
}

fn crashkernel_cases() -> Vec<Case> {
    let mut cases: Vec<Case> = CRASHKERNEL
        .iter()
        .map(|(what, value, excerpt)| {
            let case = Case::new(&format!("crashkernel: {what}"), "config").key("crashkernel", value);
            if excerpt.is_empty() { case } else { case.says(excerpt) }
        })
        .collect();
    // Over the 1 MiB configMap limit the value is refused before it is parsed (the
    // message names the key and the limit); under it, the parser quotes an excerpt.
    cases.push(
        Case::new("crashkernel: 10 MB value", "config")
            .key("crashkernel", "256M;".repeat(2 << 20))
            .says(&MAX_VALUE_BYTES.to_string()),
    );
    cases.push(
        Case::new("crashkernel: 900 KB value", "config")
            .key("crashkernel", "256M;".repeat((900 << 10) / 5))
            .says("256M;256M;"),
    );
    cases.push(
        Case::new("crashkernel: 100k lines", "config")
            .key("crashkernel", "256M\n".repeat(100_000))
            .says("256M"),
    );
    cases
}

#[test]
fn crashkernel_values_grub_or_a_shell_acts_on_are_refused_on_debian() {
    corpus(UBUNTU, crashkernel_cases());
}

#[test]
fn crashkernel_values_grub_or_a_shell_acts_on_are_refused_with_grubby() {
    corpus(RHEL, crashkernel_cases());
}

#[test]
fn configmap_files_that_are_not_plain_values_are_refused() {
    let mut cases = hostile::file_cases("crashkernel", "config", "          ");
    cases.extend(hostile::file_cases("kdump.conf", "config", "# a comment line\n"));
    corpus(UBUNTU, cases);
}

#[test]
fn hostile_environment_is_refused() {
    let mut cases = hostile::environment_cases("config");
    cases.extend(
        hostile::environment_cases("uninstall")
            .into_iter()
            .filter(|c| c.name.starts_with("SKYHOOK_DIR")),
    );
    cases.extend(hostile::package_manager_cases("uninstall"));
    corpus(UBUNTU, cases);
}

#[test]
fn damaged_records_are_refused_naming_them() {
    for distro in [UBUNTU, RHEL] {
        let node = configured(distro);
        let cases = hostile::every_record_cases(&node, &["config", "uninstall"]);
        let report = Corpus::new(&node).run(&cases);
        eprintln!("kdump record corpus: {} case(s)", report.cases);
        report.assert_passed();
    }
}

// SPDX-License-Identifier: Apache-2.0
//! The hostile-input corpus: every configMap key form and environment
//! variable the package reads, fed what a careful attacker would try, on a node where
//! apply and config already ran. Each case must exit 2 without a panic, print under
//! 64 KiB naming the key (the line and an excerpt where there is one) and leave the
//! node byte-identical (skyhook_testkit::hostile). Each table is data: add a row to
//! add a case.

mod common;

use common::*;
use skyhook_testkit::Node;
use skyhook_testkit::hostile::{self, Case, Corpus, ValueRow};

/// Bad values, one per row (see [`ValueRow`]).
const VALUES: &[ValueRow] = &[
    (
        "profile name with traversal",
        "tuned_profile",
        b"../../etc/shadow",
        1,
        "../../etc/shadow",
    ),
    ("profile name /", "tuned_profile", b"/", 1, "/"),
    (
        "profile name with ;",
        "tuned_profile",
        b"custom_profile;reboot",
        1,
        "custom_profile;reboot",
    ),
    ("profile name with $()", "tuned_profile", b"$(reboot)", 1, "reboot"),
    (
        "no such profile",
        "tuned_profile",
        b"no-such-profile",
        1,
        "no-such-profile",
    ),
    (
        "profile name with NUL",
        "tuned_profile",
        b"custom_profile\0",
        1,
        "custom_profile",
    ),
    (
        "profile name with BOM",
        "tuned_profile",
        b"\xef\xbb\xbfcustom_profile",
        1,
        "custom_profile",
    ),
    ("profile name not UTF-8", "tuned_profile", b"custom\xff", 1, ""),
    ("option before a section", "custom_profile", b"x=1\n[main]\n", 1, "x=1"),
    (
        "NUL in a profile",
        "custom_profile",
        b"[main]\nsummary=a\0b\n",
        2,
        "summary",
    ),
    (
        "BOM before a profile",
        "custom_profile",
        b"\xef\xbb\xbf[main]\nsummary=x\n",
        1,
        "[main]",
    ),
    ("profile not UTF-8", "custom_profile", b"[main]\nsummary=\xff\n", 2, ""),
    (
        "missing include",
        "custom_profile",
        b"[main]\ninclude=no-such-profile\n",
        2,
        "no-such-profile",
    ),
    (
        "missing script",
        "custom_profile",
        b"[script]\nscript=/nonexistent/run\n",
        2,
        "/nonexistent/run",
    ),
    (
        "; on the kernel line",
        "custom_profile",
        b"[bootloader]\ncmdline_x=quiet;reboot\n",
        2,
        "quiet;reboot",
    ),
    (
        "$() on the kernel line",
        "custom_profile",
        b"[bootloader]\ncmdline_x=$(reboot)\n",
        2,
        "reboot",
    ),
    (
        "# on the kernel line",
        "custom_profile",
        b"[bootloader]\ncmdline_x=a#b\n",
        2,
        "a#b",
    ),
    (
        "` on the kernel line",
        "custom_profile",
        b"[bootloader]\ncmdline_x=`reboot`\n",
        2,
        "reboot",
    ),
    (
        "ESC in a profile",
        "custom_profile",
        b"[main]\nsummary=a\x1bb\n",
        2,
        "summary",
    ),
    (
        "CR inside a profile line",
        "custom_profile",
        b"[main]\nsummary=a\rinclude=x\n",
        2,
        "summary",
    ),
    (
        "$( inside a tuned expansion",
        "custom_profile",
        b"[bootloader]\ncmdline=isolcpus=${f:exec:$(reboot)}\n",
        2,
        "isolcpus",
    ),
    (
        "unclosed tuned expansion",
        "custom_profile",
        b"[bootloader]\ncmdline=isolcpus=${isolated_cores\n",
        2,
        "isolcpus",
    ),
    (
        "quote on the kernel line",
        "custom_profile",
        b"[bootloader]\ncmdline=a='b'\n",
        2,
        "a='b'",
    ),
    (
        "; in the initrd image name",
        "custom_profile",
        b"[bootloader]\ninitrd_dst_img=/boot/x;reboot\n",
        2,
        "initrd_dst_img",
    ),
    (
        "hugepagesz= that is no size",
        "custom_profile",
        b"[bootloader]\ncmdline_hp=hugepagesz=2Mfoo hugepages=4\n",
        2,
        "hugepagesz=2Mfoo is not a huge page size",
    ),
    (
        "; in a disabled bootloader unit",
        "custom_profile",
        b"[kargs]\ntype=bootloader\nenabled=false\ncmdline=quiet;reboot\n",
        4,
        "quiet;reboot",
    ),
    (
        "line without =",
        "custom_profile",
        b"[main]\nnot an option\n",
        2,
        "not an option",
    ),
];

/// What core says about a value over its 1 MiB limit.
const OVER_LIMIT: &str = "larger than the limit";

/// Oversized values: over the 1 MiB value limit core refuses them before any parsing;
/// just under it the package's own message must still name the key and the line, and
/// a list of problems stays bounded ("… and N more").
fn size_cases() -> Vec<Case> {
    const UNDER: usize = 1_000_000;
    let mut cases = Vec::new();
    for key in ["tuned_profile", "custom_profile"] {
        cases.push(
            Case::new(&format!("{key}: one 10 MB line"), "config")
                .key(key, "x".repeat(10 << 20))
                .says(OVER_LIMIT),
        );
    }
    cases.push(
        Case::new("tuned_profile: one 1 MB name", "config")
            .key("tuned_profile", "x".repeat(UNDER))
            .line(1)
            .says("bytes long"),
    );
    cases.push(
        Case::new("custom_profile: one 1 MB line", "config")
            .key("custom_profile", "x".repeat(UNDER))
            .line(1)
            .says("before any [section]"),
    );
    let bad_lines = |n: usize| format!("[main]\n{}", "bogus line\n".repeat(n));
    cases.push(
        Case::new("custom_profile: 100k bad lines", "config")
            .key("custom_profile", bad_lines(100_000))
            .says(OVER_LIMIT),
    );
    cases.push(
        Case::new("custom_profile: 90k bad lines", "config")
            .key("custom_profile", bad_lines(90_000))
            .line(2)
            .says("bogus line")
            .says("more"),
    );
    let names = |n: usize| "no-such-profile\n".repeat(n);
    cases.push(
        Case::new("tuned_profile: 100k names", "config")
            .key("tuned_profile", names(100_000))
            .says(OVER_LIMIT),
    );
    cases.push(
        Case::new("tuned_profile: 60k names", "config")
            .key("tuned_profile", names(60_000))
            .line(1)
            .says("no-such-profile")
            .says("more"),
    );
    cases
}

/// Key names that are no usable profile or script name: (what it tries, the key).
const KEYS: &[(&str, &str)] = &[
    ("name starting with -", "-bad"),
    ("hidden name", ".hidden"),
    ("tuned's own directory", "profiles"),
    ("tuned's scripts directory", "scripts"),
    ("tuned's active_profile", "active_profile"),
    ("tuned's recommend.d", "recommend.d"),
    ("space in the name", "a b"),
    ("shell in the name", "x$(reboot)"),
    ("script named ..", ".._script"),
    ("script named .", "._script"),
    ("hidden script name", ".x_script"),
    ("script name starting with -", "-x_script"),
    ("newline in the name", "a\nb"),
];

/// How a message quotes a key (Rust's `{:?}` escapes).
fn quoted(key: &str) -> String {
    format!("{key:?}")
}

fn configured() -> Node {
    let node = debian(Some("2.21.0"));
    readme_configmap(&node);
    node.run("config").expect_code(0);
    node
}

fn corpus(cases: Vec<Case>) {
    let node = configured();
    let report = Corpus::new(&node).run(&cases);
    eprintln!("tuned corpus: {} case(s)", report.cases);
    report.assert_passed();
}

#[test]
fn hostile_values_are_refused() {
    let mut cases = hostile::value_cases(VALUES, "config");
    cases.extend(size_cases());
    corpus(cases);
}

#[test]
fn hostile_key_names_are_refused() {
    let cases = KEYS
        .iter()
        .map(|(what, key)| {
            Case::new(&format!("key {what}"), "config")
                .input(hostile::Input::Key(key.to_string(), b"[main]\nsummary=x\n".to_vec()))
                .says(&quoted(key))
        })
        .collect();
    corpus(cases);
}

#[test]
fn configmap_files_that_are_not_plain_values_are_refused() {
    let mut cases = hostile::file_cases("tuned_profile", "config", "          ");
    cases.extend(hostile::file_cases("custom_profile", "config", "# a comment line\n"));
    cases.extend(hostile::file_cases("ai_init_script", "config", "# a comment line\n"));
    corpus(cases);
}

#[test]
fn hostile_environment_is_refused() {
    let mut cases = hostile::environment_cases("config");
    cases.extend(hostile::package_manager_cases("uninstall"));
    cases.extend(hostile::version_cases("upgrade"));
    corpus(cases);
}

#[test]
fn damaged_records_are_refused_naming_them() {
    let node = configured();
    let cases = hostile::every_record_cases(&node, &["config", "uninstall"]);
    let report = Corpus::new(&node).run(&cases);
    eprintln!("tuned record corpus: {} case(s)", report.cases);
    report.assert_passed();
}

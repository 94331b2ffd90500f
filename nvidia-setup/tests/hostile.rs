// SPDX-License-Identifier: Apache-2.0
//! The hostile-input corpus: `service`, `accelerator` and every environment
//! variable fed what a careful attacker would try, and the package's record
//! damaged. Each case must exit 2 (1 for node state such as a damaged record)
//! without a panic, print under 64 KiB naming the key or variable (and a bounded
//! excerpt where there is one) and leave the node byte-identical
//! (skyhook_testkit::hostile).

mod common;

use common::*;
use skyhook_testkit::hostile::{self, Case, Corpus};

/// Bad configMap values: (what it tries, key, value, excerpt the message quotes;
/// empty for bytes a message can only show escaped). A value of several lines is
/// also named by its line.
const VALUES: &[(&str, &str, &[u8], &str)] = &[
    ("upper case", "service", b"EKS", "EKS"),
    ("unknown", "service", b"gke", "gke"),
    ("dot-dot", "service", b"../eks", "../eks"),
    ("shell", "service", b"eks$(reboot)", "$(reboot)"),
    ("two words", "service", b"eks bcm", ""),
    ("NUL byte", "service", b"ek\0s", ""),
    ("not UTF-8", "service", b"\xff\xfe", ""),
    ("empty", "service", b"", "empty"),
    ("unknown", "accelerator", b"b200", "b200"),
    ("not shipped with the service", "accelerator", b"vr200", "vr200"),
    ("shell", "accelerator", b"h100;reboot", "h100;reboot"),
    ("blank", "accelerator", b" \n", "empty"),
];

/// The corpus of [`VALUES`] for `mode`, and a value of two lines.
fn value_cases(mode: &str) -> Vec<Case> {
    let mut cases: Vec<Case> = VALUES
        .iter()
        .map(|(what, key, value, excerpt)| {
            let c = Case::new(&format!("{key}: {what}"), mode).key(key, value).says(key);
            if excerpt.is_empty() { c } else { c.says(excerpt) }
        })
        .collect();
    cases.push(
        Case::new("service: two lines", mode)
            .key("service", "eks\nbcm")
            .line(2)
            .says("bcm"),
    );
    cases
}

/// Bad environment values: (variable, value, excerpt).
const ENV: &[(&str, &str, &str)] = &[
    ("NVIDIA_SETUP_INSTALL_KERNEL", "True", "True"),
    ("NVIDIA_SETUP_INSTALL_KERNEL", "1", "\"1\""),
    ("NVIDIA_SETUP_KERNEL_ALLOW_NEWER", "yes", "yes"),
    ("NVIDIA_PIN_KERNEL", "$(reboot)", "$(reboot)"),
    ("NVIDIA_SETUP_APT_UPGRADE", "on", "on"),
    ("SETUP_LUSTRE", "true", "Lustre"),
    ("NVIDIA_KERNEL", "../../etc/shadow", "../../etc/shadow"),
    ("NVIDIA_KERNEL", "6.17.0-1019-aws; reboot", "reboot"),
    ("NVIDIA_KERNEL", "6.17.0\n-1019", ""),
    ("NVIDIA_KERNEL", "linux-image-6.17.0", "linux-image"),
    ("NVIDIA_EFA", "1.48.0 && curl x|sh", "curl"),
    ("NVIDIA_LUSTRE", "--upload-pack=touch /x", "upload-pack"),
];

#[test]
fn hostile_values_are_refused_and_the_node_is_unchanged() {
    let n = node();
    let mut cases = value_cases("apply");
    cases.extend(value_cases("apply-check"));
    for (name, value, excerpt) in ENV {
        for mode in ["apply", "post-interrupt-check"] {
            let c = Case::new(&format!("{name}={value:?}"), mode)
                .env(name, *value)
                .says(name);
            cases.push(if excerpt.is_empty() { c } else { c.says(excerpt) });
        }
    }
    let huge = "6".repeat(100_000);
    cases.push(
        Case::new("NVIDIA_KERNEL of 100k", "apply")
            .env("NVIDIA_KERNEL", huge)
            .says("100000 bytes"),
    );
    cases.push(
        Case::new("service of 100k", "apply")
            .key("service", "e".repeat(100_000))
            .says("100000 bytes"),
    );
    for key in ["service", "accelerator"] {
        cases.extend(hostile::file_cases(key, "apply", "eks"));
    }
    cases.extend(hostile::environment_cases("apply"));
    cases.extend(hostile::environment_cases("uninstall"));
    cases.extend(hostile::package_manager_cases("apply"));
    Corpus::new(&n).run(&cases).assert_passed();
}

#[test]
fn a_damaged_record_fails_naming_it_and_changes_nothing() {
    let n = node();
    n.file("/etc/apt/preferences.d/.keep", "");
    let mut n = n;
    n.env("NVIDIA_PIN_KERNEL", "true");
    run(&n, "apply", 0);
    // The node no longer satisfies the target, so apply reads the record again.
    let cases = hostile::every_record_cases(&n, &["apply", "uninstall"]);
    Corpus::new(&n).run(&cases).assert_passed();
}

// SPDX-License-Identifier: Apache-2.0
//! The hostile-input corpus: `source` and `target` (and the two assertions) fed what
//! a careful attacker would try, on a configured node. Each case must exit 2 (1 for
//! node state such as a planted link) without a panic, print under 64 KiB naming the
//! key (and a bounded excerpt where there is one) and leave the node byte-identical
//! (skyhook_testkit::hostile).

mod common;

use common::*;
use skyhook_testkit::hostile::{self, Case, Corpus, Input};

/// One bad path: (what it tries, the value, an excerpt the message quotes; empty
/// for bytes a message can only show escaped).
type Row = (&'static str, &'static [u8], &'static str);

const PATHS: &[Row] = &[
    ("relative", b"mnt/data", "mnt/data"),
    ("dot-dot", b"/mnt/../etc", "/mnt/../etc"),
    ("dot", b"/mnt/./data", "/mnt/./data"),
    ("double slash", b"/mnt//data", "/mnt//data"),
    ("trailing slash", b"/mnt/data/", "/mnt/data/"),
    ("NUL byte", b"/mnt/da\0ta", ""),
    ("second line", b"/mnt/data\n/etc\n", "/etc"),
    ("CR", b"/mnt/data\r/etc", ""),
    ("not UTF-8", b"/mnt/\xff\xfe", ""),
    ("the root", b"/", "\"/\""),
    ("/proc", b"/proc", "/proc"),
    ("under /sys", b"/sys/kernel", "/sys/kernel"),
    ("under /dev", b"/dev/shm", "/dev/shm"),
    ("a space", b"/mnt/my data", "data"),
    ("shell metacharacters", b"/mnt/$(reboot)", "$(reboot)"),
    ("a backslash", b"/mnt/a\\x2d", "a\\\\x2d"),
    ("a glob", b"/mnt/*", "/mnt/*"),
    ("empty", b"", ""),
    ("blank", b"  \n", ""),
];

fn path_cases(key: &str, mode: &str) -> Vec<Case> {
    let mut cases: Vec<Case> = PATHS
        .iter()
        .map(|(what, value, excerpt)| {
            let c = Case::new(&format!("{key}: {what}"), mode).key(key, value);
            if excerpt.is_empty() { c } else { c.says(excerpt) }
        })
        .collect();
    let long = format!("/{}", "a".repeat(100_000));
    cases.push(
        Case::new(&format!("{key}: 100k characters"), mode)
            .key(key, long)
            .says("bytes"),
    );
    let name = format!("/mnt/{}", "n".repeat(256));
    cases.push(
        Case::new(&format!("{key}: a 256-byte component"), mode)
            .key(key, name)
            .says("255"),
    );
    // A deep path within PATH_MAX is a path: as a target its unit name is too long
    // (bad input); as a source it is simply not a mount point (exit 1), bounded.
    let deep = format!("/{}", "d/".repeat(2_000).trim_end_matches('/'));
    let deep_case = Case::new(&format!("{key}: 2000 components"), mode).key(key, deep);
    cases.push(if key == "target" {
        deep_case.says("255")
    } else {
        deep_case.code(1).says("not a mount point")
    });
    cases.extend(hostile::file_cases(key, mode, "/mnt/data"));
    cases
}

#[test]
fn hostile_values_are_refused_and_the_node_is_unchanged() {
    let n = node();
    let mut cases = Vec::new();
    for key in ["source", "target"] {
        cases.extend(path_cases(key, "apply"));
    }
    cases.extend([
        Case::new("target 255+ bytes of unit name", "apply")
            .key("target", format!("/mnt/{}", "-".repeat(80)))
            .says("255"),
        Case::new("source equals target", "apply")
            .key("target", SOURCE)
            .says("must differ"),
        Case::new("target inside source", "apply")
            .key("target", "/mnt/k8s-disks/0/in")
            .says("disjoint"),
        Case::new("source inside target", "apply")
            .key("target", "/mnt")
            .says("disjoint"),
        Case::new("fstype with a slash", "apply").key("expected-source-fstype", "xfs/../x"),
        Case::new("device prefix outside /dev", "apply")
            .key("expected-source-device-prefix", "/etc/md")
            .says("/etc/md"),
        Case::new("device prefix with dot-dot", "apply").key("expected-source-device-prefix", "/dev/../etc"),
        Case::new("source missing", "apply")
            .input(Input::Key("source".into(), Vec::new()))
            .says("source"),
        Case::new("SKYHOOK_RESOURCE_ID with a slash in the resource", "apply")
            .env("SKYHOOK_RESOURCE_ID", "a/b-1_bind-mount_1.0.0")
            .says("SKYHOOK_RESOURCE_ID"),
        Case::new("SKYHOOK_RESOURCE_ID upper case resource", "uninstall")
            .env("SKYHOOK_RESOURCE_ID", "Scr-1_bind-mount_1.0.0")
            .says("SKYHOOK_RESOURCE_ID"),
        Case::new("uninstall of a never-installed instance with a bad target", "uninstall").key("target", "../etc"),
    ]);
    cases.extend(hostile::environment_cases("apply"));
    cases.extend(hostile::environment_cases("uninstall"));
    Corpus::new(&n).run(&cases).assert_passed();
}

#[test]
fn symlinks_planted_on_the_node_are_refused_without_following_them() {
    let n = node();
    std::fs::create_dir_all(n.path("/srv")).unwrap();
    let cases = [
        Case::new("target is a link to /etc", "apply")
            .key("target", "/mnt/link")
            .input(Input::HostLink("/mnt/link".into(), "/etc".into()))
            .code(1)
            .says("symbolic link"),
        Case::new("target's parent is a link", "apply")
            .key("target", "/srv/ln/data")
            .input(Input::HostLink("/srv/ln".into(), "/etc".into()))
            .code(1)
            .says("symbolic link"),
        Case::new("unit file is a link to a file outside", "apply")
            .input(Input::HostLink(UNIT_FILE.into(), String::new()))
            .code(1)
            .says("symbolic link"),
        Case::new("receipt is a link", "uninstall")
            .input(Input::HostLink(receipt(&n), String::new()))
            .code(1)
            .says("state.json"),
        Case::new("the mount table is a FIFO", "apply")
            .input(Input::HostFifo(MOUNTINFO.into()))
            .code(1)
            .says(MOUNTINFO),
        Case::new("the mount table is garbage", "apply")
            .input(Input::HostFile(MOUNTINFO.into(), b"not a mount table\n".to_vec()))
            .code(1)
            .says("line 1"),
        Case::new("the receipt is null", "uninstall")
            .input(Input::HostFile(receipt(&n), b"null".to_vec()))
            .code(1)
            .says("state.json"),
        Case::new("the receipt names /etc as target", "uninstall")
            .input(Input::HostFile(
                receipt(&n),
                br#"{"instance":"test-scr/bind-mount","source":"/mnt/k8s-disks/0","target":"/etc/../","unit":"etc.mount"}"#.to_vec(),
            ))
            .code(1)
            .says("damaged"),
        Case::new("the receipt of another instance", "uninstall")
            .input(Input::HostFile(
                receipt(&n),
                br#"{"instance":"evil/bind-mount","source":"/mnt/k8s-disks/0","target":"/mnt/data","unit":"mnt-data.mount"}"#.to_vec(),
            ))
            .code(1)
            .says("evil/bind-mount"),
    ];
    Corpus::new(&n).run(&cases).assert_passed();
}

// SPDX-License-Identifier: Apache-2.0
//! grub.conf on boot configurations that differ from the simple case: multi-kernel
//! grubby hosts whose entries carry different arguments (each entry, and the GRUB
//! defaults future kernels get, come back exactly), a config killed right after
//! grubby changed the entries (the rerun ends where an uninterrupted run ends), and
//! hostile arguments refused before anything changes.

mod common;

use common::*;
use skyhook_testkit::Node;
use skyhook_testkit::boot_tools::{GRUBBY, bls_entry, bls_options};
use skyhook_testkit::skyhook_core::os::distro::fixtures::ROCKY_9;

const ENTRIES: &str = "/boot/loader/entries";
const KERNELS: [(&str, &str); 3] = [
    (
        "0a1b-5.14.0-503.el9.x86_64",
        "root=/dev/mapper/rl-root ro hugepages=2 rd.lvm.lv=rl/root rhgb quiet",
    ),
    (
        "0a1b-5.14.0-427.el9.x86_64",
        "root=/dev/mapper/rl-root ro hugepages=16 iommu=off rd.lvm.lv=rl/root",
    ),
    ("0a1b-0-rescue", "root=/dev/mapper/rl-root ro rd.lvm.lv=rl/root"),
];

/// A Rocky 9 node with grubby and three kernels whose arguments differ (the
/// rescue entry has none of ours), GRUB_CMDLINE_LINUX with its own hugepages.
fn grubby_node() -> Node {
    let n = node();
    n.file("/etc/os-release", ROCKY_9).remove_stand_in("update-grub");
    std::fs::remove_dir_all(n.path("/etc/default/grub.d")).unwrap();
    std::fs::remove_dir_all(n.path("/boot/grub")).unwrap();
    for (name, options) in KERNELS {
        let version = name.trim_start_matches("0a1b-");
        n.file(&format!("{ENTRIES}/{name}.conf"), bls_entry(version, options));
    }
    n.file(
        "/etc/default/grub",
        "GRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX=\"hugepages=2 rd.lvm.lv=rl/root rhgb quiet\"\nGRUB_ENABLE_BLSCFG=true\n",
    )
    .stand_in("grubby", GRUBBY);
    n
}

#[test]
fn multi_kernel_grubby_hosts_come_back_exactly_after_config_and_uninstall() {
    let n = grubby_node();
    let before = n.snapshot();
    n.configmap("grub.conf", "hugepages=4\niommu=pt\n");
    run(&n, "config", 0);
    for (name, _) in KERNELS {
        let options = bls_options(&n, &format!("{ENTRIES}/{name}.conf"));
        assert!(
            options.contains("hugepages=4") && options.contains("iommu=pt") && !options.contains("hugepages=2 "),
            "{name}: {options}"
        );
    }
    run(&n, "config-check", 0);
    run(&n, "uninstall", 0);
    run(&n, "uninstall-check", 0);
    // The rescue entry has no hugepages= back from another entry; the 427 kernel
    // keeps its iommu=off; GRUB_CMDLINE_LINUX has its hugepages=2 again.
    before.assert_same(&n.snapshot());
}

#[test]
fn a_config_killed_after_grubby_ran_converges_on_the_rerun() {
    let n = grubby_node();
    let before = n.snapshot();
    n.configmap("grub.conf", "hugepages=4\niommu=pt\n");
    // grubby changes the entries, then the step dies before it records the result.
    n.stand_in("grubby-real", GRUBBY).stand_in(
        "grubby",
        "\"$(dirname \"$0\")/grubby-real\" \"$@\" || exit\n\
         case \"$*\" in *--update-kernel=ALL*--args=*) kill -KILL $PPID; exit 137 ;; esac",
    );
    assert_ne!(n.run("config").code, 0, "killed");
    n.stand_in("grubby", GRUBBY);
    run(&n, "config", 0);
    run(&n, "config-check", 0);
    run(&n, "uninstall", 0);
    n.remove_stand_in("grubby-real");
    before.assert_same(&n.snapshot());
}

#[test]
fn hostile_kernel_arguments_are_refused_naming_key_line_and_character() {
    for (arg, shown) in [
        ("quiet;reboot", "';'"),
        ("hugepages=4#note", "'#'"),
        ("a|b", "'|'"),
        ("a&b", "'&'"),
        ("x{y}", "'{'"),
        ("a<b", "'<'"),
        ("a>b", "'>'"),
        ("$(reboot)", "'$'"),
        ("`id`", "'`'"),
        ("a\\b", "'\\\\'"),
        ("caf\u{e9}", "'\u{e9}'"),
        ("a\u{1b}b", "'\\u{1b}'"),
    ] {
        let n = node();
        let before = n.snapshot();
        n.configmap("grub.conf", format!("iommu=pt\n{arg}\n"));
        run(&n, "config", 2)
            .expect_output("\"grub.conf\" line 2")
            .expect_output(shown);
        assert!(n.calls().is_empty(), "{arg:?}: {:?}", n.calls());
        before.assert_same(&n.snapshot());
    }
}

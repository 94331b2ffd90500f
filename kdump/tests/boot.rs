// SPDX-License-Identifier: Apache-2.0
//! crashkernel on the boot configuration, where nodes differ from the simple case:
//! multi-kernel grubby hosts whose entries carry different arguments (each gets its
//! own back, and so do the GRUB defaults future kernels get); an uninstall killed
//! before `update-grub` (the regeneration is still owed on the rerun); RHEL 9.3+
//! without grubby, where only `grub2-mkconfig --update-bls-cmdline` reaches the BLS
//! entries; and hostile values refused before anything changes.

mod common;

use common::*;
use skyhook_testkit::boot_tools::{GRUB2_MKCONFIG_BLS, bls_entry, killed_once};

const ENTRIES: &str = "/boot/loader/entries";

/// A Rocky node (kexec-tools preinstalled) with three kernels whose arguments
/// differ: the newest with the distribution's default, an older one with a
/// hand-set value, the rescue entry with none; GRUB_CMDLINE_LINUX with the default.
fn multi_kernel_node() -> skyhook_testkit::Node {
    let node = node(ROCKY);
    preinstall(&node, ROCKY);
    for f in std::fs::read_dir(node.path(ENTRIES)).unwrap() {
        std::fs::remove_file(f.unwrap().path()).unwrap();
    }
    node.file(
        &format!("{ENTRIES}/0a1b-5.14.0-503.el9.x86_64.conf"),
        bls_entry(
            "5.14.0-503.el9.x86_64",
            &format!("root=/dev/mapper/rl-root ro {RHEL_DEFAULT} rd.lvm.lv=rl/root rhgb quiet"),
        ),
    )
    .file(
        &format!("{ENTRIES}/0a1b-5.14.0-427.el9.x86_64.conf"),
        bls_entry(
            "5.14.0-427.el9.x86_64",
            "root=/dev/mapper/rl-root ro crashkernel=512M rd.lvm.lv=rl/root",
        ),
    )
    .file(
        &format!("{ENTRIES}/0a1b-0-rescue.conf"),
        bls_entry("0-rescue-0a1b", "root=/dev/mapper/rl-root ro rd.lvm.lv=rl/root"),
    )
    .file(
        "/etc/default/grub",
        format!("GRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX=\"{RHEL_DEFAULT} rd.lvm.lv=rl/root rhgb quiet\"\nGRUB_ENABLE_BLSCFG=true\n"),
    );
    node
}

#[test]
fn multi_kernel_grubby_hosts_get_each_entrys_crashkernel_back_and_the_defaults_too() {
    let node = multi_kernel_node();
    let before = files(&node);
    node.run("apply").expect_code(0);
    node.configmap("crashkernel", "256M");
    node.run("config").expect_code(0);
    for f in [
        "0a1b-5.14.0-503.el9.x86_64",
        "0a1b-5.14.0-427.el9.x86_64",
        "0a1b-0-rescue",
    ] {
        let options = bls_options(&node, &format!("{ENTRIES}/{f}.conf"));
        assert_eq!(
            options
                .split(' ')
                .filter(|a| a.starts_with("crashkernel="))
                .collect::<Vec<_>>(),
            ["crashkernel=256M"],
            "{f}: {options}"
        );
    }
    node.run("config-check").expect_code(0);
    node.run("uninstall").expect_code(0);
    node.run("uninstall-check").expect_code(0);
    // Every entry has its own arguments back, in place, and GRUB_CMDLINE_LINUX (what
    // the next kernel installed gets) holds the distribution's default again.
    before.assert_same(&files(&node));
}

#[test]
fn a_kdump_uninstall_killed_before_update_grub_regenerates_on_the_rerun() {
    let node = node(UBUNTU);
    preinstall(&node, UBUNTU);
    let before = files(&node);
    node.run("apply").expect_code(0);
    node.configmap("crashkernel", "256M");
    node.run("config").expect_code(0);
    assert!(default_entry_args(&node, UBUNTU).contains("crashkernel=256M"));
    node.stand_in("update-grub", &killed_once(&node, UPDATE_GRUB));
    let killed = node.run("uninstall");
    assert_ne!(killed.code, 0, "the step was killed: {}", killed.output());
    assert!(
        default_entry_args(&node, UBUNTU).contains("crashkernel=256M"),
        "killed before grub.cfg was regenerated"
    );
    node.run("uninstall-check").expect_code(1);
    node.clear_calls();
    node.run("uninstall").expect_code(0);
    assert!(node.calls().contains(&"update-grub".to_string()), "{:?}", node.calls());
    node.run("uninstall-check").expect_code(0);
    before.assert_same(&files(&node));
}

#[test]
fn rhel_9_3_without_grubby_updates_bls_entries_through_grub2_mkconfig() {
    let node = node(ROCKY);
    node.remove_stand_in("grubby")
        .stand_in("grub2-mkconfig", GRUB2_MKCONFIG_BLS);
    let entry = "/boot/loader/entries/0a1b-5.14.0-427.el9.x86_64.conf";
    let before = files(&node);
    node.run("apply").expect_code(0);
    node.configmap("crashkernel", "256M");
    node.run("config").expect_code(0);
    assert_eq!(
        node.calls().last().map(String::as_str),
        Some("grub2-mkconfig --update-bls-cmdline -o /boot/grub2/grub.cfg")
    );
    assert!(
        bls_options(&node, entry).contains("crashkernel=256M"),
        "{}",
        bls_options(&node, entry)
    );
    node.run("config-check").expect_code(0);
    // The checks read the BLS entries: an entry grub2-mkconfig did not update is found.
    let stale = node.read(entry).unwrap().replace(" crashkernel=256M", "");
    node.file(entry, &stale);
    node.run("config-check")
        .expect_code(1)
        .expect_output("boot entry 2 in /boot/loader/entries/*.conf has no crashkernel=");
    node.run("config").expect_code(0);
    node.run("uninstall").expect_code(0);
    node.run("uninstall-check").expect_code(0);
    let after = files(&node);
    let changed: Vec<String> = before.diff(&after);
    // grub2-mkconfig --update-bls-cmdline writes /etc/kernel/cmdline (which this
    // fixture lacks) from /etc/default/grub; after uninstall it holds the defaults
    // again, so kernels installed later get no crashkernel of ours.
    assert!(
        changed
            .iter()
            .all(|c| c.contains(" /boot/") || c == "left behind: /etc/kernel/cmdline"),
        "only the generated files differ: {changed:?}"
    );
    assert!(!bls_options(&node, entry).contains("crashkernel=256M"));
    let kernel_cmdline = node.read("/etc/kernel/cmdline").unwrap_or_default();
    assert!(!kernel_cmdline.contains("crashkernel=256M"), "{kernel_cmdline}");
}

#[test]
fn hostile_crashkernel_values_are_refused_naming_the_character_and_change_nothing() {
    for value in [
        "256M;reboot",
        "256M #x",
        "256M$(id)",
        "256M`id`",
        "256M|x",
        "256M&",
        "256M\u{e9}",
    ] {
        let node = node(UBUNTU);
        preinstall(&node, UBUNTU);
        let before = files(&node);
        node.configmap("crashkernel", value);
        let run = node.run("config");
        run.expect_code(2).expect_output("crashkernel");
        assert!(node.calls().iter().all(|c| !c.starts_with("update-grub")), "{value:?}");
        before.assert_same(&files(&node));
    }
}

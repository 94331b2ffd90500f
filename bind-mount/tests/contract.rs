// SPDX-License-Identifier: Apache-2.0
//! Upstream's safety contract, one test per rule, on a simulated node (see
//! `common`): each fails without the code that enforces the rule.

mod common;

use common::*;

fn unit_text(n: &Node) -> String {
    n.read(UNIT_FILE).expect("the unit file")
}

#[test]
fn the_lifecycle_prepares_activates_through_the_interrupt_and_uninstall_keeps_the_live_mount() {
    let n = node();
    let r = run(&n, "apply", 0);
    let needed: Vec<_> = r
        .output()
        .lines()
        .filter_map(skyhook_core::Interrupt::from_report_line)
        .collect();
    assert_eq!(needed, [skyhook_core::Interrupt::service([UNIT])], "{}", r.output());
    let text = unit_text(&n);
    assert!(
        text.starts_with("# Managed by skyhook package bind-mount; instance=test-scr/bind-mount\n"),
        "{text}"
    );
    for line in [
        "What=/mnt/k8s-disks/0",
        "Where=/mnt/data",
        "Options=bind",
        "WantedBy=local-fs.target",
        "RequiresMountsFor=/mnt/k8s-disks/0",
    ] {
        assert!(text.lines().any(|l| l == line), "{line} missing:\n{text}");
    }
    assert_eq!(n.mode(UNIT_FILE), Some(0o644));
    assert!(n.path(WANTS).symlink_metadata().is_ok(), "enabled");
    assert!(n.exists(&receipt(&n)) && n.mode(&receipt(&n)) == Some(0o600));
    assert!(!mounted(&n, TARGET), "apply never starts the unit: the interrupt does");
    assert!(!n.calls().iter().any(|c| c.contains("start")), "{:?}", n.calls());
    run(&n, "apply-check", 0);
    run(&n, "post-interrupt-check", 1).expect_output("not active");
    interrupt(&n, UNIT).expect_code(0);
    assert!(mounted(&n, TARGET));
    run(&n, "post-interrupt", 0);
    run(&n, "post-interrupt-check", 0);
    // A rerun of config on the live mount: accepted, nothing to activate.
    run(&n, "config", 0);
    run(&n, "config-check", 0);
    n.clear_calls();
    run(&n, "uninstall", 0).expect_output("remains mounted");
    assert!(!n.exists(UNIT_FILE) && n.path(WANTS).symlink_metadata().is_err());
    assert!(mounted(&n, TARGET), "uninstall never unmounts a live target");
    assert!(
        !n.calls().iter().any(|c| c.contains("stop") || c.contains("umount")),
        "{:?}",
        n.calls()
    );
    assert!(!n.exists(&receipt(&n)));
    run(&n, "uninstall-check", 0);
}

#[test]
fn the_source_must_be_an_exact_mount_point() {
    let n = node();
    std::fs::create_dir_all(n.path("/mnt/k8s-disks/0/sub")).unwrap();
    n.configmap("source", "/mnt/k8s-disks/0/sub");
    let before = n.snapshot();
    run(&n, "apply", 1).expect_output("is not a mount point");
    before.assert_same(&n.snapshot());
}

#[test]
fn the_source_must_be_read_write() {
    let n = node();
    n.file(MOUNTINFO, BASE_MOUNTS.replace("rw,noatime", "ro,noatime"));
    run(&n, "apply", 1).expect_output("not mounted read-write");
    assert!(!n.exists(UNIT_FILE));
}

#[test]
fn the_source_assertions_fail_closed() {
    let n = node();
    n.configmap("expected-source-fstype", "ext4");
    run(&n, "apply", 1).expect_output("has file system \"xfs\"");
    n.configmap("expected-source-fstype", "xfs")
        .configmap("expected-source-device-prefix", "/dev/nvme");
    run(&n, "apply", 1).expect_output("is mounted from \"/dev/md127\"");
    assert!(!n.exists(UNIT_FILE));
    n.configmap("expected-source-device-prefix", "/dev/md");
    run(&n, "apply", 0);
}

#[test]
fn a_non_empty_target_is_refused() {
    let n = node();
    n.file("/mnt/data/precious", "do not hide me");
    let before = n.snapshot();
    run(&n, "apply", 1).expect_output("is not empty");
    before.assert_same(&n.snapshot());
}

#[test]
fn a_target_that_is_another_mount_is_refused() {
    let n = node();
    std::fs::create_dir_all(n.path(TARGET)).unwrap();
    mount(&n, "50 22 0:50 / /mnt/data rw,relatime shared:40 - tmpfs tmpfs rw");
    run(&n, "apply", 1).expect_output("already a mount point");
    assert!(!n.exists(UNIT_FILE));
}

#[test]
fn symlinks_on_the_target_path_are_refused() {
    for (link, target) in [("/mnt/data", "/srv/elsewhere"), ("/mnt", "/srv")] {
        let n = node();
        std::fs::create_dir_all(n.path("/srv/elsewhere")).unwrap();
        if link == "/mnt" {
            // /mnt itself a link: move the source under /srv so the source still exists.
            std::fs::rename(n.path("/mnt"), n.path("/srv/mnt-real")).unwrap();
            std::os::unix::fs::symlink("/srv", n.path("/mnt")).unwrap();
        } else {
            std::os::unix::fs::symlink(target, n.path(link)).unwrap();
        }
        let before = n.snapshot();
        run(&n, "apply", 1).expect_output("is a symbolic link");
        before.assert_same(&n.snapshot());
    }
}

#[test]
fn a_read_only_target_is_refused_and_the_checks_see_it() {
    let n = node();
    mount(&n, "51 22 253:2 / /mnt rw,relatime - ext4 /dev/vda2 ro");
    // /mnt covers the source's parent too, but the source is a later mount of its own.
    mount(&n, "52 51 9:127 / /mnt/k8s-disks/0 rw,noatime - xfs /dev/md127 rw");
    run(&n, "apply", 1).expect_output("read-only mount at \"/mnt\"");
    let n = node();
    run(&n, "apply", 0);
    mount(&n, "53 22 253:3 / /mnt/data ro,relatime - ext4 /dev/vda3 rw");
    run(&n, "apply-check", 1).expect_output("is not the read-write bind mount");
}

#[test]
fn foreign_units_are_refused() {
    let foreign = "[Mount]\nWhat=/x\nWhere=/mnt/data\n";
    for path in [
        UNIT_FILE,
        "/usr/lib/systemd/system/mnt-data.mount",
        "/run/systemd/generator/mnt-data.mount",
        "/etc/systemd/system/mnt-data.mount.d/override.conf",
    ] {
        let n = node();
        n.file(path, foreign);
        let before = n.snapshot();
        run(&n, "apply", 1);
        before.assert_same(&n.snapshot());
    }
    let n = node();
    std::fs::create_dir_all(n.path("/etc/systemd/system")).unwrap();
    std::os::unix::fs::symlink("/dev/null", n.path(UNIT_FILE)).unwrap();
    run(&n, "apply", 1).expect_output("is a symbolic link");
    assert_eq!(
        std::fs::read_link(n.path(UNIT_FILE)).unwrap(),
        std::path::Path::new("/dev/null")
    );
}

#[test]
fn an_fstab_entry_owning_the_target_is_refused() {
    let n = node();
    n.file(
        "/etc/fstab",
        "UUID=1 / ext4 defaults 0 1\n/dev/md127 /mnt/data xfs defaults 0 0\n",
    );
    run(&n, "apply", 1).expect_output("/etc/fstab line 2 already mounts target");
    assert!(!n.exists(UNIT_FILE));
}

#[test]
fn activation_rechecks_emptiness() {
    let n = node();
    run(&n, "apply", 0);
    n.file("/mnt/data/written-after-apply", "new data");
    let r = interrupt(&n, UNIT);
    assert_ne!(r.code, 0, "the unit must refuse to mount over new data: {}", r.output());
    assert!(!mounted(&n, TARGET));
    run(&n, "apply-check", 1).expect_output("not an empty directory");
}

#[test]
fn a_path_change_is_refused_while_the_old_target_is_mounted() {
    let n = node();
    run(&n, "config", 0);
    interrupt(&n, UNIT).expect_code(0);
    n.configmap("target", "/mnt/other");
    let before = n.snapshot();
    run(&n, "config", 1).expect_output("still mounted");
    before.assert_same(&n.snapshot());
}

#[test]
fn a_path_change_before_activation_retires_the_old_unit() {
    let n = node();
    run(&n, "config", 0);
    n.configmap("target", "/mnt/other");
    run(&n, "config", 0);
    assert!(
        !n.exists(UNIT_FILE) && n.path(WANTS).symlink_metadata().is_err(),
        "old unit retired"
    );
    assert!(n.exists("/etc/systemd/system/mnt-other.mount"));
    run(&n, "config-check", 0);
}

#[test]
fn source_and_target_must_be_disjoint() {
    let n = node();
    n.configmap("target", "/mnt/k8s-disks/0/inner");
    run(&n, "apply", 2).expect_output("must be disjoint");
    n.configmap("target", "/mnt");
    run(&n, "apply", 2).expect_output("must be disjoint");
}

#[test]
fn instances_are_separate_and_two_naming_one_unit_fail_closed() {
    let n = node();
    run(&n, "config", 0);
    let other = n.entry("scratch");
    other.configmap("source", SOURCE).configmap("target", "/mnt/scratch");
    skyhook_testkit::run_command(&mut n.command_of(&other, "config")).expect_code(0);
    assert!(
        n.read("/etc/systemd/system/mnt-scratch.mount")
            .unwrap()
            .contains("instance=test-scr/scratch")
    );
    // A third instance naming the first one's target.
    let thief = n.entry("thief");
    thief.configmap("source", SOURCE).configmap("target", TARGET);
    let before = n.snapshot();
    skyhook_testkit::run_command(&mut n.command_of(&thief, "config"))
        .expect_code(1)
        .expect_output("is not this instance's");
    before.assert_same(&n.snapshot());
    // The thief's uninstall (never installed, with its configMap) leaves the unit alone.
    skyhook_testkit::run_command(&mut n.command_of(&thief, "uninstall")).expect_code(0);
    assert!(n.exists(UNIT_FILE));
    // Uninstalling one instance leaves the other's unit.
    skyhook_testkit::run_command(&mut n.command_of(&other, "uninstall")).expect_code(0);
    assert!(n.exists(UNIT_FILE) && !n.exists("/etc/systemd/system/mnt-scratch.mount"));
    run(&n, "config-check", 0);
}

#[test]
fn uninstall_of_an_instance_that_never_installed_is_a_clean_no_op() {
    for with_configmap in [false, true] {
        let n = node();
        if !with_configmap {
            n.clear_configmaps();
        }
        let before = n.snapshot();
        run(&n, "uninstall", 0);
        run(&n, "uninstall-check", 0);
        before.assert_same(&n.snapshot());
    }
}

#[test]
fn uninstall_without_the_configmap_works_from_the_receipt() {
    let n = node();
    n.configmap("target", "/mnt/from-receipt");
    run(&n, "apply", 0);
    n.clear_configmaps();
    run(&n, "uninstall", 0);
    assert!(!n.exists("/etc/systemd/system/mnt-from-receipt.mount"));
    run(&n, "uninstall-check", 0);
}

#[test]
fn a_configmap_less_uninstall_sweeps_only_this_instances_units() {
    let n = node();
    let mine =
        "# Managed by skyhook package bind-mount; instance=test-scr/bind-mount\n[Mount]\nWhat=/a\nWhere=/mnt/left\n";
    let theirs =
        "# Managed by skyhook package bind-mount; instance=other-scr/bind-mount\n[Mount]\nWhat=/a\nWhere=/mnt/theirs\n";
    n.file("/etc/systemd/system/mnt-left.mount", mine)
        .file("/etc/systemd/system/mnt-theirs.mount", theirs);
    n.clear_configmaps();
    run(&n, "uninstall-check", 1).expect_output("mnt-left.mount");
    run(&n, "uninstall", 0);
    assert!(!n.exists("/etc/systemd/system/mnt-left.mount"));
    assert_eq!(n.read("/etc/systemd/system/mnt-theirs.mount").as_deref(), Some(theirs));
    run(&n, "uninstall-check", 0);
}

#[test]
fn a_unit_prepared_by_the_upstream_bash_package_is_adopted() {
    let mut n = node();
    n.env("PREVIOUS_VERSION", "0.1.0").env("CURRENT_VERSION", "0.1.0");
    n.file(UNIT_FILE, "# Managed by NodeWright package bind-mount; instance=test-scr/bind-mount\n[Mount]\nWhat=/mnt/k8s-disks/0\nWhere=/mnt/data\n");
    run(&n, "upgrade", 0);
    assert!(unit_text(&n).starts_with("# Managed by skyhook package bind-mount;"));
    run(&n, "upgrade-check", 0);
}

#[test]
fn uninstall_removes_the_directories_config_created_unless_mounted_or_filled() {
    // Never activated: the target and its missing parent go with the unit.
    let n = node();
    n.configmap("target", "/mnt/node-local/data");
    // What every node has (systemctl disable leaves an emptied .wants directory, as the
    // real one does).
    for dir in ["/etc/systemd/system/local-fs.target.wants", "/var/lib"] {
        std::fs::create_dir_all(n.path(dir)).unwrap();
    }
    let before = n.snapshot();
    run(&n, "config", 0);
    assert!(n.path("/mnt/node-local/data").is_dir());
    run(&n, "uninstall", 0).expect_output("removed the directory \"/mnt/node-local/data\" that config created");
    run(&n, "uninstall-check", 0);
    before.assert_same(&n.snapshot());

    // Activated: the live target stays, and so does its parent.
    let n = node();
    run(&n, "config", 0);
    interrupt(&n, UNIT).expect_code(0);
    run(&n, "uninstall", 0).expect_output("remains mounted");
    assert!(mounted(&n, TARGET) && n.path(TARGET).is_dir());

    // A directory that was there before config is never removed.
    let n = node();
    std::fs::create_dir_all(n.path(TARGET)).unwrap();
    run(&n, "config", 0);
    run(&n, "uninstall", 0);
    assert!(n.path(TARGET).is_dir());

    // One that holds something by now stays, said in the log.
    let n = node();
    run(&n, "config", 0);
    std::fs::write(n.path(&format!("{TARGET}/notes")), "kept").unwrap();
    run(&n, "uninstall", 0).expect_output("is kept: it is not empty");
    assert!(n.exists(&format!("{TARGET}/notes")));
}

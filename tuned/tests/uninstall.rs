// SPDX-License-Identifier: Apache-2.0
//! uninstall and uninstall-check: the service stopped and disabled, the package
//! removed (with exactly what apply installed with it, on apt), every deployed profile and
//! script gone, hand-made profiles kept.

mod common;

use common::*;
use skyhook_core::os::distro::fixtures;

#[test]
fn uninstall_leaves_no_deployed_file_and_keeps_a_hand_made_profile() {
    let node = debian(None);
    node.run("apply").expect_code(0);
    node.file("/etc/tuned/handmade/tuned.conf", "[main]\ninclude=balanced\n");
    readme_configmap(&node);
    node.run("config").expect_code(0);
    node.run("uninstall-check")
        .expect_code(1)
        .expect_output("tuned is still installed")
        .expect_output("/etc/tuned/custom_profile/tuned.conf (deployed by this package) is still on the node");

    node.clear_calls();
    node.run("uninstall").expect_code(0);
    let calls = node.calls();
    let stop = calls.iter().position(|c| c == "systemctl stop tuned").expect("stopped");
    let purge = calls
        .iter()
        .position(|c| c.starts_with("apt-get") && c.contains(" purge ") && !c.contains(" -s "))
        .expect("purged");
    assert!(stop < purge, "stopped before removal: {calls:?}");
    assert!(calls.contains(&"systemctl disable tuned".to_string()), "{calls:?}");
    assert!(
        calls[purge].ends_with(" purge -y -q tuned") && calls.iter().any(|c| c.contains(" -s purge tuned")),
        "exactly what apply installed, after a simulation: {calls:?}"
    );
    for gone in [
        "/etc/tuned/custom_profile",
        "/etc/tuned/custom_profile_1",
        "/etc/tuned/scripts",
        "/var/lib/skyhook-packages",
    ] {
        assert!(!node.exists(gone), "{gone} remains");
    }
    assert_eq!(
        node.read("/etc/tuned/handmade/tuned.conf").unwrap(),
        "[main]\ninclude=balanced\n",
        "a hand-made profile is never touched"
    );
    node.run("uninstall-check").expect_code(0);

    // Running it again changes nothing and still succeeds.
    let before = node.snapshot();
    node.run("uninstall").expect_code(0);
    before.assert_same(&node.snapshot());
}

#[test]
fn uninstall_on_rhel_like_hosts_removes_with_dnf_and_takes_the_newer_layout_along() {
    let node = rhel(fixtures::RHEL_9, false, Some("2.24.0"));
    node.configmap("tuned_profile", "gpu")
        .configmap("gpu", "[main]\ninclude=throughput-performance\n");
    node.run("config").expect_code(0);
    assert!(node.exists("/etc/tuned/profiles/gpu/tuned.conf"));
    node.run("uninstall").expect_code(0);
    assert!(
        node.calls().contains(&"dnf -y remove tuned".to_string()),
        "{:?}",
        node.calls()
    );
    assert!(!node.exists("/etc/tuned/profiles/gpu"));
    // tuned's spec ships these as %config(noreplace): rpm would keep the ones
    // activation wrote as .rpmsave files in a /etc/tuned left behind (the chroot tier
    // proves it with the real rpm), so uninstall takes them first.
    assert!(!node.exists("/etc/tuned/active_profile") && !node.exists("/etc/tuned/profile_mode"));
    node.run("uninstall-check").expect_code(0);
}

#[test]
fn uninstall_also_removes_what_the_bash_package_deployed_for_the_same_keys() {
    // A node where only the bash package ran (no state of ours): its copies of the
    // configMap keys are recognised by their content and removed.
    let node = debian(Some("2.21.0"));
    node.file("/etc/tuned/custom_profile/tuned.conf", README_PROFILE)
        .file("/etc/tuned/custom_profile_1/tuned.conf", README_PROFILE_1)
        .file("/etc/tuned/scripts/ai_init_script", README_SCRIPT)
        .file("/etc/tuned/other/tuned.conf", "[main]\n");
    readme_configmap(&node);
    node.run("uninstall-check")
        .expect_code(1)
        .expect_output("/etc/tuned/scripts/ai_init_script (a deployed copy of a configMap key) is still on the node");
    node.run("uninstall").expect_code(0);
    for gone in [
        "/etc/tuned/custom_profile",
        "/etc/tuned/custom_profile_1",
        "/etc/tuned/scripts",
    ] {
        assert!(!node.exists(gone), "{gone} remains");
    }
    assert!(node.exists("/etc/tuned/other/tuned.conf"));
    node.run("uninstall-check").expect_code(0);
}

#[test]
fn uninstall_without_a_running_systemd_disables_and_removes() {
    let node = debian(Some("2.21.0"));
    node.systemd_running(false);
    node.configmap("tuned_profile", "mine").configmap("mine", "[main]\n");
    node.run("config").expect_code(0);
    node.run("uninstall")
        .expect_code(0)
        .expect_output("skipped stopping tuned");
    assert!(!node.exists("/etc/tuned/mine"));
    node.run("uninstall-check")
        .expect_code(0)
        .expect_output("not checked: tuned service stopped");
}

#[test]
fn profiles_moved_by_a_tuned_upgrade_are_still_removed() {
    let node = debian(Some("2.21.0"));
    node.configmap("tuned_profile", "mine")
        .configmap("mine", "[main]\ninclude=balanced\n");
    node.run("config").expect_code(0);
    assert!(node.exists("/etc/tuned/mine/tuned.conf"));

    // tuned is upgraded to 2.24, whose package moves user profiles to /etc/tuned/profiles.
    preinstall(&node, "2.24.0");
    std::fs::rename(node.path("/etc/tuned/mine"), node.path("/etc/tuned/profiles/mine")).unwrap();
    node.run("config").expect_code(0).expect_output("nothing rewritten");
    node.run("config-check").expect_code(0);

    node.run("uninstall").expect_code(0);
    assert!(
        !node.exists("/etc/tuned/profiles/mine"),
        "the moved profile directory is removed too"
    );
    assert!(!node.exists("/etc/tuned/mine"));
    node.run("uninstall-check").expect_code(0);
}

#[test]
fn uninstall_takes_back_the_grub_lines_tuneds_bootloader_plugin_added_and_regenerates() {
    let node = debian(None);
    let defaults = b"GRUB_DEFAULT=0\n# caf\xe9\r\nGRUB_CMDLINE_LINUX=\"console=ttyS0\"".to_vec();
    std::fs::create_dir_all(node.path("/etc/default")).unwrap();
    std::fs::write(node.path("/etc/default/grub"), &defaults).unwrap();
    node.stand_in("update-grub", "exit 0");
    node.run("apply").expect_code(0);
    readme_configmap(&node); // its profile has a [bootloader] option
    node.run("config").expect_code(0);
    // What the running daemon's bootloader plugin appends when it applies the profile.
    let mut patched = defaults.clone();
    for line in tuned::bootloader::TUNED_LINES {
        patched.extend_from_slice(b"\n");
        patched.extend_from_slice(line);
    }
    patched.extend_from_slice(b"\n");
    std::fs::write(node.path("/etc/default/grub"), &patched).unwrap();

    node.clear_calls();
    node.run("uninstall").expect_code(0);
    let calls = node.calls();
    let purge = calls.iter().position(|c| c.contains(" purge -y ")).expect("purged");
    let regen = calls.iter().position(|c| c == "update-grub").expect("regenerated");
    assert!(purge < regen, "GRUB regenerated after tuned is gone: {calls:?}");
    let mut expected = defaults.clone();
    expected.extend_from_slice(b"\n");
    assert_eq!(
        std::fs::read(node.path("/etc/default/grub")).unwrap(),
        expected,
        "only tuned's two lines go; every other byte stays"
    );
    node.run("uninstall-check").expect_code(0);

    // The check names the lines when they are still there.
    std::fs::write(node.path("/etc/default/grub"), &patched).unwrap();
    node.run("uninstall-check")
        .expect_code(1)
        .expect_output("/etc/default/grub still holds the $tuned_params/$tuned_initrd lines");
}

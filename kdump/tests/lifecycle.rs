// SPDX-License-Identifier: Apache-2.0
//! The whole lifecycle on every supported distribution, run as the agent runs it:
//! apply, config, the reboot, post-interrupt-check, uninstall, each with its check;
//! and uninstall leaving the node exactly as it was.

mod common;

use common::*;

const MIB: u64 = 1 << 20;

#[test]
fn full_lifecycle_on_every_distribution_leaves_the_node_as_it_was() {
    for distro in ALL {
        let node = node(distro);
        let before = files(&node);
        let unit = if distro.debian { "kdump-tools" } else { "kdump" };

        node.run("apply").expect_code(0);
        assert!(has_stand_in_file(&node, "kexec"), "{}: kexec installed", distro.name);
        assert!(unit_state(&node, unit).0, "{}: {unit} enabled", distro.name);
        node.run("apply-check").expect_code(0);

        node.configmap("crashkernel", "256M");
        node.run("config")
            .expect_code(0)
            .expect_output("interrupt needed: {type: reboot}");
        node.run("config-check").expect_code(0);
        let args = default_entry_args(&node, distro);
        let tokens: Vec<&str> = args
            .split_whitespace()
            .filter(|a| a.starts_with("crashkernel="))
            .collect();
        assert_eq!(tokens, ["crashkernel=256M"], "{}: default entry {args}", distro.name);

        reboot(&node, distro, 256 * MIB);
        node.run("post-interrupt-check").expect_code(0);

        node.run("uninstall").expect_code(0);
        node.run("uninstall-check")
            .expect_code(0)
            .expect_output("256 MiB of memory stay reserved for a crash kernel until the next reboot");
        assert!(!has_stand_in_file(&node, "kexec"), "{}: kexec removed", distro.name);
        assert_eq!(
            unit_state(&node, unit),
            (false, false),
            "{}: {unit} stopped and disabled",
            distro.name
        );
        before.assert_same(&files(&node));
    }
}

#[test]
fn apply_installs_non_interactively_with_kdump_enabled_on_debian() {
    let node = node(UBUNTU);
    node.run("apply").expect_code(0);
    let calls = node.calls();
    assert!(calls.contains(&"debconf-set-selections".to_string()), "{calls:?}");
    assert_eq!(
        std::fs::read_to_string(node.commands_dir().join("debconf.db")).unwrap(),
        "kdump-tools kdump-tools/use_kdump boolean true\nkexec-tools kexec-tools/load_kexec boolean false\n"
    );
    let install = calls.iter().find(|c| c.contains(" install ")).expect("an install");
    assert!(
        install.starts_with("apt-get -o DPkg::Lock::Timeout=600 install -y -q") && install.ends_with(" kdump-tools"),
        "{install}"
    );
    assert!(
        node.read("/etc/default/kdump-tools").unwrap().contains("USE_KDUMP=1"),
        "the debconf answer enabled kdump"
    );
    assert_eq!(unit_state(&node, "kdump-tools"), (true, false), "enabled, not started");
}

#[test]
fn apply_enables_the_service_without_starting_it_on_rhel() {
    // RHEL's preset enables kdump.service at the install (%systemd_post); Amazon
    // Linux's is modelled without it, so apply enables it.
    for (distro, apply_enables) in [(RHEL, false), (AMAZON, true)] {
        let node = node(distro);
        node.run("apply").expect_code(0);
        let calls = node.calls();
        assert!(calls.contains(&"dnf -y install kexec-tools".to_string()), "{calls:?}");
        assert_eq!(
            calls.contains(&"systemctl enable kdump".to_string()),
            apply_enables,
            "{}: {calls:?}",
            distro.name
        );
        assert!(
            !calls
                .iter()
                .any(|c| c.starts_with("systemctl start") || c.starts_with("debconf")),
            "{calls:?}"
        );
        assert_eq!(unit_state(&node, "kdump"), (true, false), "{}", distro.name);
    }
}

#[test]
fn apply_skips_everything_when_installed() {
    for distro in [UBUNTU, ROCKY] {
        let node = node(distro);
        node.run("apply").expect_code(0);
        node.clear_calls();
        node.run("apply").expect_code(0).expect_output("already installed");
        let calls = node.calls();
        assert!(
            calls
                .iter()
                .all(|c| c.starts_with("dpkg-query") || c.starts_with("rpm") || c.starts_with("systemctl is-enabled")),
            "{}: {calls:?}",
            distro.name
        );
    }
}

#[test]
fn apply_waits_out_the_dpkg_lock() {
    let node = node(DEBIAN);
    std::fs::write(node.commands_dir().join("apt-lock"), "2").unwrap();
    node.run("apply").expect_code(0).expect_output("attempt 1 of 3 failed");
    let updates = node.calls().iter().filter(|c| c.contains(" update ")).count();
    assert_eq!(updates, 3, "{:?}", node.calls());
    node.run("apply-check").expect_code(0);

    let node = common::node(DEBIAN);
    std::fs::write(node.commands_dir().join("apt-lock"), "9").unwrap();
    node.run("apply")
        .expect_code(1)
        .expect_output("Could not get lock")
        .expect_output("attempt 3 of 3");
}

#[test]
fn uninstall_restores_the_originals_of_a_preinstalled_package_exactly() {
    for distro in ALL {
        let node = node(distro);
        preinstall(&node, distro);
        let unit = if distro.debian { "kdump-tools" } else { "kdump" };
        let before = files(&node);
        let original_conf = node.read(if distro.debian {
            "/etc/default/kdump-tools"
        } else {
            "/etc/kdump.conf"
        });

        node.run("apply").expect_code(0);
        node.configmap("crashkernel", "512M")
            .configmap("kdump.conf", "path /var/crash\nUSE_KDUMP=1\n");
        node.run("config").expect_code(0);
        node.run("config-check").expect_code(0);
        if distro.debian {
            let drop_in = node.read("/etc/default/grub.d/kdump-tools.cfg").unwrap();
            assert_eq!(
                drop_in.matches("crashkernel=").count(),
                1,
                "{}: exactly one crashkernel= in {drop_in}",
                distro.name
            );
            assert!(!drop_in.contains(distro.package_default), "{drop_in}");
        }
        reboot(&node, distro, 512 * MIB);

        node.run("uninstall").expect_code(0);
        node.run("uninstall-check").expect_code(0);
        before.assert_same(&files(&node));
        assert_eq!(
            node.read(if distro.debian {
                "/etc/default/kdump-tools"
            } else {
                "/etc/kdump.conf"
            }),
            original_conf
        );
        assert!(
            has_stand_in_file(&node, "kexec"),
            "{}: the preinstalled package stays",
            distro.name
        );
        assert!(
            unit_state(&node, unit).0,
            "{}: {unit} stays enabled, as it was",
            distro.name
        );
    }
}

#[test]
fn uninstall_after_the_bash_package_removes_its_value_too() {
    // Debian-like: the bash package wrote the drop-in itself and kept no state.
    let node = node(UBUNTU);
    let before = files(&node);
    preinstall(&node, UBUNTU);
    node.file(
        "/etc/default/grub.d/kdump-tools.cfg",
        "GRUB_CMDLINE_LINUX_DEFAULT=\"$GRUB_CMDLINE_LINUX_DEFAULT crashkernel=512M\"\n",
    );
    node.configmap("crashkernel", "512M");
    node.run("config").expect_code(0);
    node.run("config-check").expect_code(0);
    node.run("uninstall").expect_code(0);
    node.run("uninstall-check").expect_code(0);
    before.assert_same(&files(&node));

    // RHEL-like: the bash package put it into GRUB_CMDLINE_LINUX; an upgraded node
    // is uninstalled without ever running our config.
    let node = common::node(ROCKY);
    preinstall(&node, ROCKY);
    node.file(
        "/etc/default/grub",
        "GRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX=\"crashkernel=512M rd.lvm.lv=rl/root rhgb quiet\"\nGRUB_ENABLE_BLSCFG=true\n",
    );
    node.configmap("crashkernel", "512M");
    node.run("uninstall").expect_code(0);
    assert_eq!(
        node.read("/etc/default/grub").unwrap(),
        "GRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX=\"rd.lvm.lv=rl/root rhgb quiet\"\nGRUB_ENABLE_BLSCFG=true\n"
    );
    assert!(
        !has_stand_in_file(&node, "kexec"),
        "no apply record: removed, as the bash package did"
    );
    node.run("uninstall-check").expect_code(0);
}

#[test]
fn uninstall_run_again_keeps_a_package_the_distribution_had_installed() {
    for distro in ALL {
        let node = node(distro);
        preinstall(&node, distro);
        let before = files(&node);
        node.run("apply").expect_code(0);
        node.configmap("crashkernel", "256M");
        node.run("config").expect_code(0);
        node.run("uninstall").expect_code(0);
        node.run("uninstall-check").expect_code(0);
        let after_one = files(&node);
        // The agent runs uninstall again whenever uninstall-check fails; N runs = one run.
        for _ in 0..2 {
            node.run("uninstall")
                .expect_code(0)
                .expect_output("an earlier uninstall of this package kept");
            node.run("uninstall-check").expect_code(0);
        }
        after_one.assert_same(&files(&node));
        before.assert_same(&files(&node));
        assert!(
            has_stand_in_file(&node, "kexec"),
            "{}: the preinstalled package stays, however many uninstalls run",
            distro.name
        );
        assert!(
            !node
                .calls()
                .iter()
                .any(|c| c.contains(" purge ") || c.contains(" remove ")),
            "{}: never removed: {:?}",
            distro.name,
            node.calls()
        );
        assert!(
            !node.exists("/var/lib/skyhook-packages"),
            "{}: no empty state directory",
            distro.name
        );
    }
}

#[test]
fn an_uninstall_failing_half_way_and_run_again_ends_as_one_uninterrupted_run() {
    let prepared = || {
        let node = node(UBUNTU);
        node.run("apply").expect_code(0);
        node.configmap("crashkernel", "256M");
        node.run("config").expect_code(0);
        node
    };
    let reference = prepared();
    reference.run("uninstall").expect_code(0);

    // The same node whose uninstall stops at the package removal (after the originals
    // are back), then is run again, twice.
    let mut node = prepared();
    let apt_get = std::fs::read_to_string(node.commands_dir().join("apt-get")).unwrap();
    let apt_get = apt_get.trim_start_matches("#!/bin/sh\n");
    node.stand_in(
        "apt-get",
        &format!("case \" $* \" in *' purge '*) echo 'E: interrupted' >&2; exit 100 ;; esac\n{apt_get}"),
    );
    node.env("SKYHOOK_PKG_ATTEMPTS", "1");
    node.run("uninstall").expect_code(1).expect_output("E: interrupted");
    node.stand_in("apt-get", apt_get);
    node.run("uninstall").expect_code(0);
    node.run("uninstall").expect_code(0);
    node.run("uninstall-check").expect_code(0);
    files(&reference).assert_same(&files(&node));
    assert!(!has_stand_in_file(&node, "kexec"), "removed: apply had installed it");
    assert!(!node.exists("/var/lib/skyhook-packages"));
}

#[test]
fn on_rhel_10_the_package_providing_kdump_service_is_installed_and_removed_too() {
    // RHEL 10 / Fedora 41+: kdump.service moved to kdump-utils, which kexec-tools only
    // recommends; the repositories offer it.
    let node = node(RHEL);
    node.file(
        "/etc/os-release",
        skyhook_core::os::distro::fixtures::RHEL_9
            .replace("9.4", "10.0")
            .replace("el9", "el10"),
    );
    node.offer_package(&skyhook_testkit::DistPackage::new("kdump-utils", "1.0.51-1.el10"));
    node.run("apply")
        .expect_code(0)
        .expect_output("installing it with kexec-tools");
    assert!(
        node.calls()
            .contains(&"dnf -y install kexec-tools kdump-utils".to_string()),
        "{:?}",
        node.calls()
    );
    assert!(node.package_version("kdump-utils").is_some());
    node.run("apply-check").expect_code(0);
    node.run("uninstall").expect_code(0);
    assert_eq!(node.package_version("kdump-utils"), None, "removed with kexec-tools");
    assert_eq!(node.package_version("kexec-tools"), None);
    node.run("uninstall-check").expect_code(0);

    // RHEL 9: the repositories have no kdump-utils; kexec-tools alone, as before.
    let node = common::node(RHEL);
    node.run("apply").expect_code(0);
    assert!(
        node.calls().contains(&"dnf -y install kexec-tools".to_string()),
        "{:?}",
        node.calls()
    );
}

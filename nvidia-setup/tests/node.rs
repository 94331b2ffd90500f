// SPDX-License-Identifier: Apache-2.0
//! The package on a simulated node: the kernel entry (install, boot default, pin,
//! the checks before and after the reboot, uninstall), the node that already runs
//! the kernel, dpkg left half-done, bcm's headers link, and the steps this version
//! refuses.

mod common;

use common::*;

#[test]
fn the_kernel_entry_installs_the_kernel_as_the_boot_default_and_the_reboot_is_checked() {
    let n = node();
    run(&n, "apply", 0).expect_output("interrupt");
    for p in ["linux-image", "linux-headers", "linux-modules", "linux-modules-extra"] {
        assert_eq!(
            n.package_version(&format!("{p}-{TARGET}")).as_deref(),
            Some(VERSION),
            "{p}"
        );
    }
    assert!(n.read("/etc/default/grub").unwrap().contains("\nGRUB_DEFAULT=saved\n"));
    assert_eq!(
        saved_entry(&n).as_deref(),
        Some(TARGET_ENTRY),
        "the kernel's own entry, by id"
    );
    assert!(
        n.read("/boot/grub/grub.cfg").unwrap().contains("${saved_entry}"),
        "update-grub ran after the edit"
    );
    assert!(!n.exists(PIN), "no pin unless asked");
    run(&n, "apply-check", 0);
    run(&n, "post-interrupt-check", 1).expect_output(&format!("the node runs {RUNNING}, not {TARGET}"));
    reboot_into(&n, TARGET);
    run(&n, "post-interrupt-check", 0);
    run(&n, "apply-check", 0);
}

#[test]
fn a_rerun_changes_nothing_and_a_node_already_on_the_kernel_is_left_alone() {
    let n = node();
    run(&n, "apply", 0);
    let after = n.snapshot();
    n.clear_calls();
    run(&n, "apply", 0);
    after.assert_same(&n.snapshot());
    assert_eq!(apt_calls(&n), Vec::<String>::new(), "nothing left to install");

    let n = node();
    reboot_into(&n, TARGET);
    let before = n.snapshot();
    n.clear_calls();
    run(&n, "apply", 0).expect_output("nothing to install");
    before.assert_same(&n.snapshot());
    assert!(n.calls().is_empty(), "{:?}", n.calls());
}

#[test]
fn a_newer_kernel_is_kept_only_when_allowed_and_only_of_the_same_flavour() {
    let mut n = node();
    reboot_into(&n, "6.18.0-1001-aws");
    n.env("NVIDIA_SETUP_KERNEL_ALLOW_NEWER", "true");
    let before = n.snapshot();
    run(&n, "apply", 0).expect_output("satisfies");
    before.assert_same(&n.snapshot());
    run(&n, "post-interrupt-check", 0);
    n.env("NVIDIA_SETUP_KERNEL_ALLOW_NEWER", "false");
    run(&n, "apply", 0);
    assert_eq!(
        saved_entry(&n).as_deref(),
        Some(TARGET_ENTRY),
        "installed, as upstream always did"
    );
}

#[test]
fn an_arm64_node_gets_the_64k_flavour() {
    let n = node();
    n.file("/proc/sys/kernel/arch", "aarch64\n")
        .configmap("accelerator", "gb200");
    run(&n, "apply", 0);
    assert!(n.package_version(&format!("linux-image-{TARGET_64K}")).is_some());
    assert!(n.package_version(&format!("linux-image-{TARGET}")).is_none());
    assert_eq!(
        saved_entry(&n).as_deref(),
        Some("gnulinux-advanced-0b1c>gnulinux-6.17.0-1019-aws-64k-advanced-0b1c")
    );
    reboot_into(&n, TARGET);
    run(&n, "post-interrupt-check", 1).expect_output(TARGET_64K);
}

#[test]
fn the_pin_names_the_installed_versions_and_uninstall_releases_only_our_holds() {
    let mut n = node();
    n.env("NVIDIA_PIN_KERNEL", "true");
    n.preinstall_package(&format!("linux-modules-{TARGET}"));
    n.run_stand_in("apt-mark", &["hold", &format!("linux-modules-{TARGET}")])
        .expect_code(0);
    run(&n, "apply", 0);
    let pin = n.read(PIN).unwrap();
    assert!(
        pin.contains(&format!(
            "Package: linux-image-{TARGET}\nPin: version {VERSION}\nPin-Priority: 1001\n"
        )),
        "{pin}"
    );
    assert_eq!(held(&n).lines().count(), 4, "{}", held(&n));
    run(&n, "apply-check", 0);
    run(&n, "uninstall", 0);
    assert!(!n.exists(PIN));
    assert_eq!(
        held(&n).trim(),
        format!("linux-modules-{TARGET}"),
        "the hold that was there stays"
    );
    run(&n, "uninstall-check", 0);
}

#[test]
fn uninstall_gives_the_boot_default_back_exactly_and_keeps_the_kernel() {
    let n = node();
    let before_defaults = n.read("/etc/default/grub").unwrap();
    run(&n, "apply", 0);
    run(&n, "uninstall", 0);
    assert_eq!(n.read("/etc/default/grub").unwrap(), before_defaults);
    assert!(!n.exists("/boot/grub/grubenv"), "there was no environment block before");
    assert!(
        !n.read("/boot/grub/grub.cfg").unwrap().contains("${saved_entry}"),
        "regenerated"
    );
    assert!(
        n.package_version(&format!("linux-image-{TARGET}")).is_some(),
        "the kernel stays"
    );
    run(&n, "uninstall-check", 0);
    let after = n.snapshot();
    run(&n, "uninstall", 0);
    after.assert_same(&n.snapshot());
}

#[test]
fn uninstall_puts_back_a_saved_entry_and_keeps_someones_later_edit() {
    let n = node();
    n.file(
        "/etc/default/grub",
        GRUB_DEFAULTS.replace("GRUB_DEFAULT=0", "GRUB_DEFAULT=saved"),
    );
    n.run_stand_in("grub-set-default", &["gnulinux-simple-0b1c"])
        .expect_code(0);
    run(&n, "apply", 0);
    assert_eq!(saved_entry(&n).as_deref(), Some(TARGET_ENTRY));
    let edited = n.read("/etc/default/grub").unwrap() + "GRUB_TIMEOUT_STYLE=menu\n";
    n.file("/etc/default/grub", &edited);
    run(&n, "uninstall", 0);
    assert_eq!(
        saved_entry(&n).as_deref(),
        Some("gnulinux-simple-0b1c"),
        "the block that was there stays"
    );
    assert_eq!(
        n.read("/etc/default/grub").unwrap(),
        edited,
        "GRUB_DEFAULT was saved before: kept, and the edit"
    );

    let n = node();
    run(&n, "apply", 0);
    let edited = n.read("/etc/default/grub").unwrap() + "GRUB_TIMEOUT_STYLE=menu\n";
    n.file("/etc/default/grub", &edited);
    run(&n, "uninstall", 0);
    assert_eq!(
        n.read("/etc/default/grub").unwrap(),
        edited.replace("GRUB_DEFAULT=saved", "GRUB_DEFAULT=0")
    );
}

#[test]
fn a_drop_in_setting_grub_default_again_or_no_defaults_file_is_refused_unchanged() {
    let n = node();
    n.file("/etc/default/grub.d/50-cloudimg-settings.cfg", "GRUB_DEFAULT=0\n");
    let before = n.snapshot();
    run(&n, "apply", 1).expect_output("/etc/default/grub.d/50-cloudimg-settings.cfg sets GRUB_DEFAULT after");
    before.assert_same(&n.snapshot());
    n.file("/etc/default/grub.d/50-cloudimg-settings.cfg", "GRUB_DEFAULT=saved\n");
    run(&n, "apply", 0);

    let n = node();
    std::fs::remove_file(n.path("/etc/default/grub")).unwrap();
    let before = n.snapshot();
    run(&n, "apply", 1).expect_output("/etc/default/grub does not exist");
    before.assert_same(&n.snapshot());
}

#[test]
fn a_configuration_that_does_not_boot_the_saved_entry_fails_with_the_saved_entry_unchanged() {
    let n = node();
    // A grub.d script of the node's own setting the default after 00_header.
    let overriding = format!(
        "( {}\n) || exit 1\nsed -i 's/set default=\"${{saved_entry}}\"/set default=\"0\"/' \
         \"$SKYHOOK_HOST_ROOT/boot/grub/grub.cfg\"",
        skyhook_testkit::boot_tools::UPDATE_GRUB
    );
    n.stand_in("update-grub", &overriding);
    run(&n, "apply", 1).expect_output("does not boot GRUB's saved entry");
    assert_eq!(saved_entry(&n), None);
    run(&n, "uninstall", 0);
    assert_eq!(n.read("/etc/default/grub").unwrap(), GRUB_DEFAULTS);
}

#[test]
fn a_flat_menu_gives_the_top_level_entry() {
    let n = node();
    n.file("/etc/default/grub", format!("{GRUB_DEFAULTS}GRUB_DISABLE_SUBMENU=y\n"));
    run(&n, "apply", 0);
    assert_eq!(
        saved_entry(&n).as_deref(),
        Some("gnulinux-6.17.0-1019-aws-advanced-0b1c")
    );
    run(&n, "apply-check", 0);
}

const HALF_CONFIGURED: &str = "Package: linux-image-6.8.0-1021-aws\nStatus: install ok half-configured\n\n\
                               Package: bash\nStatus: install ok installed\n";

#[test]
fn a_half_configured_dpkg_is_finished_first_or_reported_with_nothing_installed() {
    let n = node();
    n.file("/var/lib/dpkg/status", HALF_CONFIGURED);
    run(&n, "apply", 0).expect_output("dpkg --configure -a");
    assert!(!n.read("/var/lib/dpkg/status").unwrap().contains("half-configured"));
    assert!(n.package_version(&format!("linux-image-{TARGET}")).is_some());

    let n = node();
    n.file("/var/lib/dpkg/status", HALF_CONFIGURED);
    std::fs::write(n.commands_dir().join("dpkg-configure-fails"), "").unwrap();
    let before = n.snapshot();
    run(&n, "apply", 1).expect_output("linux-image-6.8.0-1021-aws (half-configured)");
    before.assert_same(&n.snapshot());
    assert!(n.package_version(&format!("linux-image-{TARGET}")).is_none());
}

#[test]
fn a_rhel_node_or_one_without_grub_tools_is_refused_unchanged() {
    let n = node();
    n.file(
        "/etc/os-release",
        "ID=rocky\nVERSION_ID=\"9.4\"\nID_LIKE=\"rhel centos fedora\"\n",
    );
    let before = n.snapshot();
    run(&n, "apply", 1).expect_output("needs an Ubuntu node");
    before.assert_same(&n.snapshot());

    let n = node();
    n.remove_stand_in("grub-set-default");
    let before = n.snapshot();
    run(&n, "apply", 1).expect_output("grub-set-default");
    before.assert_same(&n.snapshot());
}

#[test]
fn the_full_entry_checks_the_kernel_before_its_steps() {
    let mut n = node();
    n.env("NVIDIA_SETUP_INSTALL_KERNEL", "false");
    let before = n.snapshot();
    run(&n, "apply", 1).expect_output(&format!("the node runs {RUNNING}, the combination needs {TARGET}"));
    before.assert_same(&n.snapshot());
    run(&n, "apply-check", 1).expect_output(&format!("the node runs {RUNNING}"));
    n.env("NVIDIA_SETUP_KERNEL_ALLOW_NEWER", "true");
    reboot_into(&n, "6.18.0-1001-aws");
    // Past the kernel: the EKS steps run (tests/eks.rs; this node's archive lacks their tools).
    run(&n, "apply", 1)
        .expect_output("kernel: running 6.18.0-1001-aws satisfies 6.17.0-1019-aws")
        .expect_output("Unable to locate package curl");
}

#[test]
fn nvidia_kernel_replaces_the_default() {
    let mut n = node();
    n.env("NVIDIA_KERNEL", "6.18.0-1001-aws");
    run(&n, "apply", 0);
    assert_eq!(
        saved_entry(&n).as_deref(),
        Some("gnulinux-advanced-0b1c>gnulinux-6.18.0-1001-aws-advanced-0b1c")
    );
    assert!(n.package_version(&format!("linux-image-{TARGET}")).is_none());
}

/// A bcm node running [`TARGET`] with its headers installed.
fn bcm() -> Node {
    let n = node();
    n.configmap("service", "bcm");
    reboot_into(&n, TARGET);
    n.file(&format!("/usr/src/linux-headers-{TARGET}/.config"), "CONFIG_X=y\n");
    n
}

#[test]
fn bcm_links_the_running_kernels_headers_and_uninstall_takes_the_link_away() {
    let n = bcm();
    let link = format!("/usr/src/linux-{TARGET}");
    run(&n, "apply-check", 1).expect_output(".config does not resolve");
    run(&n, "apply", 0);
    assert_eq!(
        std::fs::read_link(n.path(&link)).unwrap().to_str(),
        Some(format!("linux-headers-{TARGET}").as_str()),
        "a relative link, as upstream's"
    );
    run(&n, "apply-check", 0);
    run(&n, "post-interrupt-check", 0);
    assert_eq!(apt_calls(&n), Vec::<String>::new(), "bcm does no kernel work");
    run(&n, "uninstall", 0);
    assert!(!n.exists(&link));
    run(&n, "uninstall-check", 0);
}

#[test]
fn bcm_leaves_a_real_directory_and_puts_a_replaced_link_back() {
    let n = bcm();
    let link = format!("/usr/src/linux-{TARGET}");
    n.file(&format!("{link}/.config"), "CONFIG_Y=y\n");
    let before = n.snapshot();
    run(&n, "apply", 0).expect_output("refusing to replace it");
    before.assert_same(&n.snapshot());

    let n = bcm();
    std::os::unix::fs::symlink("elsewhere", n.path(&link)).unwrap();
    run(&n, "apply", 0);
    run(&n, "uninstall", 0);
    assert_eq!(std::fs::read_link(n.path(&link)).unwrap().to_str(), Some("elsewhere"));

    let n = bcm();
    std::fs::remove_dir_all(n.path(&format!("/usr/src/linux-headers-{TARGET}"))).unwrap();
    let before = n.snapshot();
    run(&n, "apply", 1).expect_output(&format!("install the package linux-headers-{TARGET} first"));
    before.assert_same(&n.snapshot());
}

#[test]
fn auto_takes_the_accelerator_the_node_shows() {
    let n = node();
    n.file("/proc/sys/kernel/arch", "aarch64\n")
        .configmap("accelerator", "auto");
    let dir = n.copy_dir().join("node-metadata");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("labels.json"), r#"{"nvidia.com/gpu.product": "NVIDIA-GB300"}"#).unwrap();
    run(&n, "apply", 0).expect_output("accelerator gb300");
    assert!(n.package_version(&format!("linux-image-{TARGET_64K}")).is_some());
}

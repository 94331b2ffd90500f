// SPDX-License-Identifier: Apache-2.0
//! grub.conf on simulated arm64 nodes. arm64 boots only through
//! UEFI, and where its GRUB configuration lives depends on the family and release:
//! Debian/Ubuntu (grub-efi-arm64) regenerate `/boot/grub/grub.cfg` with update-grub;
//! RHEL-like hosts use grubby on BLS entries, or without grubby grub2-mkconfig
//! writing the EFI vendor's `/boot/efi/EFI/<vendor>/grub.cfg` (RHEL 8) or
//! `/boot/grub2/grub.cfg` (RHEL 9+, whose EFI grub.cfg is a stub left untouched).
//! The nodes say `aarch64` in `/proc/sys/kernel/arch` and have no
//! `/sys/firmware/efi` (as in a chroot): the architecture alone must make them EFI.

mod common;

use common::*;
use skyhook_testkit::Node;
use skyhook_testkit::boot_tools::{EFI_STUB, GRUB2_MKCONFIG, GRUB2_MKCONFIG_BLS, GRUBBY, bls_entry, bls_options};
use skyhook_testkit::skyhook_core::os::distro::fixtures::ROCKY_9;

/// What the package puts on the command line.
const ARGS: &str = "iommu.passthrough=1\ninit_on_alloc=0\n";
/// Rocky Linux 8 (no fixture in core: only this scenario needs it).
const ROCKY_8: &str = "NAME=\"Rocky Linux\"\nVERSION=\"8.10 (Green Obsidian)\"\nID=\"rocky\"\nID_LIKE=\"rhel centos fedora\"\nVERSION_ID=\"8.10\"\nPLATFORM_ID=\"platform:el8\"\nPRETTY_NAME=\"Rocky Linux 8.10 (Green Obsidian)\"\n";
/// Ubuntu's EFI stub (grub-efi-arm64 installs it): it loads /boot/grub/grub.cfg.
const UBUNTU_EFI_STUB: &str =
    "search.fs_uuid 0a1b-2c3d root\nset prefix=($root)'/boot/grub'\nconfigfile $prefix/grub.cfg\n";
/// The BLS entry of a Rocky 9 arm64 kernel.
const ENTRY: &str = "/boot/loader/entries/0a1b-5.14.0-427.el9.aarch64.conf";
const GRUB_DEFAULTS: &str = "GRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX=\"rd.lvm.lv=rl/root\"\nGRUB_ENABLE_BLSCFG=true\n";

/// The tuning node made arm64: the kernel says aarch64, no /sys/firmware/efi.
fn arm64(n: &Node) -> &Node {
    n.file("/proc/sys/kernel/arch", "aarch64\n");
    hugepage_sizes(n, &ARM64_4K_HUGEPAGES, 2048);
    n
}

/// A RHEL-like arm64 node of `os_release` without the Debian GRUB layout.
fn rhel_arm64(os_release: &str) -> Node {
    let n = node();
    arm64(&n);
    n.file("/etc/os-release", os_release).remove_stand_in("update-grub");
    std::fs::remove_dir_all(n.path("/etc/default/grub.d")).unwrap();
    std::fs::remove_dir_all(n.path("/boot/grub")).unwrap();
    n.file("/etc/default/grub", GRUB_DEFAULTS);
    n
}

/// config, config-check, uninstall, uninstall-check: the node ends byte-identical.
fn config_then_uninstall(n: &Node, check: impl Fn(&Node)) {
    let before = n.snapshot();
    n.configmap("grub.conf", ARGS);
    run(n, "config", 0);
    check(n);
    run(n, "config-check", 0);
    run(n, "uninstall", 0);
    run(n, "uninstall-check", 0);
    before.assert_same(&n.snapshot());
}

fn calls_of(n: &Node, program: &str) -> Vec<String> {
    n.calls().into_iter().filter(|c| c.starts_with(program)).collect()
}

#[test]
fn debian_arm64_regenerates_boot_grub_with_update_grub_and_keeps_the_efi_stub() {
    let n = node();
    arm64(&n).file("/boot/efi/EFI/ubuntu/grub.cfg", UBUNTU_EFI_STUB);
    config_then_uninstall(&n, |n| {
        let cfg = n.read("/boot/grub/grub.cfg").unwrap();
        assert!(cfg.contains("iommu.passthrough=1 init_on_alloc=0"), "{cfg}");
        assert_eq!(
            n.read("/boot/efi/EFI/ubuntu/grub.cfg").as_deref(),
            Some(UBUNTU_EFI_STUB)
        );
        assert_eq!(calls_of(n, "update-grub"), ["update-grub"]);
    });
}

#[test]
fn rhel8_arm64_without_grubby_writes_the_efi_vendors_grub_cfg() {
    let n = rhel_arm64(ROCKY_8);
    n.stand_in("grub2-mkconfig", GRUB2_MKCONFIG)
        .file("/boot/efi/EFI/BOOT/BOOTAA64.EFI", "shim")
        .run_stand_in("grub2-mkconfig", &["-o", "/boot/efi/EFI/rocky/grub.cfg"])
        .expect_code(0);
    config_then_uninstall(&n, |n| {
        let cfg = n.read("/boot/efi/EFI/rocky/grub.cfg").unwrap();
        assert!(
            cfg.contains("rd.lvm.lv=rl/root iommu.passthrough=1 init_on_alloc=0"),
            "{cfg}"
        );
        assert!(
            !n.exists("/boot/grub2/grub.cfg"),
            "RHEL 8 on EFI boots the vendor's file only"
        );
        assert!(!n.exists("/boot/efi/EFI/BOOT/grub.cfg"));
        assert_eq!(
            calls_of(n, "grub2-mkconfig"),
            ["grub2-mkconfig -o /boot/efi/EFI/rocky/grub.cfg"]
        );
    });
}

#[test]
fn rhel9_arm64_with_grubby_edits_the_bls_entries_and_no_grub_cfg() {
    let n = rhel_arm64(ROCKY_9);
    n.file(
        ENTRY,
        bls_entry(
            "5.14.0-427.el9.aarch64",
            "root=/dev/mapper/rl-root ro rd.lvm.lv=rl/root",
        ),
    )
    .file("/boot/efi/EFI/rocky/grub.cfg", EFI_STUB)
    .stand_in("grubby", GRUBBY)
    .stand_in("grub2-mkconfig", GRUB2_MKCONFIG_BLS);
    config_then_uninstall(&n, |n| {
        let options = bls_options(n, ENTRY);
        assert!(options.ends_with("iommu.passthrough=1 init_on_alloc=0"), "{options}");
        assert_eq!(n.read("/boot/efi/EFI/rocky/grub.cfg").as_deref(), Some(EFI_STUB));
        assert!(
            calls_of(n, "grub2-mkconfig").is_empty(),
            "grubby edits the entries itself"
        );
    });
}

#[test]
fn rhel9_arm64_without_grubby_writes_boot_grub2_and_leaves_the_efi_stub_byte_identical() {
    let n = rhel_arm64(ROCKY_9);
    n.file(
        ENTRY,
        bls_entry(
            "5.14.0-427.el9.aarch64",
            "root=/dev/mapper/rl-root ro rd.lvm.lv=rl/root",
        ),
    )
    .file("/boot/efi/EFI/rocky/grub.cfg", EFI_STUB)
    .stand_in("grub2-mkconfig", GRUB2_MKCONFIG_BLS)
    // The entries as the installer's grub2-mkconfig wrote them (it updates the BLS
    // command line from /etc/default/grub, spacing and all).
    .run_stand_in(
        "grub2-mkconfig",
        &["--update-bls-cmdline", "-o", "/boot/grub2/grub.cfg"],
    )
    .expect_code(0);
    // The stand-in, like RHEL 9's grub2-mkconfig, refuses to write over the stub.
    n.run_stand_in("grub2-mkconfig", &["-o", "/boot/efi/EFI/rocky/grub.cfg"])
        .expect_code(1)
        .expect_output("will overwrite the GRUB wrapper");
    config_then_uninstall(&n, |n| {
        assert_eq!(n.read("/boot/efi/EFI/rocky/grub.cfg").as_deref(), Some(EFI_STUB));
        assert!(
            n.read("/boot/grub2/grub.cfg")
                .unwrap()
                .contains("\ninsmod blscfg\nblscfg\n"),
            "loads the BLS entries"
        );
        let options = bls_options(n, ENTRY);
        assert!(options.contains("iommu.passthrough=1 init_on_alloc=0"), "{options}");
        assert_eq!(
            calls_of(n, "grub2-mkconfig"),
            ["grub2-mkconfig --update-bls-cmdline -o /boot/grub2/grub.cfg"]
        );
    });
}

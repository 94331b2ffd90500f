// SPDX-License-Identifier: Apache-2.0
//! kdump on simulated arm64 nodes: the nodes say `aarch64` in
//! `/proc/sys/kernel/arch` and have no `/sys/firmware/efi` (as in a chroot), so the
//! architecture alone must make them EFI. The crashkernel forms an arm64 kernel
//! takes (`,high` above 4 GiB, with its `,low` region as a second argument) reach
//! each family's boot configuration exactly: Debian's drop-in and update-grub,
//! RHEL 8's EFI vendor grub.cfg through grub2-mkconfig, RHEL 9's BLS entries through
//! grubby (which holds one `crashkernel=` only) or grub2-mkconfig (the EFI stub left
//! byte-identical). post-interrupt-check reads `/sys/kernel/kexec_crash_size` as
//! the kernel writes it, and config's advice for 64k-page nodes counts the low
//! region.

mod common;

use common::*;
use skyhook_testkit::Node;
use skyhook_testkit::boot_tools::{EFI_STUB, GRUB2_MKCONFIG, GRUB2_MKCONFIG_BLS, GRUBBY, GRUBBY_C};

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;
/// The pair: 1 GiB above 4 GiB, 128 MiB below for the crash kernel's devices.
const PAIR: &str = "1G,high 128M,low";
const PAIR_ARGS: &str = "crashkernel=1G,high crashkernel=128M,low";
const UBUNTU_EFI_STUB: &str =
    "search.fs_uuid 0a1b-2c3d root\nset prefix=($root)'/boot/grub'\nconfigfile $prefix/grub.cfg\n";
const VENDOR_CFG: &str = "/boot/efi/EFI/rocky/grub.cfg";
const BLS_ENTRY: &str = "/boot/loader/entries/0a1b-5.14.0-427.el9.x86_64.conf";

/// `distro`'s node made arm64 (the kernel says aarch64; no /sys/firmware/efi).
fn arm64(distro: Distro) -> Node {
    let node = node(distro);
    node.file("/proc/sys/kernel/arch", "aarch64\n");
    node
}

/// A RHEL-like arm64 node of `distro` without grubby, grub2-mkconfig `mkconfig` writing `output`.
fn arm64_grub2(distro: Distro, mkconfig: &str, output: &str) -> Node {
    let node = arm64(distro);
    node.remove_stand_in("grubby")
        .stand_in("grub2-mkconfig", mkconfig)
        .run_stand_in("grub2-mkconfig", &["-o", output])
        .expect_code(0);
    node
}

/// Sets the crashkernel key on an installed node and runs config (exit 0, reboot).
fn config(node: &Node, value: &str) {
    node.configmap("crashkernel", value);
    node.run("config")
        .expect_code(0)
        .expect_output("interrupt needed: {type: reboot}");
}

#[test]
fn debian_arm64_carries_high_and_low_as_two_arguments_and_reads_kexec_crash_size_as_the_kernel_writes_it() {
    let node = arm64(UBUNTU);
    node.file("/boot/efi/EFI/ubuntu/grub.cfg", UBUNTU_EFI_STUB);
    let before = files(&node);
    node.run("apply").expect_code(0);
    node.clear_calls();
    config(&node, PAIR);
    assert_eq!(node.calls(), ["update-grub"]);
    let drop_in = node.read("/etc/default/grub.d/kdump-tools.cfg").unwrap();
    assert!(
        drop_in.contains(&format!("${{GRUB_CMDLINE_LINUX_DEFAULT}} {PAIR_ARGS}\"")),
        "{drop_in}"
    );
    assert!(default_entry_args(&node, UBUNTU).ends_with(PAIR_ARGS));
    assert_eq!(
        node.read("/boot/efi/EFI/ubuntu/grub.cfg").as_deref(),
        Some(UBUNTU_EFI_STUB)
    );
    node.run("config-check").expect_code(0);

    // Current kernels count both regions in kexec_crash_size, older ones the main one.
    for reported in [GIB + 128 * MIB, GIB] {
        reboot(&node, UBUNTU, reported);
        node.run("post-interrupt-check").expect_code(0);
    }
    // Less than the main region: memory was released since boot.
    reboot(&node, UBUNTU, 512 * MIB);
    node.run("post-interrupt-check")
        .expect_code(1)
        .expect_output("(536870912 bytes) are reserved for the crash kernel, less than the")
        .expect_output("(1073741824 bytes) that crashkernel=1G,high 128M,low asks for");
    // A later ,low on the command line is the one the kernel reads.
    reboot(&node, UBUNTU, GIB);
    let cmdline = node.read("/proc/cmdline").unwrap();
    node.file("/proc/cmdline", cmdline.replace('\n', " crashkernel=64M,low\n"));
    node.run("post-interrupt-check")
        .expect_code(1)
        .expect_output("has crashkernel=128M,low, but a later crashkernel=64M,low overrides it");

    node.run("uninstall").expect_code(0);
    node.run("uninstall-check").expect_code(0);
    before.assert_same(&files(&node));
}

#[test]
fn rhel8_arm64_without_grubby_writes_both_arguments_to_the_efi_vendors_grub_cfg() {
    let node = arm64_grub2(ROCKY_8, GRUB2_MKCONFIG, VENDOR_CFG);
    node.file("/boot/efi/EFI/BOOT/BOOTAA64.EFI", "shim");
    let before = files(&node);
    node.run("apply").expect_code(0);
    node.clear_calls();
    config(&node, PAIR);
    assert_eq!(node.calls(), [format!("grub2-mkconfig -o {VENDOR_CFG}")]);
    let defaults = node.read("/etc/default/grub").unwrap();
    assert!(defaults.contains(&format!("rhgb quiet {PAIR_ARGS}\"")), "{defaults}");
    let cfg = node.read(VENDOR_CFG).unwrap();
    assert!(
        cfg.contains(&format!("ro rd.lvm.lv=rl/root rhgb quiet {PAIR_ARGS}\n")),
        "{cfg}"
    );
    assert!(
        !node.exists("/boot/grub2/grub.cfg"),
        "RHEL 8 on EFI boots the vendor's file"
    );
    node.run("config-check").expect_code(0);
    node.run("uninstall").expect_code(0);
    node.run("uninstall-check").expect_code(0);
    before.assert_same(&files(&node));
}

#[test]
fn rhel9_arm64_with_grubby_takes_a_high_value_and_the_pair_the_c_grubby_refuses() {
    let node = arm64(ROCKY);
    node.file(VENDOR_CFG, EFI_STUB);
    preinstall(&node, ROCKY);
    node.run("apply").expect_code(0);
    let boot_files = |n: &Node| {
        [
            "/etc/default/grub",
            "/etc/kernel/cmdline",
            BLS_ENTRY,
            "/boot/loader/entries/0a1b-0-rescue.conf",
        ]
        .map(|p| n.read(p))
    };
    let before_config = boot_files(&node);
    // The C grubby (RHEL 7, Amazon Linux 2) replaces only the first argument of a key later.
    node.stand_in("grubby", GRUBBY_C);
    node.clear_calls();
    let before = node.snapshot();
    node.configmap("crashkernel", PAIR)
        .configmap("kdump.conf", "path /var/crash\n");
    node.run("config")
        .expect_code(2)
        .expect_output("bad input, nothing on the node was changed")
        .expect_output(
            "the C grubby (RHEL 7, Amazon Linux 2), which keeps one argument per key across updates, so \
             crashkernel=1G,high crashkernel=128M,low cannot both be set",
        );
    assert!(node.calls().is_empty(), "{:?}", node.calls());
    before.assert_same(&node.snapshot());

    // grubby-bls keeps both, and uninstall gives the entries back exactly.
    node.stand_in("grubby", GRUBBY);
    node.remove_configmap("kdump.conf");
    config(&node, PAIR);
    assert!(
        bls_options(&node, BLS_ENTRY).ends_with(PAIR_ARGS),
        "{}",
        bls_options(&node, BLS_ENTRY)
    );
    node.run("config-check").expect_code(0);
    node.run("uninstall").expect_code(0);
    assert_eq!(boot_files(&node), before_config);
    node.run("apply").expect_code(0);

    node.remove_configmap("kdump.conf");
    config(&node, "512M,high");
    let options = bls_options(&node, BLS_ENTRY);
    assert_eq!(
        options
            .split(' ')
            .filter(|a| a.starts_with("crashkernel="))
            .collect::<Vec<_>>(),
        ["crashkernel=512M,high"],
        "{options}"
    );
    assert_eq!(node.read(VENDOR_CFG).as_deref(), Some(EFI_STUB));
    node.run("config-check").expect_code(0);
    reboot(&node, ROCKY, 512 * MIB + 128 * MIB);
    node.run("post-interrupt-check").expect_code(0);
}

#[test]
fn rhel9_arm64_without_grubby_writes_boot_grub2_and_leaves_the_efi_stub_byte_identical() {
    let node = arm64_grub2(ROCKY, GRUB2_MKCONFIG_BLS, "/boot/grub2/grub.cfg");
    node.file(VENDOR_CFG, EFI_STUB);
    node.run("apply").expect_code(0);
    node.clear_calls();
    config(&node, PAIR);
    assert_eq!(
        node.calls(),
        ["grub2-mkconfig --update-bls-cmdline -o /boot/grub2/grub.cfg"]
    );
    assert_eq!(node.read(VENDOR_CFG).as_deref(), Some(EFI_STUB));
    assert!(
        bls_options(&node, BLS_ENTRY).trim_end().ends_with(PAIR_ARGS),
        "grub2-mkconfig writes $GRUB_CMDLINE_LINUX_DEFAULT (empty) after ours: {}",
        bls_options(&node, BLS_ENTRY)
    );
    node.run("config-check").expect_code(0);
    node.run("uninstall").expect_code(0);
    node.run("uninstall-check").expect_code(0);
    assert_eq!(node.read(VENDOR_CFG).as_deref(), Some(EFI_STUB));
    assert!(!bls_options(&node, BLS_ENTRY).contains("crashkernel=1G,high"));
}

#[test]
fn the_64k_page_advice_counts_the_low_region_beside_high() {
    let node = arm64(UBUNTU);
    node.file(
        "/proc/meminfo",
        format!("MemTotal:       {MEM_KB} kB\nHugepagesize:     524288 kB\n"),
    )
    .file("/sys/bus/pci/drivers/mlx5_core/0000:01:00.0", "");
    node.run("apply").expect_code(0);
    for (value, warned) in [
        ("512M,high", true),
        ("512M,high 256M,low", true),
        ("1G,high", false),
        ("768M,high 256M,low", false),
    ] {
        node.configmap("crashkernel", value);
        let run = node.run("config");
        run.expect_code(0);
        assert_eq!(
            run.output()
                .contains("this node's kernel runs with 64 KiB pages and 1 ConnectX"),
            warned,
            "{value}: {}",
            run.output()
        );
    }
}

// SPDX-License-Identifier: Apache-2.0
//! The boot tool stand-ins behave as the real tools they model: one test per
//! behaviour listed in `skyhook_testkit::boot_tools`.

use skyhook_testkit::Node;
use skyhook_testkit::boot_tools::{
    EFI_STUB, GRUB2_MKCONFIG_BLS, GRUB2_MKCONFIG_FEDORA, GRUBBY, GRUBBY_C, UPDATE_GRUB, add_kernel_entry, bls_entry,
    bls_options, sourced,
};

const A: &str = "/boot/loader/entries/m-5.14.0-427.el9.x86_64.conf";
const B: &str = "/boot/loader/entries/m-5.14.0-70.el9.x86_64.conf";
const RESCUE: &str = "/boot/loader/entries/m-0-rescue.conf";

/// A grubby-bls node: three entries (the rescue one sorts last), GRUB defaults with
/// both variables.
fn bls_node() -> Node {
    let n = Node::new("/bin/true");
    std::fs::create_dir_all(n.path("/etc/kernel/install.d")).unwrap();
    n.stand_in("grubby", GRUBBY)
        .file(A, bls_entry("5.14.0-427.el9.x86_64", "root=/dev/x ro crashkernel=auto quiet"))
        .file(B, bls_entry("5.14.0-70.el9.x86_64", "root=/dev/x ro crashkernel=auto"))
        .file(RESCUE, bls_entry("0-rescue", "root=/dev/x ro rescue"))
        .file(
            "/etc/default/grub",
            "GRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX=\"crashkernel=auto rhgb\"\nGRUB_CMDLINE_LINUX_DEFAULT=\"quiet splash\"\n",
        );
    n
}

fn grubby(n: &Node, args: &[&str]) -> String {
    let r = n.run_stand_in("grubby", args);
    r.expect_code(0);
    r.output()
}

#[test]
fn bls_args_remove_every_argument_of_the_key_and_append_at_the_end() {
    let n = bls_node();
    grubby(
        &n,
        &[
            "--update-kernel=/boot/vmlinuz-5.14.0-427.el9.x86_64",
            "--args=crashkernel=1G,high crashkernel=128M,low",
        ],
    );
    assert_eq!(
        bls_options(&n, A),
        "root=/dev/x ro quiet crashkernel=1G,high crashkernel=128M,low",
        "both kept, at the end"
    );
    assert_eq!(
        bls_options(&n, B),
        "root=/dev/x ro crashkernel=auto",
        "another kernel untouched"
    );
    grubby(
        &n,
        &[
            "--update-kernel=/boot/vmlinuz-5.14.0-427.el9.x86_64",
            "--args=crashkernel=512M",
        ],
    );
    assert_eq!(bls_options(&n, A), "root=/dev/x ro quiet crashkernel=512M");
    assert!(
        !n.exists("/etc/kernel/cmdline"),
        "a per-kernel update writes no other file"
    );
}

#[test]
fn bls_a_double_quoted_value_is_written_as_given_and_unescaped_into_the_grub_defaults() {
    let n = bls_node();
    n.file(
        A,
        bls_entry("5.14.0-427.el9.x86_64", "root=/dev/x ro pci=realloc quiet"),
    );
    let acs = "pci=\"config_acs=1@0:1.0;1@0:2.0\"";
    grubby(&n, &["--update-kernel=ALL", &format!("--args={acs}")]);
    assert_eq!(
        bls_options(&n, A),
        format!("root=/dev/x ro quiet {acs}"),
        "quotes kept, pci= replaced"
    );
    assert_eq!(bls_options(&n, RESCUE), format!("root=/dev/x ro rescue {acs}"));
    assert_eq!(
        n.read("/etc/kernel/cmdline").unwrap(),
        format!("root=/dev/x ro rescue {acs}\n")
    );
    let grub = n.read("/etc/default/grub").unwrap();
    assert!(
        grub.contains(&format!("GRUB_CMDLINE_LINUX=\"crashkernel=auto rhgb {acs}\"\n")),
        "unescaped, as grubby-bls writes it: {grub}"
    );
    let (value, _) = sourced(&n, "/etc/default/grub", "GRUB_CMDLINE_LINUX");
    assert_eq!(
        value, "crashkernel=auto rhgb pci=config_acs=1@0:1.0",
        "sourcing it loses the quotes and the second port"
    );
}

#[test]
fn bls_remove_args_takes_one_exact_argument_or_every_one_of_a_bare_key() {
    let n = bls_node();
    n.file(A, bls_entry("5.14.0-427.el9.x86_64", "ro x=1 q x=2 x=1 q"));
    grubby(
        &n,
        &[
            "--update-kernel=/boot/vmlinuz-5.14.0-427.el9.x86_64",
            "--remove-args=x=1",
        ],
    );
    assert_eq!(bls_options(&n, A), "ro q x=2 x=1 q", "the first x=1 only");
    grubby(
        &n,
        &["--update-kernel=/boot/vmlinuz-5.14.0-427.el9.x86_64", "--remove-args=x"],
    );
    assert_eq!(bls_options(&n, A), "ro q q", "every x");
}

#[test]
fn bls_info_lists_entries_in_reverse_version_order_with_root_apart() {
    let n = bls_node();
    let out = grubby(&n, &["--info=ALL"]);
    let kernels: Vec<&str> = out.lines().filter(|l| l.starts_with("kernel=")).collect();
    assert_eq!(
        kernels,
        [
            "kernel=\"/boot/vmlinuz-5.14.0-427.el9.x86_64\"",
            "kernel=\"/boot/vmlinuz-5.14.0-70.el9.x86_64\"",
            "kernel=\"/boot/vmlinuz-0-rescue\""
        ]
    );
    assert!(
        out.contains("args=\"ro crashkernel=auto quiet\"\nroot=\"/dev/x\""),
        "{out}"
    );
    assert!(out.contains("id=\"m-0-rescue\""), "{out}");
}

#[test]
fn bls_all_rewrites_both_cmdline_lines_of_the_grub_defaults() {
    let n = bls_node();
    grubby(&n, &["--update-kernel=ALL", "--args=crashkernel=1G"]);
    assert_eq!(
        n.read("/etc/default/grub").unwrap(),
        "GRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX=\"rhgb crashkernel=1G\"\nGRUB_CMDLINE_LINUX=\"rhgb crashkernel=1G\"\n",
        "_DEFAULT's quiet splash is lost, as with the real grubby"
    );
    for e in [A, B, RESCUE] {
        assert!(bls_options(&n, e).ends_with(" crashkernel=1G"), "{e}");
    }
}

#[test]
fn bls_all_leaves_the_grub_defaults_when_grub_cmdline_linux_is_empty() {
    let n = bls_node();
    let text = "GRUB_CMDLINE_LINUX=\"\"\nGRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"\n";
    n.file("/etc/default/grub", text);
    grubby(&n, &["--update-kernel=ALL", "--args=x=1"]);
    assert_eq!(n.read("/etc/default/grub").unwrap(), text);
}

#[test]
fn bls_all_creates_kernel_cmdline_from_the_last_entry_then_edits_it() {
    let n = bls_node();
    grubby(&n, &["--update-kernel=ALL", "--args=crashkernel=1G"]);
    assert_eq!(
        n.read("/etc/kernel/cmdline").unwrap(),
        "root=/dev/x ro rescue crashkernel=1G\n",
        "from the rescue entry, which sorts last"
    );
    n.file("/etc/kernel/cmdline", "root=/dev/y ro crashkernel=auto mine\n");
    grubby(&n, &["--update-kernel=ALL", "--args=crashkernel=2G"]);
    assert_eq!(
        n.read("/etc/kernel/cmdline").unwrap(),
        "root=/dev/y ro mine crashkernel=2G\n"
    );
}

#[test]
fn kernels_installed_later_take_kernel_cmdline() {
    let n = bls_node();
    add_kernel_entry(&n, "6.0");
    assert_eq!(
        bls_options(&n, "/boot/loader/entries/0a1b-6.0.conf"),
        "root=/dev/x ro crashkernel=auto quiet",
        "without the file: the first entry's"
    );
    n.file("/etc/kernel/cmdline", "root=/dev/x  ro x=1\n");
    add_kernel_entry(&n, "6.1");
    assert_eq!(
        bls_options(&n, "/boot/loader/entries/0a1b-6.1.conf"),
        "root=/dev/x ro x=1"
    );
}

const GRUB_CFG: &str = "menuentry 'RHEL 7' {\n\tlinux16 /vmlinuz-3.10 root=/dev/x ro crashkernel=auto rhgb quiet\n}\n\
                        menuentry 'rescue' {\n\tlinux16 /vmlinuz-0-rescue root=/dev/x ro crashkernel=auto\n}\n";

fn c_node() -> Node {
    let n = Node::new("/bin/true");
    n.stand_in("grubby", GRUBBY_C)
        .file("/boot/grub2/grub.cfg", GRUB_CFG)
        .file("/etc/default/grub", "GRUB_CMDLINE_LINUX=\"crashkernel=auto\"\n");
    n
}

#[test]
fn c_grubby_replaces_in_place_and_appends_a_second_argument_of_a_key() {
    let n = c_node();
    grubby(
        &n,
        &["--update-kernel=ALL", "--args=crashkernel=1G,high crashkernel=128M,low"],
    );
    let cfg = n.read("/boot/grub2/grub.cfg").unwrap();
    assert!(
        cfg.contains("\tlinux16 /vmlinuz-3.10 root=/dev/x ro crashkernel=1G,high rhgb quiet crashkernel=128M,low\n"),
        "{cfg}"
    );
    grubby(&n, &["--update-kernel=/boot/vmlinuz-3.10", "--args=crashkernel=512M"]);
    let cfg = n.read("/boot/grub2/grub.cfg").unwrap();
    assert!(
        cfg.contains("ro crashkernel=512M rhgb quiet crashkernel=128M,low\n"),
        "a later update replaces only the first: {cfg}"
    );
    assert_eq!(
        n.read("/etc/default/grub").unwrap(),
        "GRUB_CMDLINE_LINUX=\"crashkernel=auto\"\n",
        "no other file edited"
    );
    assert!(!n.exists("/etc/kernel/cmdline"));
}

#[test]
fn c_grubby_removes_the_first_argument_of_a_key_or_of_that_value() {
    let n = c_node();
    n.file("/boot/grub2/grub.cfg", "\tlinux16 /vmlinuz-3.10 ro x=1 x=2 x=2 q\n");
    grubby(&n, &["--update-kernel=ALL", "--remove-args=x=2"]);
    assert_eq!(
        n.read("/boot/grub2/grub.cfg").unwrap(),
        "\tlinux16 /vmlinuz-3.10 ro x=1 x=2 q\n"
    );
    grubby(&n, &["--update-kernel=ALL", "--remove-args=x"]);
    assert_eq!(
        n.read("/boot/grub2/grub.cfg").unwrap(),
        "\tlinux16 /vmlinuz-3.10 ro x=2 q\n"
    );
    let info = grubby(&n, &["--info=ALL"]);
    assert_eq!(info, "index=0\nkernel=/boot/vmlinuz-3.10\nargs=\"ro x=2 q\"\n");
}

#[test]
fn bls_all_writes_no_kernel_cmdline_without_etc_kernel() {
    let n = bls_node();
    std::fs::remove_dir_all(n.path("/etc/kernel")).unwrap();
    grubby(&n, &["--update-kernel=ALL", "--args=x=1"]);
    assert!(!n.exists("/etc/kernel/cmdline"));
    assert!(bls_options(&n, A).ends_with(" x=1"), "the entries are still updated");
}

/// A RHEL 9.4 node with two BLS entries (one a debug kernel), GRUB defaults with
/// `GRUB_ENABLE_BLSCFG=true`, grub2-mkconfig `program`.
fn mkconfig_node(program: &str) -> Node {
    let n = Node::new("/bin/true");
    n.stand_in("grub2-mkconfig", program)
        .file(
            "/etc/os-release",
            skyhook_testkit::skyhook_core::os::distro::fixtures::RHEL_9,
        )
        .file(A, bls_entry("5.14.0-427.el9.x86_64", "root=/dev/x ro  custom"))
        .file(DEBUG, bls_entry("5.14.0-427.el9.x86_64+debug", "root=/dev/x ro"))
        .file(
            "/etc/default/grub",
            "GRUB_CMDLINE_LINUX=\"crashkernel=auto  rhgb\"\nGRUB_CMDLINE_LINUX_DEBUG=\"debug\"\nGRUB_ENABLE_BLSCFG=true\n",
        );
    n
}

const DEBUG: &str = "/boot/loader/entries/m-5.14.0-427.el9.x86_64+debug.conf";
/// What `update_bls_cmdline` makes of [`mkconfig_node`]'s defaults: one string, spacing kept.
const FROM_DEFAULTS: &str = "root=/dev/mapper/rl-root ro crashkernel=auto  rhgb ";

#[test]
fn mkconfig_writes_a_grub_cfg_loading_the_bls_entries_from_the_sourced_defaults() {
    for program in [GRUB2_MKCONFIG_BLS, GRUB2_MKCONFIG_FEDORA] {
        let n = mkconfig_node(program);
        n.run_stand_in("grub2-mkconfig", &["--output=/boot/grub2/grub.cfg"])
            .expect_code(0);
        let cfg = n.read("/boot/grub2/grub.cfg").unwrap();
        assert!(
            cfg.contains(&format!("set kernelopts=\"{FROM_DEFAULTS}\"")) && cfg.contains("\ninsmod blscfg\nblscfg\n"),
            "{cfg}"
        );
    }
}

#[test]
fn rhel_mkconfig_updates_the_bls_command_line_only_when_asked() {
    let n = mkconfig_node(GRUB2_MKCONFIG_BLS);
    n.run_stand_in("grub2-mkconfig", &["-o", "/boot/grub2/grub.cfg"])
        .expect_code(0);
    assert_eq!(bls_options(&n, A), "root=/dev/x ro  custom", "left alone");
    n.run_stand_in(
        "grub2-mkconfig",
        &["--update-bls-cmdline", "-o", "/boot/grub2/grub.cfg"],
    )
    .expect_code(0);
    assert_eq!(bls_options(&n, A), FROM_DEFAULTS, "every entry from the defaults");
    assert_eq!(
        bls_options(&n, DEBUG),
        format!("{FROM_DEFAULTS} debug"),
        "a debug entry also gets GRUB_CMDLINE_LINUX_DEBUG"
    );
    // Without GRUB_ENABLE_BLSCFG=true in the defaults, every run updates.
    let n = mkconfig_node(GRUB2_MKCONFIG_BLS);
    n.file("/etc/default/grub", "GRUB_CMDLINE_LINUX=\"quiet\"\n");
    n.run_stand_in("grub2-mkconfig", &["-o", "/boot/grub2/grub.cfg"])
        .expect_code(0);
    assert_eq!(bls_options(&n, A), "root=/dev/mapper/rl-root ro quiet ");
}

#[test]
fn fedora_mkconfig_updates_at_every_run_and_has_no_update_bls_cmdline() {
    let n = mkconfig_node(GRUB2_MKCONFIG_FEDORA);
    n.run_stand_in("grub2-mkconfig", &["--no-grubenv-update", "-o", "/boot/grub2/grub.cfg"])
        .expect_code(0);
    assert_eq!(
        bls_options(&n, A),
        "root=/dev/x ro  custom",
        "--no-grubenv-update: left alone"
    );
    n.run_stand_in("grub2-mkconfig", &["-o", "/boot/grub2/grub.cfg"])
        .expect_code(0);
    assert_eq!(bls_options(&n, A), FROM_DEFAULTS);
    let before = n.snapshot();
    n.run_stand_in(
        "grub2-mkconfig",
        &["--update-bls-cmdline", "-o", "/boot/grub2/grub.cfg"],
    )
    .expect_code(1)
    .expect_output("Unrecognized option `--update-bls-cmdline'");
    before.assert_same(&n.snapshot());
    assert!(
        !GRUB2_MKCONFIG_FEDORA.contains("--update-bls-cmdline"),
        "skyhook-core reads the program for the option's name"
    );
}

#[test]
fn mkconfig_refuses_unknown_options_and_the_efi_vendor_file_of_the_os() {
    let n = mkconfig_node(GRUB2_MKCONFIG_BLS);
    let before = n.snapshot();
    n.run_stand_in("grub2-mkconfig", &["--bogus", "-o", "/boot/grub2/grub.cfg"])
        .expect_code(1)
        .expect_output("Unrecognized option `--bogus'");
    // ID=rhel reads as the vendor directory redhat.
    n.file("/boot/efi/EFI/redhat/grub.cfg", EFI_STUB);
    let before_stub = n.snapshot();
    n.run_stand_in("grub2-mkconfig", &["-o", "/boot/efi/EFI/redhat/grub.cfg"])
        .expect_code(1)
        .expect_output("Running `grub2-mkconfig -o /boot/efi/EFI/redhat/grub.cfg' will overwrite the GRUB wrapper.")
        .expect_output("Please run `grub2-mkconfig -o /boot/grub2/grub.cfg' instead to update grub.cfg.")
        .expect_output("GRUB configuration file was not updated.");
    before_stub.assert_same(&n.snapshot());
    assert_ne!(before.0.len(), before_stub.0.len());
    // An empty vendor file, or another vendor's, is written.
    n.file("/boot/efi/EFI/redhat/grub.cfg", "");
    n.run_stand_in("grub2-mkconfig", &["-o", "/boot/efi/EFI/redhat/grub.cfg"])
        .expect_code(0);
    n.file("/boot/efi/EFI/rocky/grub.cfg", EFI_STUB);
    n.run_stand_in("grub2-mkconfig", &["-o", "/boot/efi/EFI/rocky/grub.cfg"])
        .expect_code(0);
    assert!(n.read("/boot/efi/EFI/rocky/grub.cfg").unwrap().contains("blscfg"));
}

#[test]
fn mkconfig_writes_kernel_cmdline_when_missing_or_older_than_the_defaults() {
    let n = mkconfig_node(GRUB2_MKCONFIG_FEDORA);
    n.run_stand_in("grub2-mkconfig", &["-o", "/boot/grub2/grub.cfg"])
        .expect_code(0);
    assert!(!n.exists("/etc/kernel/cmdline"), "no /etc/kernel: no file");
    std::fs::create_dir_all(n.path("/etc/kernel")).unwrap();
    n.run_stand_in("grub2-mkconfig", &["-o", "/boot/grub2/grub.cfg"])
        .expect_code(0);
    assert_eq!(n.read("/etc/kernel/cmdline").unwrap(), format!("{FROM_DEFAULTS}\n"));
    // Newer than the defaults: kept.
    n.file("/etc/kernel/cmdline", "mine\n");
    n.run_stand_in("grub2-mkconfig", &["-o", "/boot/grub2/grub.cfg"])
        .expect_code(0);
    assert_eq!(n.read("/etc/kernel/cmdline").unwrap(), "mine\n");
    // Older: rewritten.
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(n.path("/etc/kernel/cmdline"))
        .unwrap()
        .set_modified(old)
        .unwrap();
    n.run_stand_in("grub2-mkconfig", &["-o", "/boot/grub2/grub.cfg"])
        .expect_code(0);
    assert_eq!(n.read("/etc/kernel/cmdline").unwrap(), format!("{FROM_DEFAULTS}\n"));
}

#[test]
fn mkconfig_leaves_the_entries_of_an_ostree_host_alone() {
    let n = mkconfig_node(GRUB2_MKCONFIG_FEDORA);
    n.file("/run/ostree-booted", "");
    n.run_stand_in("grub2-mkconfig", &["-o", "/boot/grub2/grub.cfg"])
        .expect_code(0);
    assert_eq!(bls_options(&n, A), "root=/dev/x ro  custom");
}

/// The `linux` lines of the generated `/boot/grub/grub.cfg`, arguments after `ro`.
fn update_grub_lines(n: &Node) -> Vec<String> {
    n.run_stand_in("update-grub", &[]).expect_code(0);
    n.read("/boot/grub/grub.cfg")
        .unwrap()
        .lines()
        .filter(|l| l.trim_start().starts_with("linux"))
        .map(|l| l.split_once(" ro ").unwrap().1.trim().to_string())
        .collect()
}

#[test]
fn update_grub_sources_the_drop_ins_in_order_and_writes_the_default_and_recovery_entries() {
    let n = Node::new("/bin/true");
    n.stand_in("update-grub", UPDATE_GRUB)
        .file(
            "/etc/default/grub",
            "GRUB_CMDLINE_LINUX_DEFAULT=\"quiet splash\"\nGRUB_CMDLINE_LINUX=\"console=ttyS0\"\n",
        )
        .file(
            "/etc/default/grub.d/50-a.cfg",
            "GRUB_CMDLINE_LINUX_DEFAULT=\"$GRUB_CMDLINE_LINUX_DEFAULT hugepages=4\"\n",
        )
        .file(
            "/etc/default/grub.d/60-b.cfg",
            "GRUB_CMDLINE_LINUX=\"$GRUB_CMDLINE_LINUX iommu=pt\"\n",
        );
    assert_eq!(
        update_grub_lines(&n),
        [
            "console=ttyS0 iommu=pt quiet splash hugepages=4",
            "recovery nomodeset dis_ucode_ldr console=ttyS0 iommu=pt",
        ]
    );
    n.file("/etc/default/grub.d/70-c.cfg", "GRUB_DISABLE_RECOVERY=\"true\"\n");
    assert_eq!(
        update_grub_lines(&n),
        ["console=ttyS0 iommu=pt quiet splash hugepages=4"]
    );
    n.run_stand_in("update-grub", &["-o", "/x"]).expect_code(1);
}

// SPDX-License-Identifier: Apache-2.0
//! GRUB on a simulated Debian-family node: `/etc/default/grub` as Ubuntu ships it, a
//! cloud image's drop-in that replaces `GRUB_CMDLINE_LINUX_DEFAULT` (why tuned's own
//! `$tuned_params` never reaches such nodes), Debian's update-grub
//! (`skyhook_testkit::boot_tools::UPDATE_GRUB`) and the `grub.cfg` it generated before
//! the package ran, so config's and uninstall's regenerations show in the tree.
#![allow(dead_code)]

use crate::common::*;
use skyhook_testkit::Node;
use skyhook_testkit::boot_tools::UPDATE_GRUB;

/// The generated configuration.
pub const GRUB_CFG: &str = "/boot/grub/grub.cfg";
/// The GRUB defaults.
pub const DEFAULTS: &str = "/etc/default/grub";
/// Ubuntu's `/etc/default/grub` (the lines that matter).
pub const UBUNTU_DEFAULTS: &str =
    "GRUB_DEFAULT=0\nGRUB_TIMEOUT=0\nGRUB_CMDLINE_LINUX_DEFAULT=\"quiet splash\"\nGRUB_CMDLINE_LINUX=\"\"\n";
/// A cloud image's drop-in (Ubuntu's `50-cloudimg-settings.cfg`): its console.
pub const CLOUDIMG: &str = "/etc/default/grub.d/50-cloudimg-settings.cfg";

/// Gives `node` GRUB: the defaults, the cloud drop-in, update-grub and a generated
/// `grub.cfg`; the calls so far are forgotten.
pub fn with_grub(node: &Node) -> &Node {
    node.file(DEFAULTS, UBUNTU_DEFAULTS)
        .file(CLOUDIMG, "GRUB_CMDLINE_LINUX_DEFAULT=\"console=tty1 console=ttyS0\"\n")
        .stand_in("update-grub", UPDATE_GRUB);
    node.run_stand_in("update-grub", &[]).expect_code(0);
    node.clear_calls();
    node
}

/// How often update-grub ran since the calls were last cleared.
pub fn regenerations(node: &Node) -> usize {
    calls_of(node, "update-grub").len()
}

/// The kernel arguments of the generated configuration's `linux` line.
pub fn linux_line(node: &Node) -> String {
    let cfg = node.read(GRUB_CFG).expect("grub.cfg generated");
    let line = cfg
        .lines()
        .find(|l| l.trim_start().starts_with("linux"))
        .expect("a linux line");
    line.split_whitespace().skip(2).collect::<Vec<_>>().join(" ")
}

/// What tuned's daemon does when it applies a profile with `[bootloader]` options:
/// writes the arguments it resolved to `/etc/tuned/bootcmdline`.
pub fn tuned_writes_bootcmdline(node: &Node, args: &str) {
    node.file(
        "/etc/tuned/bootcmdline",
        format!("TUNED_BOOT_CMDLINE=\"{args}\"\nTUNED_BOOT_INITRD_ADD=\"\"\n"),
    );
}

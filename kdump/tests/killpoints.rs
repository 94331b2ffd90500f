// SPDX-License-Identifier: Apache-2.0
//! Crash consistency: apply, config and uninstall on a Debian-like (GRUB
//! drop-in, update-grub) and a RHEL-like (grubby) node are killed at their mutating
//! system calls (skyhook_testkit::killpoint), rerun, and must end exactly where an
//! uninterrupted run ends, with the check mode passing.

mod common;

use common::*;
use skyhook_testkit::Node;
use skyhook_testkit::killpoint::KillPoints;

/// The configMap of every scenario after apply.
fn configmap(node: &Node) {
    node.configmap("crashkernel", "512M")
        .configmap("kdump.conf", "path /var/crash\nUSE_KDUMP=1\n");
}

fn campaign(node: &Node, distro: Distro, mode: &str, check: &str) {
    let unit = if distro.debian { "kdump-tools" } else { "kdump" };
    // Stand-in logs a rerun legitimately extends: service (re)starts, and the
    // debconf answers the stand-in appends (real debconf overwrites the answer).
    eprintln!("kdump on {}:", distro.name);
    KillPoints::new(node, mode)
        .check(check)
        .ignoring(&format!("systemd/{unit}.starts"))
        .ignoring("debconf.db")
        .assert_converges();
}

fn applied(distro: Distro, preinstalled: bool) -> Node {
    let node = node(distro);
    if preinstalled {
        preinstall(&node, distro);
    }
    node.run("apply").expect_code(0);
    node
}

fn configured(distro: Distro, preinstalled: bool) -> Node {
    let node = applied(distro, preinstalled);
    configmap(&node);
    node.run("config").expect_code(0);
    node
}

#[test]
fn apply_on_debian_converges_after_a_kill() {
    campaign(&node(UBUNTU), UBUNTU, "apply", "apply-check");
}

#[test]
fn apply_on_rhel_converges_after_a_kill() {
    campaign(&node(RHEL), RHEL, "apply", "apply-check");
}

#[test]
fn config_on_debian_converges_after_a_kill() {
    let node = applied(UBUNTU, false);
    configmap(&node);
    campaign(&node, UBUNTU, "config", "config-check");
}

#[test]
fn config_on_rhel_converges_after_a_kill() {
    let node = applied(RHEL, false);
    configmap(&node);
    campaign(&node, RHEL, "config", "config-check");
}

#[test]
fn uninstall_on_debian_converges_after_a_kill() {
    campaign(&configured(UBUNTU, false), UBUNTU, "uninstall", "uninstall-check");
}

#[test]
fn uninstall_on_rhel_converges_after_a_kill() {
    campaign(&configured(RHEL, false), RHEL, "uninstall", "uninstall-check");
}

#[test]
fn uninstall_keeping_a_preinstalled_package_converges_after_a_kill() {
    campaign(&configured(UBUNTU, true), UBUNTU, "uninstall", "uninstall-check");
}

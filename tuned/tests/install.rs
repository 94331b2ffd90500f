// SPDX-License-Identifier: Apache-2.0
//! apply / upgrade and their checks: tuned installed with the family's package manager
//! (non-interactive, lock waiting, retried), skipped when installed, service enabled
//! and started (enabled only without a running systemd).

mod common;

use std::time::{Duration, Instant};

use common::*;
use skyhook_core::os::distro::fixtures;
use skyhook_testkit::AptLock;

#[test]
fn installs_on_debian_like_hosts_non_interactively_and_starts_the_service() {
    let node = debian(None);
    node.run("apply-check")
        .expect_code(1)
        .expect_output("tuned is not installed");
    node.clear_calls();
    node.run("apply")
        .expect_code(0)
        .expect_output("the tuned service is enabled and started");
    let apt = calls_of(&node, "apt-get");
    assert_eq!(
        apt[0], "apt-get -o DPkg::Lock::Timeout=600 update -q",
        "refreshes, waiting for the dpkg lock: {apt:?}"
    );
    assert!(
        apt[1].starts_with("apt-get -o DPkg::Lock::Timeout=600 install -y -q")
            && apt[1].contains("Dpkg::Options::=--force-confold")
            && apt[1].ends_with(" tuned"),
        "{apt:?}"
    );
    assert_eq!(
        calls_of(&node, "systemctl"),
        ["systemctl enable tuned", "systemctl start tuned"]
    );
    assert!(node.exists("/usr/sbin/tuned"));
    node.run("apply-check").expect_code(0);
}

#[test]
fn skips_the_install_and_the_refresh_when_tuned_is_installed() {
    let node = debian(Some("2.21.0"));
    node.run("apply").expect_code(0).expect_output("already installed");
    assert!(calls_of(&node, "apt-get").is_empty(), "{:?}", node.calls());
    node.run("upgrade").expect_code(2).expect_output("PREVIOUS_VERSION");
    let mut node = node;
    node.env("PREVIOUS_VERSION", "1.1.0").env("CURRENT_VERSION", "1.0.0");
    node.run("upgrade").expect_code(0);
    node.run("upgrade-check").expect_code(0);
    assert!(calls_of(&node, "apt-get").is_empty(), "{:?}", node.calls());
}

#[test]
fn installs_on_rhel_like_hosts_with_dnf_or_yum() {
    let node = rhel(fixtures::RHEL_9, false, None);
    node.run("apply").expect_code(0);
    assert_eq!(calls_of(&node, "dnf"), ["dnf -y install tuned"]);
    node.run("apply-check").expect_code(0);

    let node = rhel(fixtures::AMAZON_LINUX_2, true, None);
    node.run("apply").expect_code(0);
    assert_eq!(
        calls_of(&node, "yum"),
        ["yum -y install tuned"],
        "no dnf on Amazon Linux 2"
    );
    node.run("apply-check").expect_code(0);

    let node = rhel(fixtures::ROCKY_9, false, Some("2.24.0"));
    node.run("apply").expect_code(0);
    assert!(calls_of(&node, "dnf").is_empty(), "installed: {:?}", node.calls());
}

#[test]
fn waits_out_a_held_package_manager_lock_by_retrying() {
    let node = debian(None);
    // Another apt holds the lock past apt's own wait once, then lets go.
    let apt = std::fs::read_to_string(std::path::Path::new(&node.step_env()["SKYHOOK_HOST_COMMANDS"]).join("apt-get"))
        .unwrap();
    let body = apt.trim_start_matches("#!/bin/sh\n");
    node.stand_in(
        "apt-get",
        &format!(
            "if [ ! -e \"$(dirname \"$0\")/lock-released\" ]; then touch \"$(dirname \"$0\")/lock-released\"; \
             echo 'E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242 (unattended-upgr)' >&2; \
             exit 100; fi\n{body}"
        ),
    );
    let run = node.run("apply");
    run.expect_code(0).expect_output("attempt 1 of 3 failed");
    assert_eq!(
        calls_of(&node, "apt-get")
            .iter()
            .filter(|c| c.contains(" update "))
            .count(),
        2,
        "{:?}",
        node.calls()
    );
    assert!(node.exists("/usr/sbin/tuned"));
}

#[test]
fn without_a_running_systemd_enables_only_and_says_so() {
    let node = debian(None);
    node.systemd_running(false);
    node.run("apply")
        .expect_code(0)
        .expect_output("enabled only, it starts at the next boot");
    assert_eq!(calls_of(&node, "systemctl"), ["systemctl enable tuned"]);
    node.run("apply-check")
        .expect_code(0)
        .expect_output("not checked: tuned service running");
}

#[test]
fn apply_check_lists_every_unmet_expectation() {
    let node = debian(Some("2.21.0"));
    node.stand_in(
        "systemctl",
        "case \"$1\" in is-enabled) echo disabled; exit 1;; *) echo inactive; exit 3;; esac",
    );
    node.remove_stand_in("tuned-adm");
    let run = node.run("apply-check");
    run.expect_code(1)
        .expect_output("3 unmet expectation(s)")
        .expect_output("tuned-adm is not installed")
        .expect_output("not enabled")
        .expect_output("not active");
}

#[test]
fn waits_for_the_apt_lists_lock_that_update_does_not_wait_for_and_names_its_holder() {
    let mut node = debian(None);
    node.env("SKYHOOK_PKG_RETRY_PAUSE", "0");
    // apt-daily / unattended-upgrades refresh at first boot; apt-get update fails at once.
    node.hold_apt_lists_lock(5, "unattended-upgr");
    node.run("apply")
        .expect_code(0)
        .expect_output("another process holds the package lists lock")
        .expect_output("(unattended-upgr)")
        .expect_output("apt-daily.service or unattended-upgrades")
        .expect_output("10 min in all");
    let updates = calls_of(&node, "apt-get")
        .iter()
        .filter(|c| c.contains(" update "))
        .count();
    assert_eq!(updates, 6, "five refused, the sixth refreshes: {:?}", node.calls());
    assert!(node.exists("/usr/sbin/tuned"));
}

/// Holds the node's apt `lock` as `holder` and releases it after `held`.
fn held_for(node: &skyhook_testkit::Node, lock: AptLock, holder: &str, held: Duration) -> std::thread::JoinHandle<()> {
    let guard = node.hold_apt_lock(lock, holder);
    std::thread::spawn(move || {
        std::thread::sleep(held);
        drop(guard);
    })
}

#[test]
fn install_and_purge_wait_for_the_download_directory_lock_apt_does_not_wait_for() {
    let node = debian(None);
    // apt-daily downloads the upgrades of a freshly booted node; apt-get install fails at once
    // on /var/cache/apt/archives/lock (DPkg::Lock::Timeout covers the dpkg locks only).
    let release = held_for(&node, AptLock::Archives, "apt.systemd.dai", Duration::from_millis(1500));
    let start = Instant::now();
    node.run("apply")
        .expect_code(0)
        .expect_output("another process holds the package download directory's lock (/var/cache/apt/archives/lock)")
        .expect_output(&format!(
            "It is held by process {} (apt.systemd.dai)",
            std::process::id()
        ))
        .expect_output("apt-daily-upgrade.service");
    release.join().unwrap();
    assert!(start.elapsed() >= Duration::from_millis(1500), "waited for the release");
    assert!(node.exists("/usr/sbin/tuned"));
    node.run("config").expect_code(0);
    let release = held_for(&node, AptLock::Archives, "unattended-upgr", Duration::from_millis(1000));
    node.run("uninstall").expect_code(0).expect_output("(unattended-upgr)");
    release.join().unwrap();
    assert!(!node.exists("/usr/sbin/tuned"), "purged once the lock was free");
}

#[test]
fn with_a_zero_retry_pause_the_lists_lock_is_checked_every_100_ms_up_to_the_same_wait() {
    let node = debian(None); // SKYHOOK_PKG_RETRY_PAUSE=0, as the test kit sets it
    let release = held_for(&node, AptLock::Lists, "unattended-upgr", Duration::from_millis(1500));
    let start = Instant::now();
    node.run("apply").expect_code(0).expect_output("10 min in all");
    let elapsed = start.elapsed();
    release.join().unwrap();
    let updates = calls_of(&node, "apt-get")
        .iter()
        .filter(|c| c.contains(" update "))
        .count() as u128;
    assert!(
        updates >= 2 && updates <= elapsed.as_millis() / 100 + 2,
        "{updates} updates in {elapsed:?}: checks 100 ms apart, not back to back"
    );
    assert!(node.exists("/usr/sbin/tuned"));
}

#[test]
fn a_third_party_repository_failing_its_refresh_does_not_stop_the_install() {
    let mut node = debian(None);
    node.env("SKYHOOK_PKG_RETRY_PAUSE", "0");
    node.break_apt_repository("https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2204/x86_64");
    node.run("apply")
        .expect_code(0)
        .expect_output("not retried: a repository's signing key is missing, expired or rotated")
        .expect_output("installing from the lists as they are");
    let updates = calls_of(&node, "apt-get")
        .iter()
        .filter(|c| c.contains(" update "))
        .count();
    assert_eq!(updates, 1, "a broken key is not retried: {:?}", node.calls());
    assert!(node.exists("/usr/sbin/tuned"));
    node.run("apply-check").expect_code(0);
}

#[test]
fn rhel_without_enabled_repositories_fails_at_once_and_says_to_register() {
    let node = rhel(fixtures::RHEL_9, false, None);
    node.disable_repositories();
    node.run("apply")
        .expect_code(1)
        .expect_output("There are no enabled repositories")
        .expect_output("attempt 1 of 3, not retried")
        .expect_output("subscription-manager register");
    assert_eq!(calls_of(&node, "dnf"), ["dnf -y install tuned"], "tried once");
}

// SPDX-License-Identifier: Apache-2.0
//! The `systemctl` and `tuned-adm` stand-ins of the tuned tests behave as the real
//! tools they model: one test per behaviour listed at [`common::SYSTEMCTL_SH`] and
//! [`common::tuned_adm_sh`].

mod common;

use common::*;
use skyhook_testkit::Node;

/// A node with tuned 2.21.0 installed and running, the profile `mine` deployed.
fn node() -> Node {
    let n = debian(Some("2.21.0"));
    n.file(
        "/etc/tuned/mine/tuned.conf",
        "[main]\nsummary=Mine\n[sysctl]\nvm.swappiness=5\n",
    )
    .file("/etc/tuned/bare/tuned.conf", "[sysctl]\nvm.swappiness=6\n");
    n
}

#[test]
fn systemctl_enables_and_disables_through_the_wants_link_and_needs_the_unit_file() {
    let n = debian(None);
    n.run_stand_in("systemctl", &["enable", "tuned"])
        .expect_code(1)
        .expect_output("Failed to enable unit: Unit file tuned.service does not exist.");
    n.run_stand_in("systemctl", &["is-enabled", "tuned"])
        .expect_code(4)
        .expect_output("not-found");
    let n = node();
    n.run_stand_in("systemctl", &["disable", "tuned"]).expect_code(0);
    n.run_stand_in("systemctl", &["is-enabled", "tuned"])
        .expect_code(1)
        .expect_output("disabled");
    n.run_stand_in("systemctl", &["enable", "tuned"]).expect_code(0);
    assert!(n.exists("/etc/systemd/system/multi-user.target.wants/tuned.service"));
    n.run_stand_in("systemctl", &["is-enabled", "tuned"])
        .expect_code(0)
        .expect_output("enabled");
}

#[test]
fn systemctl_starts_restarts_and_stops_and_a_missing_unit_is_exit_5() {
    let n = debian(None);
    n.run_stand_in("systemctl", &["start", "tuned"])
        .expect_code(5)
        .expect_output("Failed to start tuned.service: Unit tuned.service not found.");
    n.run_stand_in("systemctl", &["restart", "tuned"])
        .expect_code(5)
        .expect_output("Failed to restart tuned.service: Unit tuned.service not found.");
    n.run_stand_in("systemctl", &["is-active", "tuned"])
        .expect_code(4)
        .expect_output("inactive");
    let n = node();
    n.run_stand_in("systemctl", &["stop", "tuned"]).expect_code(0);
    n.run_stand_in("systemctl", &["is-active", "tuned"])
        .expect_code(3)
        .expect_output("inactive");
    n.run_stand_in("systemctl", &["restart", "tuned"]).expect_code(0);
    n.run_stand_in("systemctl", &["is-active", "tuned"])
        .expect_code(0)
        .expect_output("active");
}

#[test]
fn systemctl_show_answers_a_units_main_pid_and_0_when_it_does_not_run() {
    let n = node();
    let main_pid = |unit: &str| {
        n.run_stand_in("systemctl", &["show", "--property=MainPID", "--value", unit])
            .expect_code(0)
            .output()
            .trim()
            .to_string()
    };
    assert_eq!(main_pid("tuned"), "4242", "tuned's own pid file");
    n.run_stand_in("systemctl", &["stop", "tuned"]).expect_code(0);
    assert_eq!(main_pid("tuned.service"), "0");
    assert_eq!(
        main_pid("containerd.service"),
        "0",
        "not installed: systemctl answers 0"
    );
    runtime_unit(&n, "/usr/lib/systemd/system", "containerd.service", true);
    assert_eq!(
        main_pid("containerd.service"),
        runtime_pid("containerd.service").to_string()
    );
}

#[test]
fn tuned_adm_list_shows_names_with_summaries_then_the_active_profile() {
    let n = node();
    n.run_stand_in("tuned-adm", &["profile", "mine"]).expect_code(0);
    let out = n.run_stand_in("tuned-adm", &["list"]);
    out.expect_code(0);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines[0], "Available profiles:");
    assert!(lines.contains(&"- bare"), "no summary: the name alone: {lines:?}");
    assert!(
        lines.contains(&format!("{:<30}- Mine", "- mine").as_str()),
        "padded to 30 columns: {lines:?}"
    );
    let names: Vec<&str> = lines[1..lines.len() - 1]
        .iter()
        .map(|l| l.split_whitespace().nth(1).unwrap())
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "sorted");
    assert_eq!(lines.last(), Some(&"Current active profile: mine"));
    assert_eq!(
        tuned::activate::parse_list(&out.stdout),
        names,
        "the package reads every name"
    );
}

#[test]
fn tuned_adm_profile_records_the_names_and_refuses_one_that_does_not_exist() {
    let n = node();
    n.run_stand_in("tuned-adm", &["profile", "mine", "balanced"])
        .expect_code(0);
    assert_eq!(n.read("/etc/tuned/active_profile").unwrap(), "mine balanced\n");
    assert_eq!(n.read("/etc/tuned/profile_mode").unwrap(), "manual\n");
    n.run_stand_in("tuned-adm", &["profile", "mine", "nope"])
        .expect_code(1)
        .expect_output("Unable to switch profile: Requested profile 'mine nope' doesn't exist.");
    assert_eq!(
        n.read("/etc/tuned/active_profile").unwrap(),
        "mine balanced\n",
        "nothing changed"
    );
}

#[test]
fn tuned_adm_active_tells_a_running_a_preset_and_no_profile_apart() {
    let n = node();
    n.file("/etc/tuned/active_profile", "");
    n.run_stand_in("tuned-adm", &["active"])
        .expect_code(1)
        .expect_output("No current active profile.");
    n.run_stand_in("tuned-adm", &["profile", "mine"]).expect_code(0);
    n.run_stand_in("tuned-adm", &["active"])
        .expect_code(0)
        .expect_output("Current active profile: mine");
    n.run_stand_in("systemctl", &["stop", "tuned"]).expect_code(0);
    let out = n.run_stand_in("tuned-adm", &["active"]);
    out.expect_code(0)
        .expect_output("It seems that tuned daemon is not running, preset profile is not activated.")
        .expect_output("Preset profile: mine");
}

#[test]
fn tuned_adm_verify_passes_or_fails_and_points_at_the_log_either_way() {
    let n = node();
    n.run_stand_in("tuned-adm", &["verify"])
        .expect_code(0)
        .expect_output("Verification succeeded, current system settings match the preset profile.")
        .expect_output("See TuneD log file ('/var/log/tuned/tuned.log') for details.");
    n.stand_in("tuned-adm", &tuned_adm_sh(false));
    n.run_stand_in("tuned-adm", &["verify"])
        .expect_code(1)
        .expect_output("Verification failed, current system settings differ from the preset profile.")
        .expect_output("a reboot may be required")
        .expect_output("See TuneD log file ('/var/log/tuned/tuned.log') for details.");
}

// SPDX-License-Identifier: Apache-2.0
//! config-check and post-interrupt-check: deployed files exact, active profile as
//! configured, `tuned-adm verify` with the INTERRUPT rule, and tuned's log shown when
//! verify fails.

mod common;

use common::*;
use skyhook_testkit::Node;

const TUNED_LOG: &str = "\
2024-05-01 09:00:00,000 INFO     tuned.daemon.application: TuneD: 2.21.0, kernel: 6.8.0
2024-05-01 09:00:01,000 ERROR    tuned.plugins.plugin_cpu: an old error nobody needs to see
2024-05-01 10:00:00,000 INFO     tuned.daemon.daemon: verifying profile(s): custom_profile
2024-05-01 10:00:00,001 INFO     tuned.plugins.base: verify: passed: 'vm.swappiness' = '10'
2024-05-01 10:00:00,002 ERROR    tuned.plugins.plugin_bootloader: verify: failed: cmdline arg 'kernel.panic', expected '20'
2024-05-01 10:00:00,003 INFO     tuned.plugins.base: verify: passed: 'kernel.numa_balancing' = '1'
";

/// The README example, configured, with a verify that fails (the bootloader option
/// needs the reboot) and tuned's log explaining it.
fn configured_with_failing_verify(interrupt: Option<&str>) -> Node {
    let mut node = debian(Some("2.21.0"));
    if let Some(v) = interrupt {
        node.env("INTERRUPT", v);
    }
    readme_configmap(&node);
    node.run("config").expect_code(0);
    node.stand_in("tuned-adm", &tuned_adm_sh(false));
    node.file("/var/log/tuned/tuned.log", TUNED_LOG);
    node
}

fn assert_shows_the_relevant_log_lines(output: &str) {
    assert!(output.contains("verifying profile(s): custom_profile"), "{output}");
    assert!(
        output.contains("verify: failed: cmdline arg 'kernel.panic', expected '20'"),
        "{output}"
    );
    assert!(
        !output.contains("an old error nobody needs to see"),
        "only the relevant lines: {output}"
    );
    assert!(
        !output.contains("'vm.swappiness' = '10'"),
        "passed lines are noise: {output}"
    );
}

#[test]
fn config_check_passes_a_failing_verify_with_interrupt_true_and_shows_why() {
    let node = configured_with_failing_verify(Some("true"));
    let run = node.run("config-check");
    run.expect_code(0)
        .expect_output("INTERRUPT=true says the profile needs its interrupt")
        .expect_output("Verification failed");
    assert_shows_the_relevant_log_lines(&run.output());
}

#[test]
fn config_check_fails_a_failing_verify_without_interrupt_and_shows_why() {
    for interrupt in [None, Some("false")] {
        let node = configured_with_failing_verify(interrupt);
        let run = node.run("config-check");
        run.expect_code(1)
            .expect_output("tuned-adm verify failed (exit code 1)")
            .expect_output("set INTERRUPT=true");
        assert_shows_the_relevant_log_lines(&run.output());
    }
}

#[test]
fn post_interrupt_check_requires_verify_whatever_interrupt_says() {
    let node = configured_with_failing_verify(Some("true"));
    let run = node.run("post-interrupt-check");
    run.expect_code(1)
        .expect_output("tuned-adm verify failed after the interrupt");
    assert_shows_the_relevant_log_lines(&run.output());

    node.stand_in("tuned-adm", &tuned_adm_sh(true));
    node.run("post-interrupt-check").expect_code(0);
}

#[test]
fn checks_report_changed_or_missing_files_and_a_different_active_profile() {
    let node = debian(Some("2.21.0"));
    readme_configmap(&node);
    node.run("config").expect_code(0);
    node.run("config-check").expect_code(0);

    node.file(
        "/etc/tuned/custom_profile_1/tuned.conf",
        "[main]\nsummary=edited by hand\n",
    );
    std::fs::remove_file(node.path("/etc/tuned/scripts/ai_init_script")).unwrap();
    std::fs::set_permissions(
        node.path("/etc/tuned/scripts/ai_init"),
        std::os::unix::fs::PermissionsExt::from_mode(0o644),
    )
    .unwrap();
    node.file("/etc/tuned/active_profile", "balanced\n");
    let run = node.run("config-check");
    run.expect_code(1)
        .expect_output("4 unmet expectation(s)")
        .expect_output("/etc/tuned/custom_profile_1/tuned.conf differs from the configMap")
        .expect_output("/etc/tuned/scripts/ai_init differs from the configMap (content, or mode other than 755)")
        .expect_output("/etc/tuned/scripts/ai_init_script is not a link to ai_init")
        .expect_output("the active tuned profile is \"balanced\", but tuned_profile is \"custom_profile\"");

    // config repairs all of it.
    node.run("config").expect_code(0);
    node.run("config-check").expect_code(0);
}

#[test]
fn checks_report_a_stopped_service_and_left_overs() {
    let node = debian(Some("2.21.0"));
    node.configmap("tuned_profile", "a")
        .configmap("a", "[main]\ninclude=balanced\n")
        .configmap("b", "[main]\n");
    node.run("config").expect_code(0);
    node.remove_configmap("b");
    std::fs::remove_file(node.path("/run/tuned/tuned.pid")).unwrap();
    node.run("config-check")
        .expect_code(1)
        .expect_output("the tuned service is not active")
        .expect_output("/etc/tuned/b/tuned.conf is still on the node, but its configMap key is gone")
        .expect_output("not checked: tuned-adm verify");
}

// SPDX-License-Identifier: Apache-2.0
//! config: deploys custom profiles and scripts where the installed tuned reads them,
//! activates tuned_profile, reconciles, refuses bad input before any change, and says
//! which interrupt the change needs.

mod common;

use common::*;
use skyhook_core::os::distro::fixtures;
use skyhook_testkit::Node;

fn read_link(node: &Node, path: &str) -> String {
    std::fs::read_link(node.path(path)).unwrap().display().to_string()
}

#[test]
fn the_readme_example_deploys_profiles_and_script_activates_and_asks_for_a_reboot() {
    let mut node = debian(Some("2.21.0"));
    node.env("INTERRUPT", "true");
    readme_configmap(&node);
    node.run("config")
        .expect_code(0)
        .expect_output("interrupt needed: {type: reboot}");

    assert_eq!(
        node.read("/etc/tuned/custom_profile/tuned.conf").unwrap(),
        README_PROFILE
    );
    assert_eq!(node.mode("/etc/tuned/custom_profile/tuned.conf"), Some(0o644));
    assert_eq!(
        node.read("/etc/tuned/custom_profile_1/tuned.conf").unwrap(),
        README_PROFILE_1
    );
    assert_eq!(node.read("/etc/tuned/scripts/ai_init").unwrap(), README_SCRIPT);
    assert_eq!(node.mode("/etc/tuned/scripts/ai_init"), Some(0o755));
    assert_eq!(read_link(&node, "/etc/tuned/scripts/ai_init_script"), "ai_init");
    assert_eq!(
        node.read("/etc/tuned/scripts/ai_init_script").unwrap(),
        README_SCRIPT,
        "the path the bash package wrote works too"
    );
    assert_eq!(
        calls_of(&node, "tuned-adm"),
        ["tuned-adm list", "tuned-adm profile custom_profile"],
        "tuned is asked whether it sees the profile before activating it"
    );
    assert_eq!(node.read("/etc/tuned/active_profile").unwrap(), "custom_profile\n");
    node.run("config-check").expect_code(0);

    // Same configMap again: nothing rewritten, nothing re-applied, no interrupt.
    let before = inode(&node, "/etc/tuned/custom_profile/tuned.conf");
    node.clear_calls();
    node.run("config")
        .expect_code(0)
        .expect_output("nothing rewritten")
        .expect_output("interrupt needed: none");
    assert_eq!(
        inode(&node, "/etc/tuned/custom_profile/tuned.conf"),
        before,
        "not rewritten"
    );
    assert_eq!(calls_of(&node, "tuned-adm"), ["tuned-adm active"], "not re-applied");
}

#[test]
fn newer_tuned_gets_its_profiles_under_etc_tuned_profiles() {
    let node = debian(Some("2.24.0"));
    readme_configmap(&node);
    node.run("config")
        .expect_code(0)
        .expect_output("custom profiles go to /etc/tuned/profiles");
    assert_eq!(
        node.read("/etc/tuned/profiles/custom_profile/tuned.conf").unwrap(),
        README_PROFILE
    );
    assert!(node.exists("/etc/tuned/profiles/custom_profile_1/tuned.conf"));
    assert!(
        !node.exists("/etc/tuned/custom_profile"),
        "tuned ≥ 2.23 never reads /etc/tuned/<name>"
    );
    assert_eq!(node.read("/etc/tuned/scripts/ai_init").unwrap(), README_SCRIPT);
}

#[test]
fn profile_dirs_of_tuned_main_conf_decide_where_profiles_go() {
    let node = debian(Some("2.25.0"));
    node.file(
        "/etc/tuned/tuned-main.conf",
        "daemon = 1\nprofile_dirs = /usr/lib/tuned/profiles,/var/lib/site-tuned\n",
    );
    node.configmap("tuned_profile", "site")
        .configmap("site", "[main]\ninclude=balanced\n");
    node.run("config").expect_code(0);
    assert!(node.exists("/var/lib/site-tuned/site/tuned.conf"));
}

#[test]
fn several_profiles_are_refused_only_before_tuned_2_1_with_the_workarounds() {
    let node = debian(Some("2.0.1"));
    node.configmap("tuned_profile", "throughput-performance network-latency\n");
    let before = node.snapshot();
    node.run("config")
        .expect_code(2)
        .expect_output("configMap key \"tuned_profile\" line 1")
        .expect_output("needs tuned 2.1 or newer; this node has tuned 2.0.1")
        .expect_output("include=throughput-performance,network-latency")
        .expect_output("install tuned 2.1 or newer")
        .expect_output("nothing on the node was changed");
    before.assert_same(&node.snapshot());
    assert!(!node.calls().iter().any(|c| c.starts_with("tuned-adm profile")));
}

#[test]
fn several_profiles_are_activated_on_the_tuned_of_every_supported_distribution() {
    // Ubuntu 22.04 ships 2.15, Debian 12 2.19, Ubuntu 24.04 2.21, RHEL 9 2.22 to 2.25.
    for version in ["2.15.0", "2.19.0", "2.21.0", "2.22.1"] {
        let node = debian(Some(version));
        node.configmap("tuned_profile", "throughput-performance network-latency\n");
        node.run("config").expect_code(0);
        assert!(
            node.calls()
                .contains(&"tuned-adm profile throughput-performance network-latency".to_string()),
            "{version}: {:?}",
            node.calls()
        );
        node.run("config-check").expect_code(0);
    }
    let node = rhel(fixtures::RHEL_9, false, Some("2.25.1"));
    node.configmap("tuned_profile", "throughput-performance network-latency\n");
    node.run("config").expect_code(0);
    node.run("config-check").expect_code(0);
}

#[test]
fn on_rhel_9_a_new_tuned_built_with_the_old_directories_gets_its_profile_there() {
    // tuned's spec builds RHEL < 10 with /etc/tuned and /usr/lib/tuned from 2.24.1 on.
    let node = rhel(fixtures::ROCKY_9, false, Some("2.24.1"));
    node.configmap("tuned_profile", "mine")
        .configmap("mine", "[main]\ninclude=throughput-performance\n");
    node.run("config")
        .expect_code(0)
        .expect_output("the installed tuned's build, /usr/lib/python3.9/site-packages/tuned/consts.py");
    assert!(node.exists("/etc/tuned/mine/tuned.conf"));
    assert!(!node.exists("/etc/tuned/profiles/mine"));
    assert_eq!(
        calls_of(&node, "tuned-adm"),
        ["tuned-adm list", "tuned-adm profile mine"]
    );
    node.run("config-check").expect_code(0);
    node.run("uninstall").expect_code(0);
    assert!(!node.exists("/etc/tuned/mine"));
}

#[test]
fn a_profile_tuned_does_not_list_is_not_activated() {
    // The build's constants are unreadable: the version's default (/etc/tuned/profiles)
    // is not where this tuned looks; tuned-adm list says so before anything is activated.
    let node = rhel(fixtures::RHEL_9, false, Some("2.24.1"));
    std::fs::remove_file(node.path("/usr/lib/python3.9/site-packages/tuned/consts.py")).unwrap();
    node.configmap("tuned_profile", "mine")
        .configmap("mine", "[sysctl]\nvm.swappiness=10\n");
    node.run("config")
        .expect_code(1)
        .expect_output("tuned does not know the profile(s) \"mine\" (`tuned-adm list`")
        .expect_output("nothing was activated");
    assert!(!node.calls().iter().any(|c| c.starts_with("tuned-adm profile")));
    assert_ne!(node.read("/etc/tuned/active_profile").as_deref(), Some("mine\n"));
}

#[test]
fn several_profiles_are_activated_together_on_tuned_2_24() {
    let node = debian(Some("2.24.0"));
    node.configmap("tuned_profile", "throughput-performance network-latency\n");
    node.run("config")
        .expect_code(0)
        .expect_output("interrupt needed: none");
    assert!(
        node.calls()
            .contains(&"tuned-adm profile throughput-performance network-latency".to_string()),
        "{:?}",
        node.calls()
    );
    node.run("config-check").expect_code(0);
}

/// Runs config on a fresh 2.21 node with `keys`, expects exit 2, every text of
/// `expected` in the output, and the node unchanged.
fn refused(keys: &[(&str, &str)], expected: &[&str]) {
    let node = debian(Some("2.21.0"));
    node.file("/etc/tuned/scripts/not-executable", "#!/bin/sh\n");
    for (k, v) in keys {
        node.configmap(k, v);
    }
    let before = node.snapshot();
    let run = node.run("config");
    run.expect_code(2)
        .expect_output("bad input, nothing on the node was changed");
    for text in expected {
        run.expect_output(text);
    }
    before.assert_same(&node.snapshot());
    assert!(!node.calls().iter().any(|c| c.starts_with("tuned-adm profile")));
}

#[test]
fn refuses_key_names_unusable_as_profile_directories() {
    refused(
        &[(".hidden", "[main]\n")],
        &["configMap key \".hidden\"", "must not start with '.'"],
    );
    refused(
        &[("-x", "[main]\n")],
        &["configMap key \"-x\"", "must not start with '-'"],
    );
    refused(
        &[("scripts", "[main]\n")],
        &["configMap key \"scripts\"", "a name tuned itself uses"],
    );
    refused(
        &[("active_profile", "[main]\n")],
        &["configMap key \"active_profile\"", "a name tuned itself uses"],
    );
    refused(
        &[("._script", "#!/bin/sh\n")],
        &["configMap key \"._script\"", "not a usable file name"],
    );
    refused(
        &[("a_script", "#!/bin/sh\n"), ("a_script_script", "#!/bin/sh\n")],
        &["would both deploy /etc/tuned/scripts/a_script"],
    );
}

#[test]
fn refuses_a_profile_tuned_cannot_parse_naming_key_and_line() {
    refused(
        &[("broken", "# my profile\n[main]\nsummary=x\njust words\n[sysctl]\n=1\n")],
        &[
            "configMap key \"broken\" line 4 (\"just words\"): this is neither a [section] header nor an option=value line",
            "configMap key \"broken\" line 6 (\"=1\"): there is no option name before '='",
        ],
    );
    refused(
        &[("headless", "vm.swappiness=10\n")],
        &["configMap key \"headless\" line 1 (\"vm.swappiness=10\"): this line comes before any [section] header"],
    );
}

#[test]
fn refuses_an_include_of_a_profile_that_exists_nowhere() {
    refused(
        &[(
            "mine",
            "[main]\nsummary=x\ninclude=throughput-performance, no-such-profile\n",
        )],
        &[
            "configMap key \"mine\" line 3",
            "the included profile \"no-such-profile\" exists neither in this configMap nor on the node",
        ],
    );
}

#[test]
fn refuses_a_tuned_profile_that_exists_nowhere_or_is_empty() {
    refused(
        &[("tuned_profile", "balanced\nno-such-profile\n")],
        &["configMap key \"tuned_profile\" line 2 (\"no-such-profile\"): profile \"no-such-profile\" exists neither"],
    );
    refused(
        &[("tuned_profile", "  \n")],
        &["configMap key \"tuned_profile\" is empty"],
    );
    refused(
        &[("tuned_profile", "balanced bad/name")],
        &["\"bad/name\" is not a valid profile name"],
    );
}

#[test]
fn refuses_a_script_section_whose_script_is_missing_or_not_executable() {
    refused(
        &[("mine", "[main]\n[script]\nscript=/etc/tuned/scripts/ai_init\n")],
        &[
            "configMap key \"mine\" line 3 (\"script=/etc/tuned/scripts/ai_init\")",
            "does not exist on the node and no _script key deploys it (a configMap key named \"ai_init_script\" would)",
        ],
    );
    refused(
        &[(
            "mine",
            "[main]\n[my_script]\ntype=script\nscript=${i:PROFILE_DIR}/../scripts/not-executable\n",
        )],
        &["configMap key \"mine\" line 4", "exists but is not executable"],
    );
}

#[test]
fn lists_every_problem_at_once() {
    refused(
        &[
            ("tuned_profile", "missing-one"),
            ("a", "[main]\ninclude=missing-two\n"),
            ("b", "oops\n"),
        ],
        &["missing-one", "missing-two", "configMap key \"b\" line 1"],
    );
}

#[test]
fn accepts_includes_of_built_in_on_node_and_same_name_profiles() {
    let node = debian(Some("2.21.0"));
    node.file("/etc/tuned/handmade/tuned.conf", "[main]\ninclude=balanced\n");
    node.configmap("tuned_profile", "balanced")
        // A profile named like a built-in may include the built-in (tuned skips itself).
        .configmap(
            "balanced",
            "[main]\ninclude=balanced,handmade,-optional-missing\n[vm]\nswappiness=5\n",
        );
    node.run("config").expect_code(0);
    assert!(node.calls().contains(&"tuned-adm profile balanced".to_string()));
}

#[test]
fn reconcile_removes_what_the_configmap_dropped_and_keeps_hand_made_profiles() {
    let node = debian(Some("2.21.0"));
    node.file("/etc/tuned/handmade/tuned.conf", "[main]\ninclude=balanced\n");
    node.configmap("tuned_profile", "a")
        .configmap("a", "[main]\ninclude=b\n")
        .configmap("b", "[sysctl]\nvm.swappiness=10\n")
        .configmap("setup_script", "#!/bin/sh\necho setup\n");
    node.run("config").expect_code(0);
    assert!(node.exists("/etc/tuned/b/tuned.conf") && node.exists("/etc/tuned/scripts/setup_script"));

    node.clear_configmaps();
    node.configmap("tuned_profile", "a")
        .configmap("a", "[main]\ninclude=handmade\n");
    node.clear_calls();
    node.run("config").expect_code(0);
    assert_eq!(
        node.read("/etc/tuned/a/tuned.conf").unwrap(),
        "[main]\ninclude=handmade\n"
    );
    for gone in ["/etc/tuned/b", "/etc/tuned/scripts"] {
        assert!(!node.exists(gone), "{gone} removed");
    }
    assert_eq!(
        node.read("/etc/tuned/handmade/tuned.conf").unwrap(),
        "[main]\ninclude=balanced\n",
        "hand-made profile untouched"
    );
    assert!(
        node.calls().contains(&"tuned-adm profile a".to_string()),
        "a deployed file changed, so the profile is re-applied: {:?}",
        node.calls()
    );
    node.run("config-check").expect_code(0);
}

#[test]
fn refuses_to_keep_an_include_of_a_profile_this_run_removes() {
    let node = debian(Some("2.21.0"));
    node.configmap("tuned_profile", "a")
        .configmap("a", "[main]\ninclude=b\n")
        .configmap("b", "[sysctl]\nvm.swappiness=10\n");
    node.run("config").expect_code(0);
    node.remove_configmap("b");
    let before = node.snapshot();
    node.run("config")
        .expect_code(2)
        .expect_output("the included profile \"b\" exists neither");
    before.assert_same(&node.snapshot());
}

#[test]
fn without_a_running_systemd_records_the_profile_for_tuneds_start() {
    let node = debian(Some("2.21.0"));
    node.systemd_running(false);
    node.configmap("tuned_profile", "mine")
        .configmap("mine", "[main]\ninclude=balanced\n");
    node.run("config")
        .expect_code(0)
        .expect_output("tuned applies it when it starts");
    assert_eq!(node.read("/etc/tuned/active_profile").unwrap(), "mine\n");
    assert_eq!(node.read("/etc/tuned/profile_mode").unwrap(), "manual\n");
    assert!(calls_of(&node, "tuned-adm").is_empty(), "{:?}", node.calls());
    node.run("config-check")
        .expect_code(0)
        .expect_output("not checked: tuned-adm verify");
}

#[test]
fn asks_for_a_reboot_only_when_bootloader_options_change() {
    let node = debian(Some("2.21.0"));
    node.configmap("tuned_profile", "mine").configmap(
        "mine",
        "[main]\ninclude=throughput-performance\n[sysctl]\nvm.swappiness=5\n",
    );
    node.run("config")
        .expect_code(0)
        .expect_output("interrupt needed: none");

    // A built-in profile with a [bootloader] section becomes active (through an include).
    node.configmap("mine", "[main]\ninclude=realtime\n[sysctl]\nvm.swappiness=5\n");
    node.run("config")
        .expect_code(0)
        .expect_output("bootloader options added")
        .expect_output("interrupt needed: {type: reboot}");

    // Only a sysctl changes: live tuning, no interrupt.
    node.configmap("mine", "[main]\ninclude=realtime\n[sysctl]\nvm.swappiness=1\n");
    node.run("config")
        .expect_code(0)
        .expect_output("interrupt needed: none");

    // The bootloader options go away again: the kernel command line changes back.
    node.configmap("tuned_profile", "throughput-performance");
    node.remove_configmap("mine");
    node.run("config")
        .expect_code(0)
        .expect_output("bootloader options removed")
        .expect_output("interrupt needed: {type: reboot}");
}

#[test]
fn a_profile_whose_long_name_runs_into_its_summary_in_tuned_adm_list_is_activated() {
    // tuned-adm list prints "- <name>" padded to column 30, then "- <summary>": a name
    // of 28 characters or more runs into it ("- nvidia-h100-multiNodeTraining- …").
    let node = debian(Some("2.21.0"));
    let name = "gpu-node-multi-node-training-v2";
    node.configmap("tuned_profile", name)
        .configmap(name, "[main]\nsummary=Multi-node training\n[sysctl]\nvm.swappiness=5\n");
    node.run("config").expect_code(0);
    assert_eq!(node.read("/etc/tuned/active_profile").unwrap(), format!("{name}\n"));
    node.run("config-check").expect_code(0);
}

#[test]
fn bootloader_options_are_refused_on_an_ostree_managed_node_before_any_change() {
    let node = rhel(fixtures::RHEL_9, false, Some("2.24.1"));
    node.file("/run/ostree-booted", "");
    // Our own profile's [bootloader], and a built-in one's reached through an include.
    for (name, profile) in [
        ("mine", README_PROFILE),
        ("mine", "[main]\ninclude=realtime\n[sysctl]\nvm.swappiness=5\n"),
    ] {
        readme_configmap(&node);
        node.configmap("tuned_profile", name).configmap(name, profile);
        let before = node.snapshot();
        node.clear_calls();
        node.run("config")
            .expect_code(1)
            .expect_output("carry bootloader options")
            .expect_output("/run/ostree-booted exists")
            .expect_output("MachineConfig")
            .expect_output("rpm-ostree kargs");
        before.assert_same(&node.snapshot());
        assert!(calls_of(&node, "tuned-adm").is_empty(), "{:?}", node.calls());
    }
    // A chain without bootloader options is tuned's business as anywhere else, and a
    // deployed profile that is not active reaches no boot line.
    node.configmap("tuned_profile", "custom_profile_1");
    node.run("config").expect_code(0);
    node.run("config-check").expect_code(0);
}

#[test]
fn a_node_deployed_by_the_bash_package_is_taken_over_in_place() {
    // The bash package wrote /etc/tuned/<key>/tuned.conf and /etc/tuned/scripts/<key>;
    // tuned has since been upgraded to a release that reads /etc/tuned/profiles.
    let node = debian(Some("2.24.0"));
    node.file("/etc/tuned/custom_profile/tuned.conf", README_PROFILE)
        .file("/etc/tuned/custom_profile_1/tuned.conf", README_PROFILE_1)
        .file("/etc/tuned/scripts/ai_init_script", README_SCRIPT);
    readme_configmap(&node);
    node.run("config").expect_code(0);
    assert!(
        !node.exists("/etc/tuned/custom_profile"),
        "stale copy of the bash package removed"
    );
    assert!(!node.exists("/etc/tuned/custom_profile_1"));
    assert_eq!(read_link(&node, "/etc/tuned/scripts/ai_init_script"), "ai_init");
    assert_eq!(
        node.read("/etc/tuned/profiles/custom_profile/tuned.conf").unwrap(),
        README_PROFILE
    );
    node.run("config-check").expect_code(0);
}

#[test]
fn without_tuned_profile_deploys_and_leaves_the_active_profile_alone() {
    let node = debian(Some("2.21.0"));
    node.configmap("mine", "[main]\ninclude=balanced\n");
    node.run("config")
        .expect_code(0)
        .expect_output("has no \"tuned_profile\" key");
    assert!(node.exists("/etc/tuned/mine/tuned.conf"));
    assert!(calls_of(&node, "tuned-adm").is_empty(), "{:?}", node.calls());
}

#[test]
fn config_fails_clearly_when_tuned_is_not_installed() {
    let node = debian(None);
    node.configmap("tuned_profile", "balanced");
    node.run("config")
        .expect_code(1)
        .expect_output("cannot tell which tuned this node runs")
        .expect_output("apply (or upgrade) step");
}

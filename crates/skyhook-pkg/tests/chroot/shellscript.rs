// SPDX-License-Identifier: Apache-2.0
//! shellscript in a Debian root: the README's SCR example through every stage, with
//! the root's own bash, sh and python3.

use crate::{Arch, BOOKKEEPING, Node, readme};

const DROP_IN: &str = "/etc/systemd/system/containerd.service.d/skyhook-limits.conf";

#[test]
#[ignore = "chroot tier: root and the Debian mirror, minutes; .ci/run chroot, or cargo test -p skyhook-pkg --test chroot -- --ignored"]
fn shellscript_readme_example_runs_every_stage() {
    shellscript_readme_example_runs_every_stage_on(Arch::Native);
}

#[test]
#[ignore = "chroot tier, an arm64 run: .ci/run chroot_arm64 (the chroot step runs x86_64 only, for CI's time)"]
fn shellscript_readme_example_runs_every_stage_arm64() {
    shellscript_readme_example_runs_every_stage_on(Arch::Arm64);
}

fn shellscript_readme_example_runs_every_stage_on(arch: Arch) {
    let ex = readme::of("shellscript")
        .into_iter()
        .find(|e| e.configmap.contains_key("apply.sh"))
        .expect("shellscript/README.md has an SCR example with apply.sh");
    let node = Node::fresh_of(arch);
    let before = node.snapshot(BOOKKEEPING);
    let args = ex.args();
    let run = |extra: &[&str]| {
        let mut all: Vec<&str> = extra.to_vec();
        all.extend(args.iter().map(String::as_str));
        node.run("shellscript", &all)
    };

    // New install: apply, config, (interrupt), post-interrupt, each with its check.
    run(&["--lifecycle"])
        .expect_ok()
        .expect_output("stage post-interrupt has nothing to run")
        .expect_output("interpreter='/usr/bin/env python3'");
    assert_eq!(
        node.read("/etc/motd.d/skyhook").as_deref(),
        Some(ex.configmap["motd.txt"].as_str())
    );
    let limit = &ex
        .env
        .iter()
        .find(|(k, _)| k == "NOFILE_LIMIT")
        .expect("NOFILE_LIMIT in the example")
        .1;
    assert_eq!(node.read(DROP_IN), Some(format!("[Service]\nLimitNOFILE={limit}\n")));

    // The same again changes nothing.
    let installed = node.snapshot(BOOKKEEPING);
    run(&["--lifecycle"]).expect_ok();
    installed.assert_same(&node.snapshot(BOOKKEEPING));

    // A check that finds the node changed by hand fails with the script's message and
    // exit code; config puts it right.
    node.write(DROP_IN, "[Service]\nLimitNOFILE=1\n");
    run(&["config-check"])
        .expect_failure()
        .expect_output(&format!("does not set LimitNOFILE={limit}"));
    run(&["config"]).expect_ok();
    installed.assert_same(&node.snapshot(BOOKKEEPING));

    // A newer version upgrades, and the script sees both versions.
    let (major_minor, patch) = ex.version.rsplit_once('.').expect("the example's version is semver");
    let newer = format!("{major_minor}.{}", patch.parse::<u64>().expect("a numeric patch") + 1);
    run(&["--lifecycle", "--version", &newer])
        .expect_ok()
        .expect_output(&format!("{} -> {newer}", ex.version));

    // Uninstall leaves the node as it was.
    run(&["uninstall"]).expect_ok();
    before.assert_same(&node.snapshot(BOOKKEEPING));
}

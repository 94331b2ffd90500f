// SPDX-License-Identifier: Apache-2.0
//! The smoke scenario: proves the tier end to end with a package of shell-script
//! steps made here. Boot 1 runs the operator's sequence up to the interrupt with
//! `skyhook-pkg run --lifecycle --until-interrupt`: its config step adds a kernel
//! argument through a `/etc/default/grub.d` drop-in and `update-grub`, and asks for a
//! reboot. Boot 2, after the real reboot through GRUB, finds the argument in
//! `/proc/cmdline` and runs post-interrupt, whose check reads it.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::vm::Vm;

/// The kernel argument the package adds.
const ARG: &str = "skyhook.smoke=1";

/// The steps: `(mode, script file, script)`.
const STEPS: &[(&str, &str, &str)] = &[
    (
        "apply",
        "apply.sh",
        "mkdir -p /etc/skyhook-smoke && echo applied > /etc/skyhook-smoke/state",
    ),
    (
        "apply-check",
        "apply_check.sh",
        "grep -qx applied /etc/skyhook-smoke/state",
    ),
    (
        "config",
        "config.sh",
        r#"arg=$(cat configmaps/karg)
case "$arg" in *[!A-Za-z0-9._=-]*|'') echo "karg: bad kernel argument '$arg'" >&2; exit 2;; esac
mkdir -p /etc/default/grub.d
echo "GRUB_CMDLINE_LINUX_DEFAULT=\"\$GRUB_CMDLINE_LINUX_DEFAULT $arg\"" > /etc/default/grub.d/skyhook-smoke.cfg
update-grub
echo "info: kernel argument $arg needs a reboot" >&2
echo 'skyhook-interrupt-needed: {"type":"reboot"}' >&2"#,
    ),
    (
        "config-check",
        "config_check.sh",
        r#"grep -q -- " $(cat configmaps/karg)" /boot/grub/grub.cfg"#,
    ),
    (
        "post-interrupt-check",
        "post_interrupt_check.sh",
        r#"arg=$(cat configmaps/karg)
for t in $(cat /proc/cmdline); do [ "$t" = "$arg" ] && exit 0; done
echo "$arg is not on the running kernel's command line: $(cat /proc/cmdline)" >&2
exit 1"#,
    ),
];

/// Writes the package tree into `dir`.
fn package(dir: &Path) {
    fs::create_dir_all(dir.join("skyhook_dir")).unwrap();
    let mut modes = Vec::new();
    for (mode, file, body) in STEPS {
        let path = dir.join("skyhook_dir").join(file);
        fs::write(&path, format!("#!/bin/sh\nset -eu\n{body}\n")).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
        modes.push(format!(
            r#""{mode}":[{{"name":"{mode}","path":"{file}","arguments":[],"returncodes":[0],"on_host":true,"idempotence":false,"upgrade_step":false,"env":{{}}}}]"#
        ));
    }
    fs::write(
        dir.join("config.json"),
        format!(
            r#"{{"schema_version":"v1","package_name":"smoke","package_version":"1.0.0","expected_config_files":["karg"],"modes":{{{}}}}}"#,
            modes.join(",")
        ),
    )
    .unwrap();
}

#[test]
#[ignore = "VM tier: needs root, the Debian mirror and minutes; cargo test -p skyhook-pkg --test vm -- --ignored"]
fn smoke() {
    let tree = tempfile::tempdir().unwrap();
    package(tree.path());
    let mut vm = Vm::new("smoke");
    vm.add_file("smoke", tree.path());
    let run = format!("skyhook-pkg run \"$FILES/smoke\" --root / --configmap karg={ARG}");

    let first = vm.boot(
        "install",
        &format!(
            "readlink /proc/1/exe > pid1\n\
             keep /proc/cmdline\n\
             {run} --lifecycle --until-interrupt\n\
             record early-check {run} post-interrupt-check\n"
        ),
    );
    first.expect_running();
    first
        .script
        .success()
        .expect_output("[config/config] ")
        .expect_output("[interrupt] stopping here; the package said its change needs: {type: reboot}");
    assert_eq!(first.file("pid1").trim(), "/usr/lib/systemd/systemd", "PID 1");
    assert!(
        !first.file("cmdline").split_whitespace().any(|t| t == ARG),
        "{ARG} already on the first boot's command line: {}",
        first.file("cmdline")
    );
    first
        .record("early-check")
        .failure()
        .expect_output("is not on the running kernel's command line");

    let second = vm.boot("after-reboot", &format!("keep /proc/cmdline\n{run} post-interrupt\n"));
    second.expect_running();
    second.script.success();
    let cmdline = second.file("cmdline");
    assert!(
        cmdline.split_whitespace().any(|t| t == ARG),
        "{ARG} is not on the command line after the reboot: {cmdline}"
    );
    assert!(
        cmdline.contains("BOOT_IMAGE="),
        "the guest did not boot through GRUB: {cmdline}"
    );
    assert!(
        second
            .script
            .output
            .lines()
            .any(|l| l.starts_with("post-interrupt-check") && l.ends_with(" ok")),
        "post-interrupt-check did not pass after the reboot\n{}",
        second.report()
    );
}

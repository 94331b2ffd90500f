// SPDX-License-Identifier: Apache-2.0
//! The shellscript scenario: a script per stage through the whole lifecycle (apply,
//! config, a real reboot, post-interrupt, an upgrade, uninstall), each recording that
//! it ran; then SIGTERM to a step whose script runs a process tree: every shell of
//! the script's process group gets the TERM (their traps record it), the step exits
//! 143 saying so, and nothing of the tree is left running.

use crate::vm::Vm;

/// `(key, interpreter line, body)` of each stage's script; every script first appends
/// its stage (`$1`) to `/var/lib/vmtest/stages`.
const STAGES: &[(&str, &str, &str)] = &[
    (
        "apply.sh",
        "#!/bin/bash",
        r#"mkdir -p /etc/vmtest && cp "$SKYHOOK_DIR/configmaps/motd.txt" /etc/vmtest/motd"#,
    ),
    (
        "apply_check.sh",
        "#!/bin/sh -e",
        "cmp configmaps/motd.txt /etc/vmtest/motd",
    ),
    (
        "config.sh",
        "",
        "cat /proc/sys/kernel/random/boot_id > /etc/vmtest/config-boot",
    ),
    ("config_check.sh", "#!/bin/sh -e", "test -s /etc/vmtest/config-boot"),
    (
        "post_interrupt.sh",
        "#!/bin/bash",
        r#"if [ "$(cat /proc/sys/kernel/random/boot_id)" = "$(cat /etc/vmtest/config-boot)" ]; then
    echo "no reboot since config" >&2
    exit 1
fi
touch /etc/vmtest/rebooted"#,
    ),
    (
        "post_interrupt_check.sh",
        "#!/bin/sh -e",
        "test -e /etc/vmtest/rebooted",
    ),
    (
        "upgrade.sh",
        "#!/bin/bash",
        r#"echo "$PREVIOUS_VERSION -> $CURRENT_VERSION" > /etc/vmtest/upgraded"#,
    ),
    (
        "upgrade_check.sh",
        "#!/bin/sh -e",
        r#"grep -qx "1.0.0 -> 1.1.0" /etc/vmtest/upgraded"#,
    ),
    ("uninstall.sh", "#!/bin/bash", "rm -r /etc/vmtest"),
    ("uninstall_check.sh", "#!/bin/sh -e", "! test -e /etc/vmtest"),
];

/// The configMap of the lifecycle: the stages' scripts and a data key.
fn configmap() -> Vec<(&'static str, String)> {
    let mut keys: Vec<(&str, String)> = STAGES
        .iter()
        .map(|(key, shebang, body)| {
            (
                *key,
                format!("{shebang}\necho \"$1\" >> /var/lib/vmtest/stages\n{body}\n"),
            )
        })
        .collect();
    keys.push(("motd.txt", "This node is managed by Skyhook.\n".into()));
    keys
}

/// The script of the SIGTERM test: a tree of shells in the script's process group —
/// the script, two children, a grandchild — each with a `sleep` child. Each shell
/// writes `NAME PID` to `started`, and to `got-term` when TERM reaches it.
const TREE: &str = r#"#!/bin/bash
d=/run/vmtest-term
member() {
    trap "echo '$1' \$BASHPID >> $d/got-term; exit 0" TERM
    sleep infinity &
    echo $! >> $d/sleeps
    echo "$1" $BASHPID >> $d/started
    wait
}
echo $PPID > $d/step
(member child-1) &
( (member grandchild) & member child-2) &
member script
"#;

/// Boot 1: up to the interrupt.
const INSTALL: &str = r#"
mkdir -p /var/lib/vmtest
stages() { paste -sd' ' /var/lib/vmtest/stages; }
scripts --version 1.0.0 --lifecycle --until-interrupt
expect_eq "stages run" "$(stages)" "apply apply_check config config_check"
expect_exists /etc/vmtest/motd /etc/vmtest/config-boot
"#;

/// Boot 2: after the reboot, the rest of the lifecycle, then the SIGTERM test.
const AFTER_REBOOT: &str = r#"
stages() { paste -sd' ' /var/lib/vmtest/stages; }
scripts --version 1.0.0 post-interrupt
expect_eq "stages run" "$(stages)" "apply apply_check config config_check post_interrupt post_interrupt_check"
: > /var/lib/vmtest/stages
scripts --version 1.1.0 --lifecycle --until-interrupt
expect_eq "stages run" "$(stages)" "upgrade upgrade_check config config_check"
expect_eq "upgrade.sh saw" "$(cat /etc/vmtest/upgraded)" "1.0.0 -> 1.1.0"
: > /var/lib/vmtest/stages
scripts --version 1.1.0 uninstall
expect_eq "stages run" "$(stages)" "uninstall uninstall_check"
expect_gone /etc/vmtest
keep /var/lib/vmtest/stages

d=/run/vmtest-term
mkdir -p $d
term apply > term.out 2>&1 &
run=$!
started() { [ "$(cat $d/started 2>/dev/null | wc -l)" = 4 ]; }
wait_until "the process tree started" 60 started
step=$(cat $d/step)
expect_eq "the script's parent" "$(basename "$(readlink /proc/$step/exe)")" shellscript
group=$(ps -o pgid= -p "$(awk '$1 == "script" { print $2 }' $d/started)" | tr -d ' ')
kill -TERM "$step"
code=0
wait $run || code=$?
echo $code > term.code
expect_eq "skyhook-pkg run after SIGTERM to the step" "$code" 1
# Each shell once or more: the TERM passed on to the process group, and again to a shell
# still running its trap when the script had ended (the supervisor stops leftovers).
expect_eq "shells that got TERM" "$(sort -u $d/got-term)" "$(sort $d/started)"
for pid in $(cut -d' ' -f2 $d/started) $(cat $d/sleeps) $step; do
    [ ! -e /proc/$pid ] || fail "process $pid is still there: $(tr '\0' ' ' < /proc/$pid/cmdline)"
done
expect_code "pgrep of the script's process group $group" 1 pgrep -g "$group"
keep $d/started
keep $d/got-term
"#;

#[test]
#[ignore = "VM tier: needs root, the Debian mirror and minutes; cargo test -p skyhook-pkg --test vm -- --ignored"]
fn shellscript() {
    let mut vm = Vm::new("shellscript");
    let keys = configmap();
    let keys: Vec<(&str, &str)> = keys.iter().map(|(k, v)| (*k, v.as_str())).collect();
    vm.package("scripts", "shellscript", &keys)
        .package("term", "shellscript", &[("apply.sh", TREE)]);

    let install = vm.boot("install", INSTALL);
    install.expect_running();
    install
        .script
        .success()
        .expect_step("apply", 0)
        .expect_step("config-check", 0);

    let after = vm.boot("after-reboot", AFTER_REBOOT);
    after.expect_running();
    after
        .script
        .success()
        .expect_step("post-interrupt", 0)
        .expect_step("upgrade", 0)
        .expect_step("upgrade-check", 0)
        .expect_step("uninstall-check", 0);
    assert_eq!(after.file("stages"), "uninstall\nuninstall_check\n");
    let got_term = after.file("got-term");
    let mut shells: Vec<&str> = got_term.lines().filter_map(|l| l.split(' ').next()).collect();
    shells.sort();
    shells.dedup(); // a shell still in its trap when the script ended gets the leftovers' TERM too
    assert_eq!(
        shells,
        ["child-1", "child-2", "grandchild", "script"],
        "shells that got TERM"
    );
    after
        .record("term")
        .expect_step("apply", 143)
        .expect_output("apply.sh was stopped: the step received SIGTERM and passed it on")
        .expect_output("outcome=stopped-by-SIGTERM");
    assert!(
        !after.record("term").output.contains("SIGKILL"),
        "the tree ended on TERM, nothing should have been killed\n{}",
        after.record("term").output
    );
}

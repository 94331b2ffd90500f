// SPDX-License-Identifier: Apache-2.0
//! The tuned scenario: apply installs tuned from the Debian mirror, config deploys a
//! custom profile with a `[sysctl]` section and the running daemon activates it,
//! `tuned-adm verify` passes for real in config-check and post-interrupt-check (no
//! interrupt is needed: tuned applies it live), and uninstall leaves neither the
//! package nor the profile behind.

use std::time::Duration;

use crate::vm::Vm;

/// The custom profile: a built-in one and two kernel parameters of ours.
const PROFILE: &str = "[main]\n\
summary=VM tier: throughput-performance and two kernel parameters\n\
include=throughput-performance\n\
\n\
[sysctl]\n\
vm.swappiness=17\n\
vm.max_map_count=262144\n";

const SCRIPT: &str = r#"
saved=/var/lib/vmtest
sysctls() { sysctl -n vm.swappiness vm.max_map_count | paste -sd' '; }
mkdir -p $saved
sysctls > $saved/sysctl
snapshot /etc /var/lib/skyhook-packages > $saved/snapshot
expect_eq "tuned before apply" "$(dpkg_status tuned)" not-installed

node --lifecycle --until-interrupt
expect_eq "tuned after apply" "$(dpkg_status tuned)" installed
expect_eq "the tuned service" "$(systemctl is-active tuned)" active
expect_eq "the active profile" "$(tuned-adm active)" "Current active profile: vmtest"
cmp "$FILES/node.configmap/vmtest" /etc/tuned/vmtest/tuned.conf || fail "the deployed profile differs"
expect_eq "kernel parameters" "$(sysctls)" "17 262144"
tuned-adm verify
node post-interrupt
expect_untouched "config again, same configMap" "/etc /var/lib/skyhook-packages" node config

# A setting changed behind tuned's back: verify fails, and so does the check.
sysctl -qw vm.swappiness=50
record drifted node post-interrupt
expect_eq "post-interrupt-check with vm.swappiness changed" "$(cat drifted.code)" 1
sysctl -qw vm.swappiness=17
node post-interrupt

node uninstall
expect_eq "tuned after uninstall" "$(dpkg_status tuned)" not-installed
expect_gone /etc/tuned/vmtest /usr/sbin/tuned /usr/sbin/tuned-adm
expect_eq "the tuned service" "$(systemctl is-active tuned)" inactive
expect_eq "kernel parameters (tuned rolled its profile back when stopped)" "$(sysctls)" "$(cat $saved/sysctl)"
expect_same_snapshot "after uninstall" $saved/snapshot /etc /var/lib/skyhook-packages
"#;

#[test]
#[ignore = "VM tier: needs root, the Debian mirror and minutes; cargo test -p skyhook-pkg --test vm -- --ignored"]
fn tuned() {
    let mut vm = Vm::new("tuned");
    vm.timeout(Duration::from_secs(600)); // apt under TCG
    vm.package("node", "tuned", &[("tuned_profile", "vmtest"), ("vmtest", PROFILE)]);
    let boot = vm.boot("lifecycle", SCRIPT);
    boot.expect_running();
    boot.script
        .success()
        .expect_step("apply", 0)
        .expect_step("apply-check", 0)
        .expect_step("config", 0)
        .expect_step("config-check", 0)
        .expect_step("post-interrupt-check", 0)
        .expect_step("uninstall", 0)
        .expect_step("uninstall-check", 0)
        .expect_output(
            "[config-check/config-check] info: tuned-adm verify: the system settings match the active profile",
        )
        .expect_output("[post-interrupt-check/post-interrupt-check] info: tuned-adm verify: the system settings match");
    boot.record("drifted")
        .expect_step("post-interrupt-check", 1)
        .expect_output("tuned-adm verify failed after the interrupt")
        .expect_output("verify: failed: 'vm.swappiness' = '50', expected '17'");
}

// SPDX-License-Identifier: Apache-2.0
//! The NVIDIA scenario, four boots for both NVIDIA packages: nvidia-tuned (accelerator
//! h100, intent performance) installs tuned, deploys the profile chain and the running
//! daemon activates it (its sysctls live); the reboot the package asks for brings its
//! kernel arguments onto `/proc/cmdline`, and `tuned-adm verify` passes for real in
//! post-interrupt-check; uninstall takes tuned, the profiles and the arguments back.
//! Then nvidia-tuning-gke (h100 inference) sets its sysctls live on the same machine,
//! skips the `kernel.sched_*` keys this kernel lacks with a warning, and its uninstall
//! puts every value back. Then nvidia-tuned again with `service: eks` on the same
//! machine (h100 performance, under another SCR name): its GRUB drop-in and config's
//! regeneration of GRUB bring the chain's kernel arguments (read from the catalog with
//! `profiles show`) onto `/proc/cmdline` after a reboot, post-interrupt-check passes;
//! after uninstall and a reboot the command line is the machine's own again and
//! uninstall-check passes.

use crate::catalog;
use crate::vm::Vm;

/// Shared by both boots.
const DEFINES: &str = r#"
tracked="/etc /boot/grub/grub.cfg /var/lib/skyhook-packages"
saved=/var/lib/vmtest
args="init_on_alloc=0 pci=disable_acs_redir=pci:0:0 iommu=pt pci=realloc=off"
arp="net.ipv4.conf.all.arp_announce net.ipv4.conf.default.arp_announce net.ipv4.conf.all.arp_ignore net.ipv4.conf.default.arp_ignore"
sysctls() { sysctl -n $arp vm.swappiness | paste -sd' '; }
# ours: the eks chain's arguments ($eks_args, defined by the host) that the machine's
# own command line (before any package) lacks.
ours() { local a; for a in $eks_args; do tr ' ' '\n' < $saved/cmdline-before | grep -qxF -- "$a" || echo "$a"; done; }
"#;

/// Boot 1: nvidia-tuned up to the interrupt.
const INSTALL: &str = r#"
mkdir -p $saved
cp /proc/cmdline $saved/cmdline-before
keep /proc/cmdline cmdline-before
sysctls > $saved/sysctl
keep $saved/sysctl sysctl-before
snapshot $tracked > $saved/snapshot
cp /etc/default/grub $saved/default-grub

# INTERRUPT=true, as the original's SCR example sets it: config-check lets the kernel
# arguments wait for the reboot.
gpu --lifecycle --until-interrupt --env INTERRUPT=true
expect_eq "the tuned service" "$(systemctl is-active tuned)" active
expect_eq "the active profile" "$(tuned-adm active)" "Current active profile: nvidia-h100-performance"
expect_eq "nvidia-base's sysctls, live" "$(sysctl -n $arp | paste -sd' ')" "2 2 1 1"
for a in $args; do
    grep -qF -- "$a" /boot/grub/grub.cfg || fail "grub.cfg lacks $a"
    ! on_cmdline "$a" || fail "$a on the command line before the reboot"
done
"#;

/// Boot 2: after the reboot: nvidia-tuned's checks, its uninstall, then nvidia-tuning-gke,
/// then nvidia-tuned with service eks up to its interrupt.
const AFTER_REBOOT: &str = r#"
keep /proc/cmdline
for a in $args; do on_cmdline "$a" || fail "$a is not on /proc/cmdline"; done
tuned-adm verify || fail "tuned-adm verify fails after the reboot"
gpu post-interrupt
expect_untouched "config again, same configMap" "$tracked" gpu config

gpu uninstall
expect_eq "tuned after uninstall" "$(dpkg_status tuned)" not-installed
expect_gone /etc/tuned/nvidia-h100-performance /etc/tuned/nvidia-acs-disable /etc/tuned/nvidia-base
! grep -qF "iommu=pt" /boot/grub/grub.cfg || fail "grub.cfg still has the profile's arguments"
expect_eq "kernel parameters put back" "$(sysctls)" "$(cat $saved/sysctl)"
# Recorded, not asserted here, so that nvidia-tuning-gke still runs: the host asserts it.
record grub-after-uninstall diff -u $saved/default-grub /etc/default/grub
record tuned-uninstall-snapshot expect_same_snapshot "after nvidia-tuned's uninstall" $saved/snapshot $tracked

snapshot $tracked > $saved/snapshot-gke
gke config
gke config-check
gke post-interrupt
expect_eq "nvidia-tuning-gke's sysctls, live" "$(sysctls)" "2 2 1 1 1"
[ ! -e /proc/sys/kernel/sched_latency_ns ] || fail "this kernel has kernel.sched_latency_ns: the scenario's premise is gone"
gke uninstall
expect_eq "kernel parameters put back" "$(sysctls)" "$(cat $saved/sysctl)"
expect_same_snapshot "after nvidia-tuning-gke's uninstall" $saved/snapshot-gke $tracked

# nvidia-tuned with service eks, up to the interrupt.
[ -n "$(ours)" ] || fail "the eks chain adds no kernel argument: the scenario's premise is gone"
snapshot $tracked > $saved/snapshot-eks
for a in $(ours); do ! grep -qF -- "$a" /boot/grub/grub.cfg || fail "grub.cfg has $a before eks's config"; done
eks --lifecycle --until-interrupt --env INTERRUPT=true
expect_eq "the active profile" "$(tuned-adm active)" "Current active profile: eks-h100-performance"
expect_exists /etc/default/grub.d/99_tuned.cfg
# (The command line still has the first chain's arguments: no reboot since its uninstall.)
for a in $(ours); do grep -qF -- "$a" /boot/grub/grub.cfg || fail "grub.cfg lacks $a after eks's config"; done
"#;

/// Boot 3: after the reboot: the eks chain's arguments on the command line, its
/// checks, its uninstall.
const EKS_AFTER_REBOOT: &str = r#"
keep /proc/cmdline cmdline-eks
for a in $eks_args; do on_cmdline "$a" || fail "$a is not on /proc/cmdline"; done
eks post-interrupt
eks uninstall
expect_eq "tuned after uninstall" "$(dpkg_status tuned)" not-installed
expect_gone /etc/default/grub.d/99_tuned.cfg /etc/tuned/eks-h100-performance
for a in $(ours); do ! grep -qF -- "$a" /boot/grub/grub.cfg || fail "grub.cfg still has $a"; done
"#;

/// Boot 4: after uninstall and a reboot: the machine's own command line again.
const EKS_AFTER_UNINSTALL: &str = r#"
keep /proc/cmdline cmdline-after
for a in $(ours); do ! on_cmdline "$a" || fail "$a is still on /proc/cmdline"; done
expect_eq "the command line" "$(cat /proc/cmdline)" "$(cat $saved/cmdline-before)"
eks uninstall-check
expect_same_snapshot "after eks's uninstall and a reboot" $saved/snapshot-eks $tracked
"#;

#[test]
#[ignore = "VM tier: needs root, the Debian mirror and minutes; cargo test -p skyhook-pkg --test vm -- --ignored"]
fn nvidia() {
    let mut vm = Vm::new("nvidia");
    vm.timeout(std::time::Duration::from_secs(600)); // apt under TCG
    let eks_args = catalog::kernel_arguments("h100", "performance", Some("eks"));
    vm.define(DEFINES)
        .define(&format!("eks_args=\"{}\"", eks_args.join(" ")))
        .package(
            "gpu",
            "nvidia-tuned",
            &[("accelerator", "h100"), ("intent", "performance")],
        )
        .package(
            "gke",
            "nvidia-tuning-gke",
            &[("accelerator", "h100"), ("intent", "inference")],
        )
        .package(
            "eks",
            "nvidia-tuned",
            &[("accelerator", "h100"), ("intent", "performance"), ("service", "eks")],
        );

    let install = vm.boot("install", INSTALL);
    install.expect_running();
    install
        .script
        .success()
        .expect_step("apply", 0)
        .expect_step("config", 0)
        .expect_step("config-check", 0)
        .expect_output("[interrupt] stopping here; the package said its change needs: {type: reboot}");

    let after = vm.boot("after-reboot", AFTER_REBOOT);
    after.expect_running();
    after
        .script
        .success()
        .expect_step("post-interrupt-check", 0)
        .expect_output("tuned-adm verify: the system settings match")
        .expect_output("kernel.sched_latency_ns")
        .expect_step("uninstall", 0);
    let cmdline = after.file("cmdline");
    assert!(
        cmdline.contains("iommu=pt") && cmdline.contains("init_on_alloc=0"),
        "{cmdline}"
    );
    assert_ne!(
        install.file("sysctl-before").trim(),
        "2 2 1 1 1",
        "the guest's own values differ from the packages' (the scenario's premise)"
    );
    after.record("grub-after-uninstall").success();
    after.record("tuned-uninstall-snapshot").success();
    after
        .script
        .expect_output("[interrupt] stopping here; the package said its change needs: {type: reboot}");

    let eks = vm.boot("eks-after-reboot", EKS_AFTER_REBOOT);
    eks.expect_running();
    eks.script
        .success()
        .expect_step("post-interrupt-check", 0)
        .expect_step("uninstall", 0)
        .expect_step("uninstall-check", 0);
    let cmdline = eks.file("cmdline-eks");
    for a in &eks_args {
        assert!(
            cmdline.split_whitespace().any(|t| t == a),
            "{a} (the eks chain) is not on the command line: {cmdline}"
        );
    }

    let back = vm.boot("eks-after-uninstall", EKS_AFTER_UNINSTALL);
    back.expect_running();
    back.script.success().expect_step("uninstall-check", 0);
    assert_eq!(
        back.file("cmdline-after"),
        install.file("cmdline-before"),
        "the command line after eks's uninstall and a reboot"
    );
}

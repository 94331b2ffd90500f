// SPDX-License-Identifier: Apache-2.0
//! The tuning scenario: kernel parameters (one of them also set by a distribution
//! file that the bash package's `999-` name lost to), user limits, a `LimitNOFILE`
//! drop-in for a running test service and kernel arguments; config, a real reboot,
//! post-interrupt-check on live values; uninstall, a reboot, and the node is as before.
//!
//! The same scenario runs on x86_64 ([`tuning`]), on arm64 ([`tuning_arm64`], the
//! aarch64 dist tree in an arm64 guest booted by UEFI and GRUB EFI) and on arm64 with
//! a 16k-page kernel ([`tuning_arm64_16k`]); what differs is the [`Platform`]: the
//! kernel arguments and the huge pages they reserve per size. On the 16k-page guest,
//! huge pages of 512M (a size only a 64k-page kernel registers) are refused first,
//! before any change, by tuning's `grub.conf` and by nvidia-tuned's gb200
//! performance chain (whose arguments come from the catalog).

use crate::arch::{Arch, Guest};
use crate::catalog;
use crate::vm::Vm;

/// What the scenario asks of one architecture's kernel.
struct Platform {
    guest: Guest,
    /// The scenario's machine name.
    name: &'static str,
    /// grub.conf's arguments, in order (appended to the command line as they are).
    args: &'static [&'static str],
    /// The huge pages they reserve: (size directory under /sys/kernel/mm/hugepages
    /// without `hugepages-`, count).
    huge_pages: &'static [(&'static str, u32)],
    /// A message post-interrupt-check gives before the reboot, for no huge page of
    /// a size reserved yet.
    unreserved: &'static str,
    /// Whether boot 1 first proves the refusals of 512M huge pages ([`REFUSALS`]).
    refuses_512m: bool,
    /// Whether a third boot proves the node after uninstall and a reboot. The 16k
    /// guest leaves it out: it is the same code path as the other guests' third boot,
    /// and a boot at `-cpu max` under TCG costs CI minutes.
    boots_after_uninstall: bool,
}

/// x86_64: the default size (2M).
const X86_64: Platform = Platform {
    guest: Guest::stock(Arch::X86_64),
    name: "tuning",
    args: &["hugepages=16", "skyhook.vmtest=tuning"],
    huge_pages: &[("2048kB", 16)],
    unreserved: "hugepages=16 asks for 16 huge pages of 2M, the kernel reserved 0",
    refuses_512m: false,
    boots_after_uninstall: true,
};

/// arm64 with 4k pages (Debian's arm64 kernel): 2M (a PMD) and 64K (contiguous PTEs),
/// each with its own count.
const ARM64: Platform = Platform {
    guest: Guest::stock(Arch::Arm64),
    name: "tuning-arm64",
    args: &[
        "hugepagesz=2M",
        "hugepages=16",
        "hugepagesz=64K",
        "hugepages=32",
        "skyhook.vmtest=tuning",
    ],
    huge_pages: &[("2048kB", 16), ("64kB", 32)],
    unreserved: "hugepages=32 asks for 32 huge pages of 64K, the kernel reserved 0",
    refuses_512m: false,
    boots_after_uninstall: true,
};

/// arm64 with 16k pages (bookworm-backports' arm64-16k kernel): 2M (contiguous PTEs)
/// and 32M (a PMD), each with its own count.
const ARM64_16K: Platform = Platform {
    guest: Guest::ARM64_16K,
    name: "tuning-arm64-16k",
    args: &[
        "hugepagesz=2M",
        "hugepages=16",
        "hugepagesz=32M",
        "hugepages=4",
        "skyhook.vmtest=tuning",
    ],
    huge_pages: &[("2048kB", 16), ("32768kB", 4)],
    unreserved: "hugepages=4 asks for 4 huge pages of 32M, the kernel reserved 0",
    refuses_512m: true,
    boots_after_uninstall: false,
};

/// Boot 1 on the 16k-page guest, before anything else: huge pages of 512M, which a
/// 16k-page kernel cannot register, refused by config before any change — tuning's
/// `grub.conf` (package `big`) and nvidia-tuned's gb200 performance chain (package
/// `gb200`; tuned is not installed: config is refused before it needs it).
const REFUSALS: &str = r#"
mkdir -p $saved
expect_eq "the page size" "$(getconf PAGESIZE)" 16384
snapshot $tracked > $saved/snapshot-refusals
record refused-tuning big config
record refused-gb200 gb200 config
expect_same_snapshot "after the refused configs" $saved/snapshot-refusals $tracked
"#;

impl Platform {
    /// The arguments as on the command line.
    fn cmdline(&self) -> String {
        self.args.join(" ")
    }

    /// Bash: `$args`, and `$huge` / `$no_huge` as `hugepages` prints them.
    fn defines(&self) -> String {
        let huge = |count: Option<u32>| -> String {
            let each = self
                .huge_pages
                .iter()
                .map(|(size, n)| format!("{size}={}", count.unwrap_or(*n)));
            each.collect::<Vec<_>>().join(" ")
        };
        format!(
            "args=\"{}\"\nhuge=\"{}\"\nno_huge=\"{}\"\n",
            self.cmdline(),
            huge(None),
            huge(Some(0))
        )
    }
}

/// The package's configMap (SCR package name `gpu`) but grub.conf.
const CONFIGMAP: &[(&str, &str)] = &[
    (
        "sysctl.conf",
        "# cloud-optimization.conf sets 30; ours is read after it\n\
         vm.swappiness = 13\n\
         net.core.somaxconn = 8192\n\
         fs.inotify.max_user_instances = 1024\n",
    ),
    ("ulimit.conf", "nofile=65536\nmemlock=unlimited\n"),
    (
        "service_skyhook-vmtest.conf",
        "[Service]\nLimitNOFILE=65536:131072\nLimitMEMLOCK=infinity\n",
    ),
];

/// Shared by every boot: names, and a reader of the test service's live limits.
const DEFINES: &str = r#"
keys="vm.swappiness net.core.somaxconn fs.inotify.max_user_instances"
svc=skyhook-vmtest.service
files="/etc/sysctl.d/zz-skyhook-gpu-tuning.conf /etc/security/limits.d/zz-skyhook-gpu-tuning.conf
  /etc/systemd/system/$svc.d/zz-skyhook-gpu-tuning.conf /etc/default/grub.d/zz-skyhook-gpu-tuning.cfg"
tracked="/etc /boot/grub/grub.cfg /var/lib/skyhook-packages"
saved=/var/lib/vmtest
sysctls() { for k in $keys; do echo "$k=$(sysctl -n "$k")"; done; }
# service_limit NAME: "soft hard" of the test service's main process, from /proc/<pid>/limits.
service_limit() {
    local pid
    pid=$(systemctl show -p MainPID --value "$svc")
    [ "$pid" -gt 0 ] || fail "$svc is not running"
    awk -v n="$1" 'index($0, n) == 1 { print $(NF-2), $(NF-1) }' "/proc/$pid/limits"
}
# hugepages: "SIZE=nr_hugepages" for each size of $huge, space-separated.
hugepages() {
    local h out=()
    for h in $huge; do out+=("${h%%=*}=$(cat "/sys/kernel/mm/hugepages/hugepages-${h%%=*}/nr_hugepages")"); done
    echo "${out[*]}"
}
"#;

/// Boot 1: the node as a distribution left it (a sysctl file of its own, a running
/// service), then everything the agent runs before the interrupt.
const INSTALL: &str = r#"
echo 'vm.swappiness = 30' > /etc/sysctl.d/cloud-optimization.conf
systemctl restart systemd-sysctl
printf '[Service]\nType=simple\nExecStart=/bin/sleep infinity\n[Install]\nWantedBy=multi-user.target\n' \
    > /etc/systemd/system/$svc
systemctl enable --now $svc
mkdir -p $saved
sysctls > $saved/sysctl
service_limit "Max open files" > $saved/nofile
snapshot $tracked > $saved/snapshot
keep $saved/sysctl sysctl-before
expect_eq "vm.swappiness from cloud-optimization.conf" "$(sysctl -n vm.swappiness)" 30

gpu --lifecycle --until-interrupt
expect_exists $files
expect_eq "live kernel parameters" "$(sysctls | paste -sd' ')" \
    "vm.swappiness=13 net.core.somaxconn=8192 fs.inotify.max_user_instances=1024"
grep -qF "$args" /boot/grub/grub.cfg || fail "grub.cfg lacks our arguments"
! on_cmdline skyhook.vmtest=tuning || fail "our arguments on the command line before the reboot"
expect_eq "the service's nofile before its restart" "$(service_limit "Max open files")" "$(cat $saved/nofile)"
record early-check gpu post-interrupt
expect_eq "post-interrupt-check before the reboot" "$(cat early-check.code)" 1

# A file read after ours that sets one of our keys: config-check names it.
echo 'vm.swappiness = 77' > /etc/sysctl.d/zzz-late.conf
record overridden gpu config-check
rm /etc/sysctl.d/zzz-late.conf
expect_eq "config-check with zzz-late.conf" "$(cat overridden.code)" 1
gpu config-check
"#;

/// Boot 2: the node after the interrupt (a reboot), then uninstall.
const AFTER_REBOOT: &str = r#"
keep /proc/cmdline
service_limit "Max open files" > nofile
for a in $args; do on_cmdline "$a" || fail "$a is not on /proc/cmdline"; done
expect_eq "huge pages reserved at boot, per size" "$(hugepages)" "$huge"
expect_eq "vm.swappiness after the boot (ours over cloud-optimization.conf)" "$(sysctl -n vm.swappiness)" 13
expect_eq "the service's nofile" "$(cat nofile)" "65536 131072"
expect_eq "the service's memlock" "$(service_limit "Max locked memory")" "unlimited unlimited"
expect_eq "a login session's nofile" "$(su -s /bin/sh nobody -c 'ulimit -Sn; ulimit -Hn' | paste -sd' ')" "65536 65536"
gpu post-interrupt
gpu config-check
expect_untouched "config again, same configMap" "$tracked" gpu config

gpu uninstall
expect_gone $files /etc/systemd/system/$svc.d
expect_eq "kernel parameters put back" "$(sysctls)" "$(cat $saved/sysctl)"
! grep -q "skyhook.vmtest" /boot/grub/grub.cfg || fail "grub.cfg still has our arguments"
expect_same_snapshot "after uninstall" $saved/snapshot $tracked
"#;

/// Boot 3: the node after uninstall and a reboot.
const AFTER_UNINSTALL: &str = r#"
keep /proc/cmdline
for a in $args; do ! on_cmdline "$a" || fail "$a is still on /proc/cmdline"; done
expect_eq "huge pages, per size" "$(hugepages)" "$no_huge"
expect_eq "kernel parameters after the boot" "$(sysctls)" "$(cat $saved/sysctl)"
expect_eq "the service's nofile" "$(service_limit "Max open files")" "$(cat $saved/nofile)"
gpu uninstall-check
expect_same_snapshot "after uninstall and a reboot" $saved/snapshot $tracked
"#;

#[test]
#[ignore = "VM tier: needs root, the Debian mirror and minutes; cargo test -p skyhook-pkg --test vm -- --ignored"]
fn tuning() {
    scenario(&X86_64);
}

#[test]
#[ignore = "VM tier: needs root, the Debian mirror and minutes; cargo test -p skyhook-pkg --test vm -- --ignored"]
fn tuning_arm64() {
    scenario(&ARM64);
}

#[test]
#[ignore = "VM tier: needs root, the Debian mirror and minutes; cargo test -p skyhook-pkg --test vm -- --ignored"]
fn tuning_arm64_16k() {
    scenario(&ARM64_16K);
}

/// Three boots: install to the interrupt, after the reboot (then uninstall), after
/// uninstall and a reboot (where [`Platform::boots_after_uninstall`]).
fn scenario(platform: &Platform) {
    let mut vm = Vm::new_guest(platform.name, platform.guest);
    let grub_conf = platform.args.join("\n") + "\n";
    let configmap: Vec<(&str, &str)> = CONFIGMAP
        .iter()
        .copied()
        .chain([("grub.conf", grub_conf.as_str())])
        .collect();
    vm.define(DEFINES)
        .define(&platform.defines())
        .package("gpu", "tuning", &configmap);
    let args = platform.cmdline();
    let gb200_args = catalog::kernel_arguments("gb200", "performance", None);
    if platform.refuses_512m {
        assert!(
            gb200_args.iter().any(|a| a == "hugepagesz=512M"),
            "the gb200 performance chain no longer asks hugepagesz=512M (the refusal's premise): {gb200_args:?}"
        );
        vm.package("big", "tuning", &[("grub.conf", "hugepagesz=512M\nhugepages=2\n")])
            .package(
                "gb200",
                "nvidia-tuned",
                &[("accelerator", "gb200"), ("intent", "performance")],
            );
    }

    let refusals = if platform.refuses_512m { REFUSALS } else { "" };
    let install = vm.boot("install", &format!("{refusals}{INSTALL}"));
    install.expect_running();
    install
        .script
        .success()
        .expect_step("config", 0)
        .expect_step("config-check", 0)
        .expect_output("[interrupt] stopping here; the package said its change needs: {type: reboot}");
    install
        .record("early-check")
        .expect_step("post-interrupt-check", 1)
        .expect_output(&format!("the running kernel was not booted with {args}"))
        .expect_output(platform.unreserved)
        .expect_output("skyhook-vmtest.service (main process");
    install
        .record("overridden")
        .expect_step("config-check", 1)
        .expect_output("/etc/sysctl.d/zzz-late.conf line 1 sets vm.swappiness = 77");
    assert!(
        !install.record("overridden").output.contains("cloud-optimization.conf"),
        "config-check reports cloud-optimization.conf, which is read before ours"
    );
    if platform.refuses_512m {
        for refused in ["refused-tuning", "refused-gb200"] {
            install
                .record(refused)
                .expect_step("config", 1)
                .expect_output("hugepagesz=512M")
                .expect_output("16k")
                .expect_output("page size");
        }
    }

    let after = vm.boot("after-reboot", AFTER_REBOOT);
    after.expect_running();
    after
        .script
        .success()
        .expect_step("post-interrupt-check", 0)
        .expect_step("uninstall", 0)
        .expect_step("uninstall-check", 0);
    let cmdline = after.file("cmdline");
    assert!(
        cmdline.ends_with(&format!("{args}\n")),
        "our arguments are not appended to the command line: {cmdline}"
    );
    assert_eq!(after.file("nofile").trim(), "65536 131072", "the service's LimitNOFILE");

    assert_eq!(
        install.file("sysctl-before"),
        "vm.swappiness=30\nnet.core.somaxconn=4096\nfs.inotify.max_user_instances=128\n",
        "the node's own values before config (the scenario's premise)"
    );
    if !platform.boots_after_uninstall {
        return;
    }
    let back = vm.boot("after-uninstall", AFTER_UNINSTALL);
    back.expect_running();
    back.script.success().expect_step("uninstall-check", 0);
    assert!(
        !back.file("cmdline").contains("skyhook.vmtest"),
        "{}",
        back.file("cmdline")
    );
}

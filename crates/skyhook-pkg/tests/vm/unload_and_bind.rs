// SPDX-License-Identifier: Apache-2.0
//! The unload-and-bind scenario: copy-fail and bind-mount, the two packages that
//! change what the running kernel has — copy-fail unloads a module, bind-mount binds a
//! mount — share one machine and its three boots.
//!
//! - bind-mount exposes a real second disk: an ext4 file system the test makes with a
//!   marker file ([`Vm::add_disk`]), mounted at boot by an fstab line the scenario
//!   writes (as platform bootstrap would), bound at a second path by the package's
//!   unit. After a real reboot the bind mount is in the kernel's mount table (the
//!   source's device and root), the marker is read through it and a file written
//!   through it lands on the disk; after uninstall and a reboot the unit and the mount
//!   are gone and the disk's data is intact (the host reads it back).
//! - copy-fail keeps `algif_aead` out of the real kernel: the scenario loads the module
//!   first, config unloads it (rmmod, nothing used it) and writes the modprobe.d rule;
//!   after the reboot `modprobe algif_aead` fails and the module is not loaded, and
//!   post-interrupt-check's verdict line says the node is protected; after uninstall
//!   the module loads again.
//!
//! The same scenario runs on x86_64 ([`unload_and_bind`]) and on arm64
//! ([`unload_and_bind_arm64`], the aarch64 dist tree in the arm64 guest booted by UEFI
//! and GRUB EFI); both kernels build `algif_aead` as a module. The module's name sorts
//! after `tuning`: libtest starts tests in name order, so the arm64 guest's preparation
//! still comes after the x86_64 scenarios (README: overlapping them did not pay).

use crate::arch::Arch;
use crate::vm::Vm;

/// The second disk's label (the fstab line names it).
const LABEL: &str = "skyhook-data";
/// The marker file on it, and its content.
const MARKER: (&str, &str) = ("marker", "skyhook vm tier: bind-mount's source disk\n");
/// The mount point of the disk: bind-mount's `source` (the README's example).
const SOURCE: &str = "/mnt/k8s-disks/0";
/// Where bind-mount exposes it: `target`.
const TARGET: &str = "/mnt/data";
/// What the guest writes through the target, as `through-target` on the disk.
const WRITTEN: &str = "written through /mnt/data\n";

/// Shared by every boot (after `src`, `dst`, `label`, `marker` and `written`, which
/// [`scenario`] defines from the constants above): names, and readers of the mount
/// table and the module list.
const DEFINES: &str = r#"
unit=mnt-data.mount
unit_file=/etc/systemd/system/$unit
wants=/etc/systemd/system/local-fs.target.wants/$unit
conf=/etc/modprobe.d/disable-algif.conf
tracked="/etc /var/lib/skyhook-packages"
saved=/var/lib/vmtest
# mount_of PATH: "MAJOR:MINOR ROOT FSTYPE SOURCE" of each mount at PATH in the kernel's
# mount table (/proc/self/mountinfo), nothing when PATH is no mount point.
mount_of() {
    awk -v p="$1" '$5 == p { i = 7; while ($i != "-") i++; print $3, $4, $(i + 1), $(i + 2) }' /proc/self/mountinfo
}
# loaded: algif_aead is in the running kernel's module list.
loaded() { grep -q '^algif_aead ' /proc/modules; }
# aead_bind: as an unprivileged user (nobody), binds an AF_ALG socket of type aead,
# the way to the flaw: the kernel loads algif_aead on demand (`modprobe algif-aead`,
# kmod reads it as algif_aead). Prints "bound", or why not and fails.
aead_bind() {
    setpriv --reuid=65534 --regid=65534 --clear-groups perl -e '
        socket(my $s, 38, 5, 0) or die "socket(AF_ALG): $!\n";
        bind($s, pack("S a14 L L a64", 38, "aead", 0, 0, "gcm(aes)")) or die "bind(aead, gcm(aes)): $!\n";
        print "bound\n"'
}
# expect_blocked WHEN: neither modprobe nor the kernel's on-demand load brings algif_aead in.
expect_blocked() {
    ! loaded || fail "algif_aead is loaded $1"
    expect_code "modprobe algif_aead $1" 1 modprobe algif_aead
    if aead_bind > "aead-$2" 2>&1; then fail "an AF_ALG aead socket was bound $1"; fi
    echo "guest check: AF_ALG aead socket $1: $(cat "aead-$2")"
    ! loaded || fail "algif_aead was loaded $1 despite $conf"
}
"#;

/// Boot 1: the disk mounted by fstab, the module loaded; both packages to the
/// interrupt.
const INSTALL: &str = r#"
# The node as platform bootstrap left it: the disk mounted at the source by fstab.
wait_until "the disk labelled $label" 30 test -e /dev/disk/by-label/$label
disk=$(readlink -f /dev/disk/by-label/$label)
mkdir -p $src
echo "LABEL=$label $src ext4 defaults 0 2" >> /etc/fstab
systemctl daemon-reload
mount $src
read -r _ root fstype source <<< "$(mount_of $src)"
expect_eq "the source's mount (root, file system, device)" "$root $fstype $source" "/ ext4 $disk"
expect_eq "the marker under the source" "$(cat $src/marker)" "$marker"
mkdir -p $saved
snapshot $tracked > $saved/snapshot

# copy-fail: the module loaded, nothing using it.
! loaded || fail "algif_aead is loaded before the scenario loads it"
modprobe algif_aead
loaded || fail "modprobe algif_aead did not load it"
record copy-fail-config copy-fail --lifecycle --until-interrupt
expect_eq "copy-fail to the interrupt" "$(cat copy-fail-config.code)" 0
expect_eq "$conf" "$(cat $conf)" "install algif_aead /bin/false"
! loaded || fail "algif_aead is still loaded after config (nothing used it: config unloads it)"
expect_blocked "after config" config

# bind-mount: prepared, not active before the interrupt.
record bind-config bind --lifecycle --until-interrupt
expect_eq "bind-mount to the interrupt" "$(cat bind-config.code)" 0
expect_exists $unit_file $wants
expect_eq "$unit enabled" "$(systemctl is-enabled $unit)" enabled
expect_eq "mounts at $dst before the interrupt" "$(mount_of $dst)" ""
expect_eq "what $dst holds before the interrupt" "$(ls -A $dst)" ""
record bind-early bind post-interrupt
expect_eq "bind-mount's post-interrupt-check before the interrupt" "$(cat bind-early.code)" 1
"#;

/// Boot 2: after the reboot (the interrupt of both), the checks, then uninstall.
const AFTER_REBOOT: &str = r#"
keep /proc/self/mountinfo mountinfo
read -r sdev sroot _ _ <<< "$(mount_of $src)"
[ -n "$sdev" ] || fail "$src is not mounted after the reboot (fstab)"
read -r tdev troot tfstype _ <<< "$(mount_of $dst)"
[ -n "$tdev" ] || fail "$dst is not mounted after the reboot"
expect_eq "the target's device and root (the source's)" "$tdev $troot $tfstype" "$sdev $sroot ext4"
expect_eq "$unit" "$(systemctl is-active $unit)" active
expect_eq "the marker through the target" "$(cat $dst/marker)" "$marker"
echo "$written" > $dst/through-target
sync
expect_eq "what was written through the target, under the source" "$(cat $src/through-target)" "$written"
record bind-active bind post-interrupt
expect_eq "bind-mount's post-interrupt" "$(cat bind-active.code)" 0

expect_blocked "after the reboot" reboot
record copy-fail-active copy-fail post-interrupt
expect_eq "copy-fail's post-interrupt" "$(cat copy-fail-active.code)" 0

record bind-uninstall bind uninstall
expect_eq "bind-mount's uninstall" "$(cat bind-uninstall.code)" 0
expect_gone $unit_file $wants
[ -n "$(mount_of $dst)" ] || fail "uninstall unmounted $dst (it never unmounts a live target)"
record copy-fail-uninstall copy-fail uninstall
expect_eq "copy-fail's uninstall" "$(cat copy-fail-uninstall.code)" 0
expect_gone $conf
expect_eq "an AF_ALG aead socket after uninstall" "$(aead_bind 2>&1)" bound
loaded || fail "binding an AF_ALG aead socket did not load algif_aead after uninstall"
expect_same_snapshot "after uninstall" $saved/snapshot $tracked
"#;

/// Boot 3: after uninstall and a reboot.
const AFTER_UNINSTALL: &str = r#"
keep /proc/self/mountinfo mountinfo
expect_eq "mounts at $dst" "$(mount_of $dst)" ""
expect_gone $unit_file $wants
expect_eq "$unit known to systemd" "$(systemctl show -p LoadState --value $unit)" not-found
[ -d $dst ] || fail "$dst is gone (uninstall keeps a target that was a mount point)"
expect_eq "what $dst holds" "$(ls -A $dst)" ""
read -r _ _ fstype _ <<< "$(mount_of $src)"
expect_eq "the source's file system (fstab)" "$fstype" ext4
expect_eq "the marker under the source" "$(cat $src/marker)" "$marker"
expect_eq "the file written through the target, under the source" "$(cat $src/through-target)" "$written"
record bind-gone bind uninstall-check
expect_eq "bind-mount's uninstall-check" "$(cat bind-gone.code)" 0

! loaded || fail "algif_aead is loaded at boot after uninstall (nothing here loads it)"
expect_gone $conf
expect_eq "an AF_ALG aead socket" "$(aead_bind 2>&1)" bound
loaded || fail "binding an AF_ALG aead socket did not load algif_aead after uninstall and a reboot"
record copy-fail-gone copy-fail uninstall-check
expect_eq "copy-fail's uninstall-check" "$(cat copy-fail-gone.code)" 0
expect_same_snapshot "after uninstall and a reboot" $saved/snapshot $tracked
"#;

#[test]
#[ignore = "VM tier: needs root, the Debian mirror and minutes; cargo test -p skyhook-pkg --test vm -- --ignored"]
fn unload_and_bind() {
    scenario(Arch::X86_64, "unload-and-bind");
}

#[test]
#[ignore = "VM tier: needs root, the Debian mirror and minutes; cargo test -p skyhook-pkg --test vm -- --ignored"]
fn unload_and_bind_arm64() {
    scenario(Arch::Arm64, "unload-and-bind-arm64");
}

/// Three boots on a machine of `arch` named `name`: install to the interrupt, after
/// the reboot (then uninstall), after uninstall and a reboot.
fn scenario(arch: Arch, name: &str) {
    let mut vm = Vm::new_on(name, arch);
    let disk = vm.add_disk(LABEL, 64, &[MARKER]);
    vm.define(&format!(
        "src={SOURCE}\ndst={TARGET}\nlabel={LABEL}\nmarker={:?}\nwritten={:?}",
        MARKER.1.trim_end(),
        WRITTEN.trim_end()
    ))
    .define(DEFINES)
    .package("copy-fail", "copy-fail", &[])
    .package(
        "bind",
        "bind-mount",
        &[
            ("source", SOURCE),
            ("target", TARGET),
            ("expected-source-fstype", "ext4"),
            ("expected-source-device-prefix", "/dev/vd"),
        ],
    );

    let install = vm.boot("install", INSTALL);
    install.expect_running();
    install.script.success();
    install
        .record("copy-fail-config")
        .success()
        .expect_step("config", 0)
        .expect_step("config-check", 0)
        .expect_output("modprobe.conf: unloaded algif_aead (rmmod: nothing used it)")
        .expect_output(
            "copy-fail: CVE-2026-31431: node protected: algif_aead not loaded, loading it blocked by \
             /etc/modprobe.d/disable-algif.conf",
        )
        .expect_output("[interrupt] stopping here; the package said its change needs: {type: noop}");
    install
        .record("bind-config")
        .success()
        .expect_step("apply", 0)
        .expect_step("apply-check", 0)
        .expect_step("config", 0)
        .expect_step("config-check", 0)
        .expect_output(
            "[interrupt] stopping here; the package said its change needs: \
             {type: service, services: [mnt-data.mount]}",
        );
    install
        .record("bind-early")
        .failure()
        .expect_step("post-interrupt-check", 1)
        .expect_output("mnt-data.mount is not active")
        .expect_output(r#""/mnt/data" is not the live bind mount of "/mnt/k8s-disks/0""#);

    let after = vm.boot("after-reboot", AFTER_REBOOT);
    after.expect_running();
    after.script.success();
    after
        .record("bind-active")
        .success()
        .expect_step("post-interrupt-check", 0);
    after
        .record("copy-fail-active")
        .success()
        .expect_step("post-interrupt-check", 0)
        .expect_output(
            "copy-fail: CVE-2026-31431: node protected: algif_aead not loaded, loading it blocked by \
             /etc/modprobe.d/disable-algif.conf",
        );
    assert!(
        !after.record("copy-fail-active").output.contains("VULNERABLE"),
        "post-interrupt-check after the reboot calls the node vulnerable\n{}",
        after.report()
    );
    after
        .record("bind-uninstall")
        .success()
        .expect_step("uninstall", 0)
        .expect_step("uninstall-check", 0)
        .expect_output(r#""/mnt/data" remains mounted on purpose"#);
    after
        .record("copy-fail-uninstall")
        .success()
        .expect_step("uninstall", 0)
        .expect_step("uninstall-check", 0);
    for (boot, file) in [(&install, "aead-config"), (&after, "aead-reboot")] {
        let why = boot.file(file);
        assert!(
            why.starts_with("bind(aead, gcm(aes)): "),
            "binding an AF_ALG aead socket with algif_aead kept out should fail at bind (the module's \
             on-demand load), it said: {why}"
        );
    }
    let mounts = after.file("mountinfo");
    assert!(
        mounts.lines().any(|l| l.split_whitespace().nth(4) == Some(TARGET)),
        "no mount at {TARGET} in the guest's mount table after the reboot:\n{mounts}"
    );

    let back = vm.boot("after-uninstall", AFTER_UNINSTALL);
    back.expect_running();
    back.script.success();
    back.record("bind-gone").success().expect_step("uninstall-check", 0);
    back.record("copy-fail-gone")
        .success()
        .expect_step("uninstall-check", 0);
    let mounts = back.file("mountinfo");
    assert!(
        !mounts.lines().any(|l| l.split_whitespace().nth(4) == Some(TARGET)),
        "{TARGET} is still mounted after uninstall and a reboot:\n{mounts}"
    );

    // The disk as the guest left it: the marker intact, the file written through the
    // target on it.
    assert_eq!(
        vm.disk_file(&disk, &format!("/{}", MARKER.0)).as_deref(),
        Some(MARKER.1),
        "the marker on the source disk after the scenario"
    );
    assert_eq!(
        vm.disk_file(&disk, "/through-target").as_deref(),
        Some(WRITTEN),
        "the file written through {TARGET}, on the source disk"
    );
}

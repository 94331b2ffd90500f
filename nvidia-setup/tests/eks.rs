// SPDX-License-Identifier: Apache-2.0
//! The EKS full entry on a simulated node running the combination's kernel: apt
//! (tools, the opt-in upgrade and its runtime guard), EFA required, the OFI files
//! and ldconfig, chrony configured once and restarted, instance storage mounted by
//! the AMI left alone (its array: tests/instance_storage.rs); the bash version's files taken over,
//! uninstall, kill points.

mod common;

use common::*;

const PROFILE: &str = "/etc/profile.d/ofi-aws.sh";
const LD_SO: &str = "/etc/ld.so.conf.d/000_ofi_aws.conf";
const CHRONY: &str = "/etc/chrony/chrony.conf";
const SERVER: &str = "server 169.254.169.123 prefer iburst minpoll 4 maxpoll 4\n";

/// The EFA installer's scratch directories left on the node.
fn scratch_dirs(n: &Node) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![n.path("/var/lib/skyhook-packages")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            if e.file_type().unwrap().is_dir() {
                if e.file_name() == "efa-installer" {
                    found.push(e.path().display().to_string());
                }
                stack.push(e.path());
            }
        }
    }
    found
}

fn count(calls: &[String], prefix: &str) -> usize {
    calls.iter().filter(|c| c.starts_with(prefix)).count()
}

#[test]
fn the_full_entry_configures_ofi_and_chrony_and_uninstall_gives_them_back() {
    let n = eks();
    n.file(CHRONY, CHRONY_CONF);
    let before = n.snapshot();
    run(&n, "apply", 0).expect_output("the EKS steps are done");
    assert_eq!(
        n.read(PROFILE).as_deref(),
        Some("export PATH=\"$PATH:/opt/amazon/ofi-nccl/bin\"\n")
    );
    assert_eq!(n.read(LD_SO).as_deref(), Some("/opt/amazon/ofi-nccl/lib\n"));
    let chrony = n.read(CHRONY).unwrap();
    assert!(!chrony.contains("\npool "), "{chrony}");
    assert_eq!(chrony.matches(SERVER).count(), 1, "{chrony}");
    assert!(chrony.contains("keyfile /etc/chrony/chrony.keys\n"), "the rest is kept");
    let calls = n.calls();
    assert_eq!(count(&calls, "ldconfig"), 1, "{calls:?}");
    assert_eq!(count(&calls, "systemctl restart chrony"), 1, "{calls:?}");
    assert_eq!(
        count(&calls, "apt-get -o DPkg::Lock::Timeout=600 upgrade"),
        0,
        "no upgrade unless asked"
    );
    run(&n, "apply-check", 0);
    run(&n, "post-interrupt-check", 0);

    let applied = n.snapshot();
    n.clear_calls();
    run(&n, "apply", 0);
    applied.assert_same(&n.snapshot());
    let calls = n.calls();
    assert_eq!(
        count(&calls, "ldconfig") + count(&calls, "systemctl restart"),
        0,
        "{calls:?}"
    );

    run(&n, "uninstall", 0);
    run(&n, "uninstall-check", 0);
    before.assert_same(&n.snapshot());
    let calls = n.calls();
    assert_eq!(count(&calls, "ldconfig"), 1, "{calls:?}");
    assert_eq!(count(&calls, "systemctl restart chrony"), 1, "{calls:?}");
}

#[test]
fn missing_tools_are_installed_and_the_bash_versions_files_are_taken_over() {
    let n = eks();
    n.run_stand_in("apt-get", &["purge", "-y", "wget", "chrony"])
        .expect_code(0);
    n.file(PROFILE, "PATH=$PATH:/opt/amazon/ofi-nccl/bin\n")
        .file(LD_SO, "/opt/amazon/ofi-nccl/lib\n");
    run(&n, "apply", 0);
    assert!(n.package_version("wget").is_some() && n.package_version("chrony").is_some());
    let chrony = n.read(CHRONY).unwrap();
    assert_eq!(chrony.matches(SERVER).count(), 1, "{chrony}");
    // The bash version appended its line on every run: one line again.
    n.file(CHRONY, format!("{CHRONY_CONF}{SERVER}{SERVER}"));
    run(&n, "apply", 0);
    assert_eq!(n.read(CHRONY).unwrap().matches(SERVER).count(), 1);
    run(&n, "uninstall", 0);
    assert!(
        !n.exists(PROFILE) && !n.exists(LD_SO),
        "the bash version's files are this package's own"
    );
}

#[test]
fn a_missing_efa_part_is_refused_before_any_change() {
    type Setup = fn(&Node);
    let cases: [(&str, Setup, &str); 3] = [
        (
            "no efa package",
            |n| {
                n.run_stand_in("apt-get", &["purge", "-y", "efa"]).expect_code(0);
            },
            "the dpkg package efa is not installed",
        ),
        (
            "no DKMS module",
            |n| {
                std::fs::remove_file(n.commands_dir().join("dkms-efa")).unwrap();
            },
            "dkms lists no installed efa module",
        ),
        (
            "no OFI plugin",
            |n| {
                std::fs::remove_dir_all(n.path("/opt/amazon/ofi-nccl")).unwrap();
            },
            "/opt/amazon/ofi-nccl is not a directory",
        ),
    ];
    for (what, setup, says) in cases {
        let n = eks();
        n.file(CHRONY, CHRONY_CONF);
        setup(&n);
        let before = n.snapshot();
        let r = run(&n, "apply", 1);
        assert!(r.output().contains(says), "{what}: {}", r.output());
        before.assert_same(&n.snapshot());
        run(&n, "apply-check", 1);
    }
}

#[test]
fn instance_storage_already_mounted_is_accepted() {
    let n = eks();
    std::fs::create_dir_all(n.path("/dev/disk/by-id")).unwrap();
    std::os::unix::fs::symlink(
        "../../nvme1n1",
        n.path("/dev/disk/by-id/nvme-Amazon_EC2_NVMe_Instance_Storage_AWS1"),
    )
    .unwrap();
    let mut table = n.read("/proc/1/mountinfo").unwrap();
    table.push_str("40 22 9:127 / /mnt/k8s-disks/0 rw,noatime shared:30 - xfs /dev/md127 rw\n");
    n.file("/proc/1/mountinfo", table);
    run(&n, "apply", 0).expect_output("already mounted");
}

#[test]
fn an_upgrade_is_opt_in_and_refused_when_it_would_replace_the_runtime() {
    let mut n = eks();
    n.env("NVIDIA_SETUP_APT_UPGRADE", "true");
    n.offer_package(&DistPackage::new("curl", "1.0-2"));
    run(&n, "apply", 0);
    assert_eq!(n.package_version("curl").as_deref(), Some("1.0-2"), "upgraded");

    n.preinstall_package("containerd");
    n.offer_package(&DistPackage::new("containerd", "2.0.0-1"));
    n.offer_package(&DistPackage::new("curl", "1.0-3"));
    let before = n.snapshot();
    run(&n, "apply", 1).expect_output("would replace containerd 2.0.0-1");
    assert_eq!(n.package_version("curl").as_deref(), Some("1.0-2"), "nothing upgraded");
    before.assert_same(&n.snapshot());
}

#[test]
fn a_node_without_efa_gets_awss_installer_run_from_a_scratch_directory() {
    let n = eks_without_efa("1.48.0");
    n.file(CHRONY, CHRONY_CONF);
    let before = n.snapshot();
    run(&n, "apply", 0).expect_output("EFA 1.48.0: installed");
    let calls = n.calls();
    let fetch = calls.iter().find(|c| c.starts_with("curl")).expect("fetched");
    let at = |prefix: &str| calls.iter().position(|c| c.starts_with(prefix)).expect(prefix);
    assert!(
        at("gpgv") < at("tar"),
        "the signature is checked before unpacking: {calls:?}"
    );
    assert!(
        fetch.ends_with("https://efa-installer.amazonaws.com/aws-efa-installer-1.48.0.tar.gz"),
        "{fetch}"
    );
    assert!(
        fetch.contains("/var/lib/skyhook-packages/nvidia-setup/"),
        "not the working directory: {fetch}"
    );
    assert_eq!(scratch_dirs(&n), Vec::<String>::new());
    run(&n, "apply-check", 0);
    n.clear_calls();
    run(&n, "apply", 0);
    assert!(
        !n.calls().iter().any(|c| c.starts_with("curl")),
        "installed: not fetched again"
    );
    run(&n, "uninstall", 0);
    assert!(n.package_version("efa").is_some(), "EFA stays");
    // Everything else is as before (the package database and the DKMS answer live
    // beside the stand-ins, not on the node).
    before.assert_same(&n.snapshot());
}

/// AWS's installer runs only with a valid signature by the trusted key (the real
/// gpgv): a changed tarball, a key file serving another key, a key file that is no
/// key, a missing signature each stop apply (exit 1, named) before anything is
/// unpacked or run, and leave no scratch directory.
#[test]
fn the_efa_installer_runs_only_with_a_valid_signature_by_the_trusted_key() {
    let served = |n: &Node, name: &str| n.commands_dir().join("served").join(name);
    let tarball = "aws-efa-installer-1.48.0.tar.gz";
    let not_run = |n: &Node| {
        let calls = n.calls();
        assert!(
            !calls
                .iter()
                .any(|c| c.starts_with("tar") || c.contains("efa_installer.sh")),
            "{calls:?}"
        );
        assert_eq!(scratch_dirs(n), Vec::<String>::new(), "no leftovers");
        assert_eq!(n.package_version("efa"), None);
    };

    let n = eks_without_efa("1.48.0");
    n.file(CHRONY, CHRONY_CONF);
    let mut bytes = std::fs::read(served(&n, tarball)).unwrap();
    bytes.extend_from_slice(b"\0");
    std::fs::write(served(&n, tarball), bytes).unwrap();
    run(&n, "apply", 1)
        .expect_output("failed its signature check: gpgv found no valid signature")
        .expect_output("the installer was not run");
    not_run(&n);

    // The signature is good, but AWS's key is the trusted one (no env): another signer.
    let mut n = eks_without_efa("1.48.0");
    n.file(CHRONY, CHRONY_CONF);
    n.env("NVIDIA_EFA_KEY_FINGERPRINT", "");
    run(&n, "apply", 1).expect_output("not by the trusted key 4E9091BCBB97A96B26B15E59A05480B1DD2D3CCC");
    not_run(&n);

    let n = eks_without_efa("1.48.0");
    n.file(CHRONY, CHRONY_CONF);
    std::fs::write(served(&n, EFA_KEY_FILE), "<html>503 Service Unavailable</html>\n").unwrap();
    run(&n, "apply", 1).expect_output("is not an OpenPGP public key block");
    not_run(&n);

    let n = eks_without_efa("1.48.0");
    n.file(CHRONY, CHRONY_CONF);
    std::fs::remove_file(served(&n, &format!("{tarball}.sig"))).unwrap();
    run(&n, "apply", 1).expect_output(&format!(
        "cannot fetch https://efa-installer.amazonaws.com/{tarball}.sig"
    ));
    not_run(&n);
}

#[test]
fn a_failing_or_unknown_efa_installer_fails_apply_naming_it() {
    let mut n = eks_without_efa("1.48.0");
    n.env("NVIDIA_EFA", "1.99.0");
    run(&n, "apply", 1)
        .expect_output("cannot fetch https://efa-installer.amazonaws.com/aws-efa-installer-1.99.0.tar.gz");
    assert_eq!(scratch_dirs(&n), Vec::<String>::new(), "no leftovers");
    run(&n, "apply-check", 1).expect_output("EFA: the dpkg package efa is not installed");
    n.env("NVIDIA_EFA", "");
    std::fs::write(n.commands_dir().join("efa-installer-fails"), "").unwrap();
    run(&n, "apply", 1).expect_output("EFA: the installer 1.48.0 failed");
    assert_eq!(scratch_dirs(&n), Vec::<String>::new(), "no leftovers");
    std::fs::remove_file(n.commands_dir().join("efa-installer-fails")).unwrap();
    run(&n, "apply", 0);
}

#[test]
fn a_dpkg_left_half_done_is_finished_before_apt_runs_or_reported() {
    let n = eks();
    n.file(CHRONY, CHRONY_CONF);
    n.file(
        "/var/lib/dpkg/status",
        "Package: efa\nStatus: install ok half-configured\n",
    );
    run(&n, "apply", 0).expect_output("running dpkg --configure -a first");
    assert!(n.read("/var/lib/dpkg/status").unwrap().contains("ok installed"));

    let n = eks();
    n.file(CHRONY, CHRONY_CONF);
    n.file(
        "/var/lib/dpkg/status",
        "Package: efa\nStatus: install ok half-configured\n",
    );
    std::fs::write(n.commands_dir().join("dpkg-configure-fails"), "").unwrap();
    let before = n.snapshot();
    run(&n, "apply", 1).expect_output("efa (half-configured)");
    before.assert_same(&n.snapshot());
    assert!(!n.calls().iter().any(|c| c.contains(" install ")), "{:?}", n.calls());
}

#[test]
fn on_ec2_ufw_is_masked_cloud_init_waits_for_the_metadata_device_and_uninstall_gives_them_back() {
    let n = eks_ec2();
    n.file(CHRONY, CHRONY_CONF);
    let before = n.snapshot();
    run(&n, "apply", 0).expect_output("ufw.service stopped, disabled and masked");
    assert_eq!(
        std::fs::read_link(n.path("/etc/systemd/system/ufw.service")).unwrap(),
        std::path::Path::new("/dev/null"),
        "masked"
    );
    assert!(
        !n.exists("/etc/systemd/system/multi-user.target.wants/ufw.service"),
        "disabled"
    );
    assert!(!n.exists("/run/stand-in-units/ufw.pid"), "stopped");
    assert_eq!(
        n.read("/etc/cloud/cloud.cfg.d/99-dgxcloud.cfg").as_deref(),
        Some("datasource:\n  Ec2:\n    max_wait: 300\n    timeout: 30\n")
    );
    let drop_in = n
        .read("/etc/systemd/system/cloud-init-local.service.d/10-wait-for-net-device.conf")
        .unwrap();
    assert!(
        drop_in.contains("\nRequires=dev-ec2imds.device\nAfter=dev-ec2imds.device\n"),
        "{drop_in}"
    );
    let rule = n.read("/etc/udev/rules.d/10-ec2imds.rules").unwrap();
    assert!(rule.contains("DRIVERS==\"ena|vif\"") && rule.contains("ENV{SYSTEMD_ALIAS}+=\"/dev/ec2imds\""));
    // The inotify limits: instances raised to the floor, watches kept above it.
    assert_eq!(
        n.read("/proc/sys/fs/inotify/max_user_instances").as_deref(),
        Some("65535\n")
    );
    assert_eq!(
        n.read("/proc/sys/fs/inotify/max_user_watches").as_deref(),
        Some("1048576\n")
    );
    run(&n, "apply-check", 0);
    run(&n, "post-interrupt-check", 0);

    let applied = n.snapshot();
    n.clear_calls();
    run(&n, "apply", 0);
    applied.assert_same(&n.snapshot());
    assert_eq!(
        count(&n.calls(), "systemctl mask") + count(&n.calls(), "systemctl stop"),
        0
    );

    run(&n, "uninstall", 0).expect_output("ufw.service unmasked, enabled and started");
    run(&n, "uninstall-check", 0);
    before.assert_same(&n.snapshot());
}

#[test]
fn cloud_init_is_left_alone_off_ec2_and_an_unmasked_ufw_fails_the_check() {
    let n = eks_ec2();
    n.file(CHRONY, CHRONY_CONF);
    std::fs::remove_file(n.path("/sys/class/net/ens5/device/driver")).unwrap();
    std::os::unix::fs::symlink(
        "../../../../bus/pci/drivers/virtio_net",
        n.path("/sys/class/net/ens5/device/driver"),
    )
    .unwrap();
    run(&n, "apply", 0).expect_output("cloud-init: not an EC2 network device");
    assert!(!n.exists("/etc/cloud/cloud.cfg.d/99-dgxcloud.cfg"));
    assert!(!n.exists("/etc/systemd/system/cloud-init-local.service.d"));
    n.run_stand_in("systemctl", &["unmask", "ufw.service"]).expect_code(0);
    run(&n, "apply-check", 1).expect_output("ufw.service is not masked");
}

// SPDX-License-Identifier: Apache-2.0
//! nvidia-setup in a Debian root: the README's kernel entry (pinned) with the
//! root's own apt-get, dpkg, apt-mark, update-grub, grub-set-default and
//! grub-editenv. The kernel packages come from a local repository the test builds
//! (`dpkg-deb` on this machine; `Architecture: all`, a `/boot/vmlinuz-<release>`
//! and a headers tree each), so apt resolves, installs and holds them as it would
//! Ubuntu's. The running kernel is the file `/proc/sys/kernel/osrelease` inside the
//! root; a reboot is that file rewritten.
//!
//! The EKS full entry runs there too, with the root's own apt, chrony package
//! (Debian's `chrony.conf` and its `pool` line), ldconfig and systemctl (which a
//! chroot answers without restarting anything); EFA is the local repository's
//! stand-in `efa` package and a `dkms` script answering for its module. An `efa`
//! whose postinst fails leaves dpkg half-configured: the EKS steps stop before any
//! change, naming it, and a later apply finishes it with the real `dpkg --configure -a`.
//!
//! bcm's headers link is made over a headers package the root's own dpkg installed.
//!
//! The arm64 runs (the kernel entry with the `-64k` flavour, the EKS steps and bcm
//! on a GB200 by its label) are `.ci/run chroot_arm64`'s, as every arm64 run of the
//! tier.
//!
//! What it proves with the real tools: the menu path read from the grub.cfg that
//! Debian's own `update-grub` generated is one GRUB's `grub-set-default` saves
//! (`grub-editenv list`), `GRUB_DEFAULT=saved` reaches grub.cfg, the holds are apt's,
//! a rerun changes nothing, and uninstall gives the node back (the kernel stays).

use std::fs;
use std::process::Command;

use skyhook_pkg_support::grub_probe::ROOT_UUID;

use crate::debian::must;
use crate::{APT_FOOTPRINT, Arch, BOOKKEEPING, Node, readme};

/// The kernel of the eks combinations (the arm64 one gets `-64k`).
const KERNEL: &str = "6.17.0-1019-aws";
/// chrony's configuration.
const CHRONY: &str = "/etc/chrony/chrony.conf";
/// The time source the EKS steps configure.
const SERVER: &str = "server 169.254.169.123 prefer iburst minpoll 4 maxpoll 4\n";
/// Where the root finds the local repository.
const REPO: &str = "/srv/nvidia-setup-kernels";

#[test]
#[ignore = "chroot tier: root and the Debian mirror, minutes; .ci/run chroot, or cargo test -p skyhook-pkg --test chroot -- --ignored"]
fn nvidia_setup_installs_the_kernel_entry_with_the_real_apt_and_grub() {
    kernel_entry_on(Arch::Native, "NVIDIA-H100-80GB-HBM3", KERNEL);
}

/// The arm64 run (GRUB EFI, the `-64k` flavour) costs minutes of emulated CPU that
/// the cold CI run cannot spare. Natively, the package tests run the arm64 choice of
/// flavour and the aarch64 step runs them as arm64 binaries.
#[test]
#[ignore = "chroot tier, an arm64 run: .ci/run chroot_arm64 (the chroot step runs x86_64 only, for CI's time)"]
fn nvidia_setup_installs_the_kernel_entry_with_the_real_apt_and_grub_arm64() {
    kernel_entry_on(Arch::Arm64, "NVIDIA-GB200", &format!("{KERNEL}-64k"));
}

/// The four kernel packages of `release`: each package's name and the one file it holds.
fn kernel_packages(release: &str) -> Vec<(String, String)> {
    [
        ("linux-image", format!("boot/vmlinuz-{release}")),
        ("linux-headers", format!("usr/src/linux-headers-{release}/.config")),
        ("linux-modules", format!("lib/modules/{release}/modules.order")),
        ("linux-modules-extra", format!("lib/modules/{release}/extra.order")),
    ]
    .into_iter()
    .map(|(name, path)| (format!("{name}-{release}"), path))
    .collect()
}

/// Builds `packages` (name, the one file it holds) into the node's local
/// repository, with its index (`Packages`: the control fields, `Filename`, `Size`,
/// `SHA256`, as dpkg-scanpackages writes them); a package named in `postinsts` gets
/// that maintainer script.
fn repository(node: &Node, packages: &[(String, String)], postinsts: &[(&str, &str)]) {
    let work = tempfile::tempdir().unwrap();
    let repo = node.path(REPO);
    fs::create_dir_all(&repo).unwrap();
    let mut index = String::new();
    for (package, path) in packages {
        let dir = work.path().join(package);
        let file = dir.join(path);
        fs::create_dir_all(file.parent().unwrap()).unwrap();
        fs::write(&file, "a stand-in file of the chroot tier's kernel packages\n").unwrap();
        fs::create_dir_all(dir.join("DEBIAN")).unwrap();
        let control = format!(
            "Package: {package}\nVersion: 6.17.0-1019.19\nArchitecture: all\nMaintainer: skyhook-pkg tests \
             <tests@localhost>\nDescription: stand-in kernel package of the chroot tier\n"
        );
        fs::write(dir.join("DEBIAN/control"), &control).unwrap();
        if let Some((_, script)) = postinsts.iter().find(|(name, _)| name == package) {
            let postinst = dir.join("DEBIAN/postinst");
            fs::write(&postinst, script).unwrap();
            fs::set_permissions(&postinst, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        }
        let deb = repo.join(format!("{package}.deb"));
        must(
            Command::new("dpkg-deb")
                .args(["--build", "--root-owner-group"])
                .arg(&dir)
                .arg(&deb),
            "dpkg-deb --build",
        );
        let sha256 = must(Command::new("sha256sum").arg(&deb), "sha256sum");
        let size = fs::metadata(&deb).unwrap().len();
        index.push_str(&format!(
            "{control}Filename: ./{package}.deb\nSize: {size}\nSHA256: {}\n\n",
            sha256.split_whitespace().next().unwrap()
        ));
    }
    fs::write(repo.join("Packages"), index).unwrap();
    node.write(
        "/etc/apt/sources.list.d/nvidia-setup-kernels.list",
        &format!("deb [trusted=yes] file:{REPO} ./\n"),
    );
}

fn kernel_entry_on(arch: Arch, product: &str, target: &str) {
    let ex = readme::of("nvidia-setup")
        .into_iter()
        .find(|e| e.name == "nvidia-setup-kernel")
        .expect("nvidia-setup/README.md has the kernel entry");
    let node = Node::fresh_of(arch);
    node.install_grub();
    repository(&node, &kernel_packages(target), &[]);
    let running = format!("6.1.0-chroot-{}", arch.debian());
    node.write("/proc/sys/kernel/osrelease", &format!("{running}\n"));
    let mut args: Vec<String> = ex.args();
    args.extend(["--label".into(), format!("nvidia.com/gpu.product={product}")]);
    args.extend(["--env".into(), "NVIDIA_PIN_KERNEL=true".into()]);
    let run = |modes: &[&str]| {
        let mut all: Vec<&str> = modes.to_vec();
        all.extend(args.iter().map(String::as_str));
        node.run("nvidia-setup", &all)
    };
    let mut ignore: Vec<&str> = BOOKKEEPING.iter().chain(APT_FOOTPRINT).copied().collect();
    ignore.extend(["srv", "etc/apt/sources.list.d", "proc"]);
    // What stays after uninstall: the kernel (lib is /usr/lib in a merged-/usr root),
    // and the grub.cfg uninstall's update-grub regenerates with it still installed.
    let kernel = [
        format!("boot/vmlinuz-{target}"),
        format!("usr/src/linux-headers-{target}"),
        "usr/lib/modules".to_string(),
        "boot/grub/grub.cfg".to_string(),
    ];
    let stays: Vec<&str> = ignore
        .iter()
        .copied()
        .chain(kernel.iter().map(String::as_str))
        .collect();
    let before = node.snapshot(&stays);

    run(&["apply"])
        .expect_ok()
        .expect_output("interrupt needed: {type: reboot}");
    let env = node.sh("grub-editenv /boot/grub/grubenv list");
    let entry = format!("gnulinux-advanced-{ROOT_UUID}>gnulinux-{target}-advanced-{ROOT_UUID}");
    assert!(env.contains(&format!("saved_entry={entry}")), "{env}");
    let cfg = node.read("/boot/grub/grub.cfg").unwrap();
    assert!(
        cfg.contains("set default=\"${saved_entry}\""),
        "update-grub read GRUB_DEFAULT=saved"
    );
    assert!(
        cfg.contains(&format!("'gnulinux-{target}-advanced-{ROOT_UUID}'")),
        "{cfg}"
    );
    let held = node.sh("apt-mark showhold");
    assert_eq!(held.lines().count(), 4, "{held}");
    assert!(
        node.read("/etc/apt/preferences.d/pin-kernel")
            .unwrap()
            .contains("Pin: version 6.17.0-1019.19")
    );
    // apt itself reads the pin: the installed version at priority 1001.
    let policy = node.sh(&format!("apt-cache policy linux-image-{target}"));
    assert!(policy.contains("1001"), "{policy}");

    run(&["post-interrupt-check"]).expect_failure().expect_output(&running);
    node.write("/proc/sys/kernel/osrelease", &format!("{target}\n"));
    run(&["post-interrupt-check"]).expect_ok();
    node.write("/proc/sys/kernel/osrelease", &format!("{running}\n"));

    let applied = node.snapshot(&ignore);
    run(&["apply"]).expect_ok();
    applied.assert_same(&node.snapshot(&ignore));

    run(&["uninstall"]).expect_ok();
    assert_eq!(node.sh("apt-mark showhold"), "");
    assert!(
        node.sh(&format!("dpkg-query -W -f '${{Status}}' linux-image-{target}"))
            .contains("installed")
    );
    before.assert_same(&node.snapshot(&stays));
    let cfg = node.read("/boot/grub/grub.cfg").unwrap();
    assert!(
        !cfg.contains("set default=\"${saved_entry}\""),
        "GRUB_DEFAULT=0 again:\n{cfg}"
    );
}

#[test]
#[ignore = "chroot tier: root and the Debian mirror, minutes; .ci/run chroot, or cargo test -p skyhook-pkg --test chroot -- --ignored"]
fn nvidia_setup_runs_the_eks_steps_with_the_real_apt_and_chrony() {
    eks_steps_on(Arch::Native);
}

/// eks-gb200 on an arm64 root: the `-64k` kernel running, the same steps.
#[test]
#[ignore = "chroot tier, an arm64 run: .ci/run chroot_arm64 (the chroot step runs x86_64 only, for CI's time)"]
fn nvidia_setup_runs_the_eks_steps_with_the_real_apt_and_chrony_arm64() {
    eks_steps_on(Arch::Arm64);
}

fn eks_steps_on(arch: Arch) {
    let node = eks_node(arch, &[]);
    let original = node.read(CHRONY).expect("Debian's chrony.conf");
    assert!(original.lines().any(|l| l.starts_with("pool ")), "{original}");
    let run = |modes: &[&str]| run_full_entry(&node, modes);
    let ignore: Vec<&str> = BOOKKEEPING.iter().chain(APT_FOOTPRINT).copied().collect();
    let before = node.snapshot(&ignore);

    run(&["apply"]).expect_ok().expect_output("the EKS steps are done");
    let chrony = node.read(CHRONY).unwrap();
    assert!(!chrony.lines().any(|l| l.starts_with("pool ")), "{chrony}");
    assert_eq!(chrony.matches(SERVER).count(), 1, "{chrony}");
    assert_eq!(
        node.read("/etc/ld.so.conf.d/000_ofi_aws.conf").as_deref(),
        Some("/opt/amazon/ofi-nccl/lib\n")
    );
    let profile = node.sh(". /etc/profile.d/ofi-aws.sh; echo \"$PATH\"");
    assert!(profile.trim_end().ends_with(":/opt/amazon/ofi-nccl/bin"), "{profile}");

    let applied = node.snapshot(&ignore);
    run(&["apply"]).expect_ok();
    applied.assert_same(&node.snapshot(&ignore));

    run(&["uninstall"]).expect_ok();
    assert_eq!(node.read(CHRONY).as_deref(), Some(original.as_str()));
    before.assert_same(&node.snapshot(&ignore));
}

/// The local repository's stand-in `efa` package: the OFI plugin's library directory.
fn efa_package() -> (String, String) {
    ("efa".to_string(), "opt/amazon/ofi-nccl/lib/.keep".to_string())
}

/// A node of `arch` for the EKS steps: the tools they install and the local
/// repository's `efa` (with `postinsts`, which may fail its install: then dpkg is
/// left as it says), a `dkms` answering for its module, the eks kernel of `arch`
/// running, the inotify limits of an older kernel (the fake `/proc/sys`), nothing
/// mounted.
fn eks_node(arch: Arch, postinsts: &[(&str, &str)]) -> Node {
    let node = Node::fresh_of(arch);
    repository(&node, &[efa_package()], postinsts);
    node.write(
        "/usr/sbin/dkms",
        "#!/bin/sh\n# The chroot tier's stand-in: the efa module built.\n[ \"$1 $2\" = \"status efa\" ] && echo 'efa/3.0.0, 6.17.0-1019-aws, x86_64: installed'\nexit 0\n",
    );
    node.chmod("/usr/sbin/dkms", 0o755);
    node.sh("export DEBIAN_FRONTEND=noninteractive; apt-get update -q >/dev/null \
         && apt-get install -y -q --no-install-recommends curl git wget gpg chrony >/dev/null 2>&1; \
         apt-get install -y -q efa >/dev/null 2>&1; true");
    node.write("/proc/sys/kernel/osrelease", &format!("{}\n", eks_kernel(arch)));
    node.write("/proc/sys/fs/inotify/max_user_instances", "128\n");
    node.write("/proc/sys/fs/inotify/max_user_watches", "8192\n");
    node.write(
        "/proc/1/mountinfo",
        "22 1 253:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw\n",
    );
    node
}

/// The eks combinations' kernel on `arch` (the 64k-page flavour on arm64).
fn eks_kernel(arch: Arch) -> String {
    match arch {
        Arch::Native => KERNEL.to_string(),
        Arch::Arm64 => format!("{KERNEL}-64k"),
    }
}

/// The accelerator's GFD product label on `arch`.
fn product(arch: Arch) -> &'static str {
    match arch {
        Arch::Native => "nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3",
        Arch::Arm64 => "nvidia.com/gpu.product=NVIDIA-GB200",
    }
}

/// The README's EKS full entry's `modes` on `node`, an H100 (arm64: a GB200) by its
/// label.
fn run_full_entry(node: &Node, modes: &[&str]) -> crate::Outcome {
    let ex = readme::of("nvidia-setup")
        .into_iter()
        .find(|e| e.name == "nvidia-setup-full")
        .expect("nvidia-setup/README.md has the full entry");
    node.run_example("nvidia-setup", &ex, modes, &["--label", product(node.arch)])
}

/// An `efa` package whose postinst failed (as the AWS installer's DKMS build can)
/// leaves dpkg unfinished: the EKS steps stop before any change, naming the package
/// and `dpkg --configure -a`, and the node stays as it was; once the postinst can
/// succeed, the next apply finishes dpkg with the real `dpkg --configure -a` and goes
/// on. Nothing is ever installed over a half-configured package.
#[test]
#[ignore = "chroot tier: root and the Debian mirror, minutes; .ci/run chroot, or cargo test -p skyhook-pkg --test chroot -- --ignored"]
fn nvidia_setup_stops_at_a_half_configured_efa_and_finishes_it_on_a_later_apply() {
    let postinst = "#!/bin/sh\n# fails until the test says otherwise, as a DKMS build can\n\
                    [ -e /etc/efa-postinst-succeeds ] && exit 0\necho 'efa: module build failed' >&2\nexit 1\n";
    let node = eks_node(Arch::Native, &[("efa", postinst)]);
    let status = || node.sh("dpkg-query -W -f '${Status}' efa").trim().to_string();
    assert_eq!(
        status(),
        "install ok half-configured",
        "the stand-in's postinst did not fail"
    );
    let run = |modes: &[&str]| run_full_entry(&node, modes);
    let ignore: Vec<&str> = BOOKKEEPING.iter().chain(APT_FOOTPRINT).copied().collect();
    let before = node.snapshot(&ignore);

    run(&["apply"])
        .expect_failure()
        .expect_output("efa (half-configured)")
        .expect_output("dpkg --configure -a");
    before.assert_same(&node.snapshot(&ignore));
    assert_eq!(status(), "install ok half-configured");

    node.write("/etc/efa-postinst-succeeds", "");
    run(&["apply"]).expect_ok().expect_output("the EKS steps are done");
    assert_eq!(status(), "install ok installed");
    assert_eq!(node.read(CHRONY).unwrap().matches(SERVER).count(), 1);
}

/// bcm-h100: the running kernel's headers link over headers the root's own dpkg installed.
#[test]
#[ignore = "chroot tier: root and the Debian mirror, minutes; .ci/run chroot, or cargo test -p skyhook-pkg --test chroot -- --ignored"]
fn nvidia_setup_links_the_running_kernels_headers_on_bcm() {
    bcm_on(Arch::Native);
}

/// bcm-gb200 on an arm64 root, its `-64k` kernel running.
#[test]
#[ignore = "chroot tier, an arm64 run: .ci/run chroot_arm64 (the chroot step runs x86_64 only, for CI's time)"]
fn nvidia_setup_links_the_running_kernels_headers_on_bcm_arm64() {
    bcm_on(Arch::Arm64);
}

/// The headers package of the running kernel installed with the real `dpkg -i` from
/// the local repository; `accelerator: auto` picks the combination from the label;
/// apply makes `/usr/src/linux-<release>` → `linux-headers-<release>` (the `.config`
/// readable through it), a rerun changes nothing, uninstall gives the root back.
fn bcm_on(arch: Arch) {
    let node = Node::fresh_of(arch);
    let release = eks_kernel(arch).replace("-aws", "-nvidia");
    let headers = format!("linux-headers-{release}");
    repository(&node, &[(headers.clone(), format!("usr/src/{headers}/.config"))], &[]);
    node.sh(&format!("dpkg -i {REPO}/{headers}.deb >/dev/null"));
    node.write("/proc/sys/kernel/osrelease", &format!("{release}\n"));
    let run = |mode: &str| {
        node.run(
            "nvidia-setup",
            &[
                mode,
                "--configmap",
                "service=bcm",
                "--configmap",
                "accelerator=auto",
                "--label",
                product(arch),
            ],
        )
    };
    let before = node.snapshot(BOOKKEEPING);

    run("apply").expect_ok();
    let link = format!("/usr/src/linux-{release}");
    assert_eq!(node.sh(&format!("readlink {link}")).trim(), headers);
    assert!(node.sh(&format!("cat {link}/.config")).contains("stand-in"));
    run("post-interrupt-check").expect_ok();

    let applied = node.snapshot(BOOKKEEPING);
    run("apply").expect_ok();
    applied.assert_same(&node.snapshot(BOOKKEEPING));

    run("uninstall").expect_ok();
    before.assert_same(&node.snapshot(BOOKKEEPING));
}

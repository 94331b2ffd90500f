// SPDX-License-Identifier: Apache-2.0
//! The simulated node of the nvidia-setup tests: Ubuntu 24.04 on x86_64 running
//! [`RUNNING`], GRUB's defaults, its tools ([`skyhook_testkit::boot_tools`]: the
//! update-grub that lists every `/boot/vmlinuz-*`, grub-set-default, grub-editenv),
//! apt with the kernel packages of [`TARGET`] (and its arm64 `-64k` flavour) on
//! offer, and the stand-ins [`APT_MARK`] and [`DPKG`].
#![allow(dead_code)]

pub mod disks;

pub use skyhook_testkit::{DistPackage, Manager, Node, Run};

use skyhook_testkit::boot_tools::{GRUB_EDITENV, GRUB_SET_DEFAULT, UPDATE_GRUB};

/// The kernel the node runs.
pub const RUNNING: &str = "6.8.0-1021-aws";
/// The kernel of the eks combinations (x86_64).
pub const TARGET: &str = "6.17.0-1019-aws";
/// Its arm64 flavour.
pub const TARGET_64K: &str = "6.17.0-1019-aws-64k";
/// The Debian version the stand-in repository offers for [`TARGET`]'s packages.
pub const VERSION: &str = "6.17.0-1019.19~24.04.1";
/// GRUB's defaults file as the node has it.
pub const GRUB_DEFAULTS: &str = "# If you change this file, run 'update-grub'.\nGRUB_DEFAULT=0\nGRUB_TIMEOUT=5\n\
                                 GRUB_CMDLINE_LINUX_DEFAULT=\"console=ttyS0\"\nGRUB_CMDLINE_LINUX=\"\"\n";
/// The menu path of [`TARGET`] in the generated configuration.
pub const TARGET_ENTRY: &str = "gnulinux-advanced-0b1c>gnulinux-6.17.0-1019-aws-advanced-0b1c";
/// The pin file.
pub const PIN: &str = "/etc/apt/preferences.d/pin-kernel";

/// A stand-in for `apt-mark` (apt 2.7.14, `cmdline/apt-mark.cc`) as far as holds
/// go: `hold P…` marks each installed package (`P set on hold.`; an unknown one is
/// `E: Unable to locate package P`, exit 100, nothing marked), `unhold P…`
/// (`Canceled hold on P.`), `showhold` lists the held packages sorted. The holds
/// live beside the package database of the apt stand-in.
pub const APT_MARK: &str = r#"D=$(dirname "$0"); H="$D/held"; touch "$H"
verb=$1; shift
case "$verb" in
hold)
    for p; do [ -f "$D/pkgs/$p" ] || { echo "E: Unable to locate package $p" >&2; exit 100; }; done
    for p; do if grep -qx "$p" "$H"; then echo "$p was already set on hold."; else echo "$p" >> "$H"; echo "$p set on hold."; fi; done ;;
unhold)
    for p; do if grep -qx "$p" "$H"; then grep -vx "$p" "$H" > "$H.new"; mv "$H.new" "$H"; echo "Canceled hold on $p."; else echo "$p was already not on hold."; fi; done ;;
showhold) sort "$H" ;;
*) echo "unexpected: apt-mark $verb $*" >&2; exit 1 ;;
esac"#;

/// A stand-in for `dpkg --configure -a` (dpkg 1.22, `src/main/packages.c`): every
/// package of `/var/lib/dpkg/status` left `half-configured`, `unpacked`,
/// `half-installed` or awaiting triggers becomes `installed`, and the journal under
/// `updates/` is folded in (removed). With `dpkg-configure-fails` beside it, it
/// fails as a broken postinst does (exit 1), changing nothing.
pub const DPKG: &str = r#"D=$(dirname "$0"); S="$SKYHOOK_HOST_ROOT/var/lib/dpkg"
[ "$1 $2" = "--configure -a" ] || { echo "unexpected: dpkg $*" >&2; exit 2; }
if [ -f "$D/dpkg-configure-fails" ]; then
    echo "dpkg: error processing package efa (--configure):" >&2
    echo " installed efa package post-installation script subprocess returned error exit status 1" >&2; exit 1
fi
sed -E 's/^Status: (install|deinstall|hold) ok (half-installed|unpacked|half-configured|triggers-awaited|triggers-pending)$/Status: \1 ok installed/' "$S/status" > "$S/status.new" && mv "$S/status.new" "$S/status"
rm -f "$S"/updates/[0-9]*"#;

/// The four kernel packages of `release`, as Ubuntu's archive has them: the image
/// puts `/boot/vmlinuz-<release>` in place, the headers `/usr/src/linux-headers-<release>/.config`.
pub fn kernel_packages(release: &str) -> Vec<DistPackage> {
    vec![
        DistPackage::new(&format!("linux-image-{release}"), VERSION)
            .on_install(&format!("mkdir -p \"$R/boot\" && echo kernel > \"$R/boot/vmlinuz-{release}\""))
            .on_remove(&format!("rm -f \"$R/boot/vmlinuz-{release}\"")),
        DistPackage::new(&format!("linux-headers-{release}"), VERSION).on_install(&format!(
            "mkdir -p \"$R/usr/src/linux-headers-{release}\" && echo CONFIG_X=y > \"$R/usr/src/linux-headers-{release}/.config\""
        )),
        DistPackage::new(&format!("linux-modules-{release}"), VERSION),
        DistPackage::new(&format!("linux-modules-extra-{release}"), VERSION),
    ]
}

/// An Ubuntu 24.04 x86_64 node running [`RUNNING`], the eks-h100 configMap, and
/// the kernel entry's environment (`NVIDIA_SETUP_INSTALL_KERNEL=true`).
pub fn node() -> Node {
    let mut catalog = kernel_packages(TARGET);
    catalog.extend(kernel_packages(TARGET_64K));
    catalog.extend(kernel_packages("6.18.0-1001-aws"));
    let mut n = Node::new(env!("CARGO_BIN_EXE_nvidia-setup"));
    n.file("/etc/os-release", "ID=ubuntu\nVERSION_ID=\"24.04\"\nID_LIKE=debian\n")
        .file("/proc/sys/kernel/arch", "x86_64\n")
        .file("/proc/sys/kernel/osrelease", format!("{RUNNING}\n"))
        .file("/proc/sys/fs/inotify/max_user_instances", "128\n")
        .file("/proc/sys/fs/inotify/max_user_watches", "1048576\n")
        .file(&format!("/boot/vmlinuz-{RUNNING}"), "kernel")
        .file("/etc/default/grub", GRUB_DEFAULTS)
        .package_manager(Manager::Apt, &catalog)
        .stand_in("update-grub", UPDATE_GRUB)
        .stand_in("grub-set-default", GRUB_SET_DEFAULT)
        .stand_in("grub-editenv", GRUB_EDITENV)
        .stand_in("apt-mark", APT_MARK)
        .stand_in("dpkg", DPKG);
    n.run_stand_in("update-grub", &[]).expect_code(0);
    n.configmap("service", "eks").configmap("accelerator", "h100");
    n.env("NVIDIA_SETUP_INSTALL_KERNEL", "true");
    n
}

/// The node after a reboot into `release`.
pub fn reboot_into(n: &Node, release: &str) {
    n.file("/proc/sys/kernel/osrelease", format!("{release}\n"));
}

/// GRUB's saved entry on the node.
pub fn saved_entry(n: &Node) -> Option<String> {
    n.read("/boot/grub/grubenv")?
        .lines()
        .find_map(|l| l.strip_prefix("saved_entry=").map(str::to_string))
}

/// The packages held on the node.
pub fn held(n: &Node) -> String {
    n.run_stand_in("apt-mark", &["showhold"]).output()
}

/// Runs `mode`, requires `code`, returns the run.
pub fn run(n: &Node, mode: &str, code: i32) -> Run {
    let r = n.run(mode);
    r.expect_code(code);
    r
}

/// The apt-get calls the node saw.
pub fn apt_calls(n: &Node) -> Vec<String> {
    n.calls().into_iter().filter(|c| c.starts_with("apt-get")).collect()
}

/// A `systemctl` stand-in (systemd v255 `src/systemctl/`), as far as the package
/// uses it: `show -p MainPID` (skyhook_testkit::systemctl_show_main_pid);
/// `enable U` links `U` (in `/etc/systemd/system`, else `/usr/lib/systemd/system`)
/// into the `.wants` directory of its `WantedBy=` target
/// (a unit file without one, or a missing one, fails), `disable U` removes those
/// links, `is-enabled U` answers `enabled` (exit 0) while a link exists, else
/// `disabled` (exit 1); `is-active U` is `active` while the unit has a main process
/// (skyhook_testkit::systemd::run_unit), else `inactive` (exit 3); every other verb
/// `mask U` links `U` in `/etc/systemd/system` to `/dev/null` (`is-enabled` then
/// says `masked`, exit 1), `unmask U` removes that link; `stop U` takes the main
/// process away (kept aside), `start U` brings it back and fails for a masked unit
/// (exit 1, "Unit U is masked."); every other verb
/// (`daemon-reload`, `restart`, …) a logged success.
pub const SYSTEMCTL: &str = concat!(
    "R=\"$SKYHOOK_HOST_ROOT\"; S=\"$R/etc/systemd/system\"\ncase \"$1\" in\n",
    skyhook_testkit::systemctl_show_main_pid!(),
    r#"  enable) f="$S/$2"; [ -f "$f" ] || f="$R/usr/lib/systemd/system/$2"; w=$(sed -n 's/^WantedBy=//p' "$f" 2>/dev/null)
    [ -n "$w" ] || { echo "Failed to enable unit: Unit file $2 does not exist." >&2; exit 1; }
    mkdir -p "$S/$w.wants" && ln -sfn "${f#"$R"}" "$S/$w.wants/$2" ;;
  disable) rm -f "$S"/*.wants/"$2" ;;
  is-enabled) [ "$(readlink "$S/$2")" = /dev/null ] && { echo masked; exit 1; }
    for l in "$S"/*.wants/"$2"; do [ -L "$l" ] && { echo enabled; exit 0; }; done; echo disabled; exit 1 ;;
  is-active) [ -f "$R/run/stand-in-units/${2%.service}.pid" ] && { echo active; exit 0; }; echo inactive; exit 3 ;;
  mask) ln -sfn /dev/null "$S/$2" ;;
  unmask) [ "$(readlink "$S/$2")" != /dev/null ] || rm -f "$S/$2" ;;
  stop) P="$R/run/stand-in-units/${2%.service}.pid"; [ ! -f "$P" ] || mv "$P" "$(dirname "$0")/stopped-$2" ;;
  start) [ "$(readlink "$S/$2")" != /dev/null ] || { echo "Failed to start $2: Unit $2 is masked." >&2; exit 1; }
    P="$(dirname "$0")/stopped-$2"; [ ! -f "$P" ] || mv "$P" "$R/run/stand-in-units/${2%.service}.pid" ;;
"#,
    "  *) : ;;\nesac\n"
);

/// The drop-in directories of containerd and kubelet the engine writes.
pub const DROP_INS: [&str; 2] = [
    "/etc/systemd/system/containerd.service.d/zz-skyhook-nvidia-setup-tuning.conf",
    "/etc/systemd/system/kubelet.service.d/zz-skyhook-nvidia-setup-tuning.conf",
];

/// An Azure (AKS) Ubuntu 24.04 H100 node: the aks-h100 configMap, the InfiniBand
/// modules in its kernel, PAM's session stacks, containerd and kubelet running with
/// the stock 8 MiB locked-memory limit.
pub fn aks() -> Node {
    let mut n = Node::new(env!("CARGO_BIN_EXE_nvidia-setup"));
    n.file("/etc/os-release", "ID=ubuntu\nVERSION_ID=\"24.04\"\nID_LIKE=debian\n")
        .file("/proc/sys/kernel/arch", "x86_64\n")
        .file("/proc/sys/kernel/osrelease", "6.8.0-1041-azure\n")
        .file("/etc/pam.d/common-session", "session required pam_unix.so\n")
        .file(
            "/etc/pam.d/common-session-noninteractive",
            "session required pam_unix.so\n",
        )
        .file(
            "/etc/modules-load.d/modules.conf",
            "# /etc/modules: kernel modules to load at boot time.\n",
        )
        .file("/var/lib/dpkg/status", "")
        .systemd_running(true)
        .stand_in("systemctl", SYSTEMCTL);
    skyhook_testkit::kmod::install_modprobe(&n, &["ib_umad", "rdma_ucm", "mlx5_ib"]);
    skyhook_testkit::kmod::loaded(&n, &[]);
    start(&n, 4100, false);
    n.configmap("service", "aks").configmap("accelerator", "h100");
    n.clear_env();
    n
}

/// (Re)starts containerd and kubelet as processes `pid` and `pid + 1`, with
/// unlimited locked memory when `unlimited` (as after the restart the interrupt
/// does), else the stock 8 MiB.
pub fn start(n: &Node, pid: u32, unlimited: bool) {
    for (unit, pid) in [("containerd.service", pid), ("kubelet.service", pid + 1)] {
        skyhook_testkit::systemd::run_unit(n, unit, pid, skyhook_testkit::systemd::DEFAULT_STACK);
        if unlimited {
            let path = format!("/proc/{pid}/limits");
            let limits: String = n
                .read(&path)
                .unwrap()
                .lines()
                .map(|l| match l.starts_with("Max locked memory") {
                    true => format!(
                        "{:<25} {:<20} {:<20} {:<10}\n",
                        "Max locked memory", "unlimited", "unlimited", "bytes"
                    ),
                    false => format!("{l}\n"),
                })
                .collect();
            n.file(&path, limits);
        }
    }
}

/// A stand-in for `dkms status <module>` (dkms 3.0.11, `dkms status`): one line per
/// built module, `<module>/<version>, <kernel>, <arch>: installed`, read from
/// `dkms-<module>` beside it; nothing (exit 0) for a module DKMS does not know.
pub const DKMS: &str = r#"D=$(dirname "$0")
[ "$1" = status ] || { echo "unexpected: dkms $*" >&2; exit 1; }
cat "$D/dkms-$2" 2>/dev/null; exit 0"#;

/// What `dkms status efa` prints on a node where EFA 1.48.0 built its module.
pub const EFA_DKMS: &str = "efa/3.0.0, 6.17.0-1019-aws, x86_64: installed\n";

/// Ubuntu 24.04's chrony.conf, abridged to the lines the step looks at.
pub const CHRONY_CONF: &str = "# Welcome to the chrony configuration file.\n\
pool ntp.ubuntu.com        iburst maxsources 4\n\
pool 0.ubuntu.pool.ntp.org iburst maxsources 1\n\
keyfile /etc/chrony/chrony.keys\n\
driftfile /var/lib/chrony/chrony.drift\n";

/// The packages of the EKS steps, as the archive offers them.
pub fn eks_packages() -> Vec<DistPackage> {
    let mut p: Vec<DistPackage> = ["curl", "git", "wget", "gpg"]
        .iter()
        .map(|n| DistPackage::new(n, "1.0-1"))
        .collect();
    p.push(DistPackage::new("chrony", "4.5-1ubuntu4").on_install(&format!(
        "[ -f \"$R/etc/chrony/chrony.conf\" ] || {{ mkdir -p \"$R/etc/chrony\" && printf '%s' '{CHRONY_CONF}' > \"$R/etc/chrony/chrony.conf\"; }}"
    )));
    p.push(DistPackage::new("efa", "3.0.0-1"));
    p.push(DistPackage::new("mdadm", "4.3-1ubuntu2"));
    p.push(DistPackage::new("xfsprogs", "6.6.0-1ubuntu2"));
    p.push(DistPackage::new("containerd", "1.7.28-0ubuntu1"));
    p
}

/// An EKS H100 node running the combination's kernel, EFA installed (package,
/// DKMS module, the OFI plugin's prefix), the tools and chrony installed, no
/// instance storage: the full entry's node (`NVIDIA_SETUP_INSTALL_KERNEL` unset).
pub fn eks() -> Node {
    let mut n = node();
    n.clear_env();
    reboot_into(&n, TARGET);
    let mut catalog = kernel_packages(TARGET);
    catalog.extend(eks_packages());
    n.package_manager(Manager::Apt, &catalog);
    for p in ["curl", "git", "wget", "gpg", "chrony", "efa"] {
        n.preinstall_package(p);
    }
    std::fs::create_dir_all(n.path("/opt/amazon/ofi-nccl/lib")).unwrap();
    std::fs::create_dir_all(n.path("/etc/profile.d")).unwrap();
    std::fs::create_dir_all(n.path("/etc/ld.so.conf.d")).unwrap();
    std::fs::create_dir_all(n.path("/var/lib")).unwrap();
    n.file(
        "/proc/1/mountinfo",
        "22 1 253:1 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p1 rw\n",
    )
    .systemd_running(true)
    .stand_in("systemctl", SYSTEMCTL)
    .stand_in("dkms", DKMS)
    .stand_in("ldconfig", "exit 0");
    std::fs::write(n.commands_dir().join("dkms-efa"), EFA_DKMS).unwrap();
    n.clear_calls();
    n
}

/// Ubuntu 24.04's `ufw.service`, abridged.
pub const UFW_UNIT: &str = "[Unit]\nDescription=Uncomplicated firewall\n\n[Service]\nType=oneshot\n\
                            RemainAfterExit=yes\nExecStart=/lib/ufw/ufw-init start quiet\n\n[Install]\n\
                            WantedBy=multi-user.target\n";

/// An EKS node on EC2 ([`eks`]): an ENA network device (`ens5`), cloud-init
/// installed, and Ubuntu's ufw enabled and running.
pub fn eks_ec2() -> Node {
    let n = eks();
    n.file("/usr/lib/systemd/system/ufw.service", UFW_UNIT)
        .file("/etc/cloud/cloud.cfg.d/90_dpkg.cfg", "datasource_list: [ Ec2, None ]\n");
    std::fs::create_dir_all(n.path("/etc/systemd/system/multi-user.target.wants")).unwrap();
    std::os::unix::fs::symlink(
        "/usr/lib/systemd/system/ufw.service",
        n.path("/etc/systemd/system/multi-user.target.wants/ufw.service"),
    )
    .unwrap();
    skyhook_testkit::systemd::run_unit(&n, "ufw", 731, skyhook_testkit::systemd::DEFAULT_STACK);
    std::fs::create_dir_all(n.path("/sys/class/net/ens5/device")).unwrap();
    std::fs::create_dir_all(n.path("/sys/class/net/lo")).unwrap();
    std::os::unix::fs::symlink(
        "../../../../bus/pci/drivers/ena",
        n.path("/sys/class/net/ens5/device/driver"),
    )
    .unwrap();
    n.clear_calls();
    n
}

/// A stand-in for `curl -sSfL [--retry N] -o FILE URL` (curl 8.5, `-f`: an HTTP
/// error is exit 22 with `curl: (22) The requested URL returned error: 404`,
/// nothing written): the URLs it can fetch are files of `served/` beside it named
/// by the URL's last part (`aws-efa-installer-1.48.0.tar.gz`), written to `FILE`
/// under the host root.
pub const CURL: &str = r#"D=$(dirname "$0"); out=""; url=""
while [ $# -gt 0 ]; do case "$1" in -o) out=$2; shift ;; --retry) shift ;; -*) ;; *) url=$1 ;; esac; shift; done
name=${url##*/}
[ -f "$D/served/$name" ] || { echo "curl: (22) The requested URL returned error: 404" >&2; exit 22; }
cp "$D/served/$name" "$SKYHOOK_HOST_ROOT$out""#;

/// A stand-in running this machine's GNU tar for `tar -xzf FILE -C DIR`, the two
/// paths taken under the host root.
pub const TAR: &str = r#"R="$SKYHOOK_HOST_ROOT"
[ "$1" = -xzf ] && [ "$3" = -C ] || { echo "unexpected: tar $*" >&2; exit 2; }
exec /bin/tar -xzf "$R$2" -C "$R$4""#;

/// A stand-in for AWS's `efa_installer.sh -y` (aws-efa-installer 1.48.0): it
/// installs the `efa` package (the apt stand-in's database) and builds its DKMS
/// module (the dkms stand-in's answer), then prints its closing line; with
/// `efa-installer-fails` beside it, it fails as a DKMS build failure does (exit 1)
/// after installing the package without the module.
pub const EFA_INSTALLER: &str = r#"D=$(dirname "$0")
[ "$1" = -y ] || { echo "unexpected: efa_installer.sh $*" >&2; exit 1; }
echo "3.0.0-1" > "$D/pkgs/efa"
if [ -f "$D/efa-installer-fails" ]; then echo "Error: efa DKMS module failed to build" >&2; exit 1; fi
echo "efa/3.0.0, 6.17.0-1019-aws, x86_64: installed" > "$D/dkms-efa"
echo "==================================================="
echo "EFA installation complete.""#;

/// A stand-in running this machine's `gpgv` (GnuPG 2.2), every absolute path taken
/// under the host root.
pub const GPGV: &str = r#"R="$SKYHOOK_HOST_ROOT"
for a; do shift; case "$a" in /*) set -- "$@" "$R$a" ;; *) set -- "$@" "$a" ;; esac; done
exec /usr/bin/gpgv "$@""#;

/// The signing key of the tests' EFA installers, as AWS publishes its own.
pub const EFA_KEY_FILE: &str = "aws-efa-installer.key";

/// Signs `file` with a key made for it by this machine's gpg (ed25519, in a GnuPG
/// home under `dir` that is removed again, its agent stopped): writes `<file>.sig`
/// (detached, binary, as AWS's) and the armored public key `dir/aws-efa-installer.key`;
/// returns the key's fingerprint.
pub fn sign_as_aws(dir: &std::path::Path, file: &std::path::Path) -> String {
    let home = dir.join("gnupg");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::set_permissions(&home, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let gpg = |args: &[&str]| {
        let out = std::process::Command::new("gpg")
            .args(["--batch", "--no-tty", "--homedir"])
            .arg(&home)
            .args(args)
            .output()
            .expect("gpg (this machine's; ci/setup-toolchain installs it)");
        assert!(
            out.status.success(),
            "gpg {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    gpg(&[
        "--passphrase",
        "",
        "--quick-gen-key",
        "EFA test signer <efa@localhost>",
        "ed25519",
        "sign",
        "never",
    ]);
    let sig = format!("{}.sig", file.display());
    gpg(&["--detach-sign", "-o", &sig, &file.display().to_string()]);
    let key = dir.join(EFA_KEY_FILE).display().to_string();
    gpg(&["--armor", "--export", "-o", &key]);
    let fingerprint = gpg(&["--with-colons", "--fingerprint"])
        .lines()
        .find_map(|l| l.strip_prefix("fpr:").map(|f| f.trim_matches(':').to_string()))
        .expect("a fingerprint");
    let _ = std::process::Command::new("gpgconf")
        .arg("--homedir")
        .arg(&home)
        .args(["--kill", "all"])
        .status();
    std::fs::remove_dir_all(&home).unwrap();
    fingerprint
}

/// An [`eks`] node without EFA whose curl serves AWS's installer `version`, signed
/// (with its key beside it) by a key of the test's that the node's env trusts
/// (`NVIDIA_EFA_KEY_FINGERPRINT`).
pub fn eks_without_efa(version: &str) -> Node {
    let mut n = eks();
    n.run_stand_in("apt-get", &["purge", "-y", "efa"]).expect_code(0);
    std::fs::remove_file(n.commands_dir().join("dkms-efa")).unwrap();
    let served = n.commands_dir().join("served");
    std::fs::create_dir_all(served.join("aws-efa-installer")).unwrap();
    std::fs::write(
        served.join("aws-efa-installer/efa_installer.sh"),
        "#!/bin/sh\nexit 99\n",
    )
    .unwrap();
    let tarball = served.join(format!("aws-efa-installer-{version}.tar.gz"));
    let ok = std::process::Command::new("/bin/tar")
        .arg("-czf")
        .arg(&tarball)
        .arg("-C")
        .arg(&served)
        .arg("aws-efa-installer")
        .status()
        .unwrap();
    assert!(ok.success());
    std::fs::remove_dir_all(served.join("aws-efa-installer")).unwrap();
    let fingerprint = sign_as_aws(&served, &tarball);
    n.env("NVIDIA_EFA_KEY_FINGERPRINT", &fingerprint);
    n.stand_in("curl", CURL)
        .stand_in("gpgv", GPGV)
        .stand_in("tar", TAR)
        .stand_in("efa_installer.sh", EFA_INSTALLER);
    n.clear_calls();
    n
}

// SPDX-License-Identifier: Apache-2.0
//! kdump, tuning (`grub.conf`) and tuned on a Debian root dressed as RHEL 9 and as
//! RHEL 8, with the real dnf 4 and rpm (Debian's `dnf` and `rpm`, installed into the
//! root with its own apt-get) installing from a local repository of small RPMs built
//! for the test run with the real rpmbuild and createrepo_c (on this machine: Debian's
//! `rpm` and `createrepo-c`, see `ci/setup-toolchain`).
//!
//! The RPMs carry the test kit's own stand-ins as their payload, never upstream code:
//! `grubby` is [`boot_tools::GRUBBY`] (grubby-bls); `kexec-tools` is the kdumpctl model
//! of [`kdumpctl`] — RHEL 8's (2.0.20, [`Kdumpctl::Legacy`]: refuses
//! `auto_reset_crashkernel`, no reset) or RHEL 9's (2.0.27, [`Kdumpctl::KexecTools`]),
//! with `kexec`, `/etc/kdump.conf`, `kdump.service` enabled at install by the
//! distribution's preset (`%post`), and on RHEL 9 the `%posttrans` that runs `kdumpctl
//! _reset-crashkernel-after-update`, as kexec-tools' spec does from 2.0.24-1; `tuned`
//! is a tuned 2.22 that never runs (no daemon in a chroot), with its unit, main
//! configuration, a built-in profile, and — as tuned's spec has them — `active_profile`
//! and `profile_mode` empty, `%config(noreplace) %verify(not size mtime md5)`. rpm
//! runs the scriptlets for real.
//!
//! The tuned scenarios found a product bug, now fixed: tuned's uninstall left
//! `active_profile` and `profile_mode` as config wrote them when it removed the
//! package, and rpm (4.18 here; RHEL's rpm does the same for a modified
//! `%config(noreplace)` file) saved them as `/etc/tuned/active_profile.rpmsave` and
//! `profile_mode.rpmsave`, so `/etc/tuned` stayed behind (on Debian, `apt-get purge`
//! takes them). Uninstall now takes both back before the package goes.
//!
//! The dressing (before the package's first mode, part of what uninstall must give
//! back): os-release (`ID=rhel`, `ID_LIKE=fedora`), `/etc/redhat-release` and
//! `/etc/system-release`, BLS entries (a kernel's and a rescue one) under
//! `/boot/loader/entries`, `/etc/default/grub` with `GRUB_CMDLINE_LINUX` and
//! `GRUB_CMDLINE_LINUX_DEFAULT`, `/etc/kernel/cmdline`, the repository's
//! `/etc/yum.repos.d` file and `/etc/dnf/vars/releasever`, the preset enabling kdump
//! and tuned as `redhat-release` ships it, and grubby installed by dnf. No
//! `update-grub` in the root: the packages take the RHEL path, grubby and dnf.
//!
//! Where Debian's build of the real tools lacks what a RHEL node has, the dressing
//! works around it (never the product): Debian's rpm keeps its database in
//! `~/.rpmdb` (RHEL: `/var/lib/rpm`), so the root gets `%_dbpath /var/lib/rpm` in
//! `/etc/rpm/macros.dbpath`; its rpm database starts empty, so nothing provides the
//! `/bin/sh` every scriptlet requires: `chroot-debian-base` (installed with grubby)
//! provides it, as bash does on RHEL; the RPMs are built without automatic
//! requirements (`AutoReqProv: no`), which would name files only dpkg knows.
//!
//! Native architecture only: the arm64 emulated variant is skipped for these
//! scenarios, for time (dnf and rpm under qemu-user multiply their run time).
//! The dnf-equipped root is cached beside the Debian one; the repository is built once
//! per test run and shared by every scenario.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use skyhook_testkit::boot_tools::GRUBBY;
use skyhook_testkit::kdumpctl::{self, Kdumpctl};

use crate::debian::{self, must};
use crate::{Arch, BOOKKEEPING, Node};

/// The RHEL release a node is dressed as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rhel {
    /// RHEL 8.10 (Ootpa): kexec-tools 2.0.20.
    El8,
    /// RHEL 9.4 (Plow): kexec-tools 2.0.27.
    El9,
}

/// The BLS machine id of the dressed nodes.
const MACHINE_ID: &str = "5c1e7f005ca14e5e9a115ce4a7105000";

/// Where the local repository lives in a node.
const REPO_DIR: &str = "/srv/skyhook-rpms";

/// The distribution's preset (redhat-release's `90-default.preset` enables both).
const PRESET: &str = "/usr/lib/systemd/system-preset/90-default.preset";

impl Rhel {
    fn major(self) -> &'static str {
        match self {
            Rhel::El8 => "8",
            Rhel::El9 => "9",
        }
    }

    fn os_release(self) -> String {
        let (version, name, platform) = match self {
            Rhel::El8 => ("8.10", "Ootpa", "el8"),
            Rhel::El9 => ("9.4", "Plow", "el9"),
        };
        format!(
            "NAME=\"Red Hat Enterprise Linux\"\nVERSION=\"{version} ({name})\"\nID=\"rhel\"\nID_LIKE=\"fedora\"\n\
             VERSION_ID=\"{version}\"\nPLATFORM_ID=\"platform:{platform}\"\n\
             PRETTY_NAME=\"Red Hat Enterprise Linux {version} ({name})\"\nANSI_COLOR=\"0;31\"\n"
        )
    }

    fn redhat_release(self) -> &'static str {
        match self {
            Rhel::El8 => "Red Hat Enterprise Linux release 8.10 (Ootpa)\n",
            Rhel::El9 => "Red Hat Enterprise Linux release 9.4 (Plow)\n",
        }
    }

    /// The kernel of the node (x86_64: the scenarios run natively on amd64).
    fn kernel(self) -> &'static str {
        match self {
            Rhel::El8 => "4.18.0-553.el8_10.x86_64",
            Rhel::El9 => "5.14.0-427.13.1.el9_4.x86_64",
        }
    }

    /// kexec-tools' version, release, and its kdumpctl.
    fn kexec_tools(self) -> (&'static str, &'static str, Kdumpctl) {
        match self {
            Rhel::El8 => ("2.0.20", "69.el8", Kdumpctl::Legacy),
            Rhel::El9 => ("2.0.27", "8.el9", Kdumpctl::KexecTools),
        }
    }

    /// The stock `/etc/kdump.conf` (its options only): from 2.0.24 it says
    /// `auto_reset_crashkernel yes`.
    fn stock_kdump_conf(self) -> &'static str {
        match self {
            Rhel::El8 => {
                "# kdump.conf (chroot tier stand-in)\npath /var/crash\ncore_collector makedumpfile -l --message-level 7 -d 31\n"
            }
            Rhel::El9 => {
                "# kdump.conf (chroot tier stand-in)\nauto_reset_crashkernel yes\npath /var/crash\ncore_collector makedumpfile -l --message-level 7 -d 31\n"
            }
        }
    }

    fn entry(self) -> String {
        format!("/boot/loader/entries/{MACHINE_ID}-{}.conf", self.kernel())
    }

    fn rescue_entry(self) -> String {
        format!("/boot/loader/entries/{MACHINE_ID}-0-rescue.conf")
    }
}

/// The kernel arguments of a fresh node (after `root=… ro`): no crashkernel, so that
/// what kexec-tools' `%posttrans` sets shows.
const ARGS: &str = "resume=/dev/mapper/rhel-swap rd.lvm.lv=rhel/root rd.lvm.lv=rhel/swap";

const DEFAULT_GRUB: &str = "GRUB_TIMEOUT=5\nGRUB_DISTRIBUTOR=\"$(sed 's, release .*$,,g' /etc/system-release)\"\n\
GRUB_DEFAULT=saved\nGRUB_DISABLE_SUBMENU=true\nGRUB_TERMINAL_OUTPUT=\"console\"\n\
GRUB_CMDLINE_LINUX=\"resume=/dev/mapper/rhel-swap rd.lvm.lv=rhel/root rd.lvm.lv=rhel/swap\"\n\
GRUB_CMDLINE_LINUX_DEFAULT=\"console=ttyS0,115200n8 quiet\"\nGRUB_DISABLE_RECOVERY=\"true\"\nGRUB_ENABLE_BLSCFG=true\n";

/// A BLS entry as a RHEL installer writes it.
fn bls(title: &str, version: &str, linux: &str, initrd: &str, options: &str) -> String {
    format!(
        "title {title}\nversion {version}\nlinux {linux}\ninitrd {initrd}\noptions {options}\n\
         grub_users $grub_users\ngrub_arg --unrestricted\ngrub_class rhel\n"
    )
}

/// One file of an RPM's payload.
struct Payload {
    path: &'static str,
    text: String,
    mode: u32,
    config: bool,
    /// `%verify(not size mtime md5)`: a file the program rewrites (tuned's state).
    unverified: bool,
}

fn file(path: &'static str, text: impl Into<String>, mode: u32) -> Payload {
    Payload {
        path,
        text: text.into(),
        mode,
        config: false,
        unverified: false,
    }
}

/// An empty `%config(noreplace) %verify(not size mtime md5)` file, as tuned's spec
/// ships `active_profile` and `profile_mode`.
fn state_file(path: &'static str) -> Payload {
    Payload {
        config: true,
        unverified: true,
        ..file(path, "", 0o644)
    }
}

/// A small RPM of the local repository.
struct Rpm {
    name: &'static str,
    version: &'static str,
    release: String,
    provides: &'static [&'static str],
    payload: Vec<Payload>,
    post: String,
    preun: String,
    posttrans: String,
}

impl Rpm {
    fn new(name: &'static str, version: &'static str, release: impl Into<String>) -> Rpm {
        Rpm {
            name,
            version,
            release: release.into(),
            provides: &[],
            payload: Vec::new(),
            post: String::new(),
            preun: String::new(),
            posttrans: String::new(),
        }
    }

    /// The spec, its `%install` copying the payload from `src`; directories the
    /// Debian root lacks (`debian_root`) are owned, so that removal takes them.
    fn spec(&self, src: &Path, debian_root: &Path) -> String {
        let mut s = format!(
            "Name: {}\nVersion: {}\nRelease: {}\nSummary: skyhook chroot tier stand-in for {}\nLicense: Apache-2.0\n\
             BuildArch: noarch\nAutoReqProv: no\n",
            self.name, self.version, self.release, self.name
        );
        for p in self.provides {
            s.push_str(&format!("Provides: {p}\n"));
        }
        s.push_str("%global debug_package %{nil}\n%global __os_install_post %{nil}\n");
        s.push_str(
            "%description\nThe chroot tier's stand-in, built by the test; its scripts are skyhook-testkit's models.\n",
        );
        s.push_str(&format!(
            "%install\nmkdir -p %{{buildroot}}\ncp -a {}/. %{{buildroot}}/\n",
            src.display()
        ));
        s.push_str("%files\n");
        let mut dirs = std::collections::BTreeSet::new();
        for p in &self.payload {
            let mut d = Path::new(p.path).parent();
            while let Some(dir) = d.filter(|d| *d != Path::new("/")) {
                if !debian_root.join(dir.strip_prefix("/").unwrap()).exists() {
                    dirs.insert(dir.to_path_buf());
                }
                d = dir.parent();
            }
        }
        for d in dirs {
            s.push_str(&format!("%dir %attr(0755,root,root) {}\n", d.display()));
        }
        for p in &self.payload {
            let config = if p.config { "%config(noreplace) " } else { "" };
            let verify = if p.unverified {
                "%verify(not size mtime md5) "
            } else {
                ""
            };
            s.push_str(&format!("{config}{verify}%attr({:04o},root,root) {}\n", p.mode, p.path));
        }
        for (section, body) in [
            ("post", &self.post),
            ("preun", &self.preun),
            ("posttrans", &self.posttrans),
        ] {
            if !body.is_empty() {
                s.push_str(&format!("%{section}\n{body}\n"));
            }
        }
        s
    }
}

/// A stand-in script: a shebang, a comment naming the model, then its body.
fn script(what: &str, body: &str) -> String {
    format!("#!/bin/sh\n# skyhook chroot tier stand-in: {what}\n{body}\n")
}

/// The directory kdumpctl's model calls its `systemctl` and `grubby` from.
const KDUMPCTL_TOOLS: &str = "/usr/libexec/skyhook-kdumpctl-tools";

/// The RPMs of `rhel`'s repository.
fn rpms(rhel: Rhel) -> Vec<Rpm> {
    let el = format!("el{}", rhel.major());
    let mut base = Rpm::new("chroot-debian-base", "1", "1");
    base.provides = &["/bin/sh"];

    let mut grubby = Rpm::new("grubby", "8.40", format!("69.{el}"));
    grubby.payload = vec![file(
        "/usr/sbin/grubby",
        script("grubby-bls, skyhook-testkit boot_tools::GRUBBY", GRUBBY),
        0o755,
    )];

    let (version, release, model) = rhel.kexec_tools();
    let mut kexec = Rpm::new("kexec-tools", version, release);
    let kdumpctl_text = format!(
        "#!/bin/sh\n# skyhook chroot tier: skyhook-testkit's kdumpctl model, its tools from {KDUMPCTL_TOOLS}\n\
         KDUMPCTL_TOOLS=\"${{KDUMPCTL_TOOLS:-{KDUMPCTL_TOOLS}}}\"; export KDUMPCTL_TOOLS\n{}",
        model.script()
    );
    kexec.payload = vec![
        file(kdumpctl::SCRIPT, kdumpctl_text, 0o755),
        file("/usr/sbin/kexec", script("kexec, loads nothing", "exit 0"), 0o755),
        file(
            "/usr/libexec/skyhook-kdumpctl-tools/systemctl",
            script("the node's systemctl", "exec /usr/bin/systemctl \"$@\""),
            0o755,
        ),
        file(
            "/usr/libexec/skyhook-kdumpctl-tools/grubby",
            script("the node's grubby", "exec /usr/sbin/grubby \"$@\""),
            0o755,
        ),
        file(
            "/usr/lib/systemd/system/kdump.service",
            "[Unit]\nDescription=Crash recovery kernel arming\n\n[Service]\nType=oneshot\n\
             ExecStart=/usr/bin/kdumpctl start\nRemainAfterExit=yes\n\n[Install]\nWantedBy=multi-user.target\n",
            0o644,
        ),
        Payload {
            config: true,
            ..file("/etc/kdump.conf", rhel.stock_kdump_conf(), 0o644)
        },
    ];
    if model.has_hook() {
        kexec.payload.push(file(
            kdumpctl::HOOK,
            script(
                "kexec-tools' kernel-install hook",
                "kdumpctl _reset-crashkernel-for-installed_kernel \"$2\"",
            ),
            0o755,
        ));
    }
    // systemd's rpm macros %systemd_post / %systemd_preun, spelled out (Debian has no
    // systemd-rpm-macros).
    kexec.post = "if [ $1 -eq 1 ]; then systemctl --no-reload preset kdump.service >/dev/null 2>&1 || :; fi".into();
    kexec.preun =
        "if [ $1 -eq 0 ]; then systemctl --no-reload disable --now kdump.service >/dev/null 2>&1 || :; fi".into();
    if model != Kdumpctl::Legacy {
        kexec.posttrans = "/usr/bin/kdumpctl _reset-crashkernel-after-update >/dev/null 2>&1 || :".into();
    }

    let mut tuned = Rpm::new("tuned", "2.22.1", format!("1.{el}"));
    tuned.payload = vec![
        file(
            "/usr/sbin/tuned",
            script("tuned 2.22.1, never runs", "echo 'tuned 2.22.1'"),
            0o755,
        ),
        file(
            "/usr/sbin/tuned-adm",
            script(
                "tuned-adm without a daemon",
                "echo 'Cannot talk to TuneD daemon via DBus. Is TuneD daemon running?' >&2; exit 1",
            ),
            0o755,
        ),
        Payload {
            config: true,
            ..file(
                "/etc/tuned/tuned-main.conf",
                "# Global tuned configuration file.\ndaemon = 1\n",
                0o644,
            )
        },
        file(
            "/usr/lib/tuned/throughput-performance/tuned.conf",
            "[main]\nsummary=Broadly applicable tuning that provides excellent performance\n\n[sysctl]\nvm.dirty_ratio = 40\n",
            0o644,
        ),
        file(
            "/usr/lib/systemd/system/tuned.service",
            "[Unit]\nDescription=Dynamic System Tuning Daemon\n\n[Service]\nExecStart=/usr/sbin/tuned -l -P\n\n\
             [Install]\nWantedBy=multi-user.target\n",
            0o644,
        ),
        // As tuned's spec (redhat-performance/tuned `tuned.spec`): its state files.
        state_file("/etc/tuned/active_profile"),
        state_file("/etc/tuned/profile_mode"),
    ];
    tuned.post = "if [ $1 -eq 1 ]; then systemctl --no-reload preset tuned.service >/dev/null 2>&1 || :; fi".into();
    tuned.preun =
        "if [ $1 -eq 0 ]; then systemctl --no-reload disable --now tuned.service >/dev/null 2>&1 || :; fi".into();

    vec![base, grubby, kexec, tuned]
}

/// The local repositories, `el8/` and `el9/` (RPMs and `repodata/`), built once per
/// test run with rpmbuild and createrepo_c, kept in memory: path, content.
fn repositories() -> &'static BTreeMap<PathBuf, Vec<u8>> {
    static REPOS: OnceLock<BTreeMap<PathBuf, Vec<u8>>> = OnceLock::new();
    REPOS.get_or_init(|| {
        for tool in ["rpmbuild", "createrepo_c"] {
            assert!(
                which(tool),
                "the RHEL scenarios of the chroot tier need {tool} on this machine: apt-get install rpm createrepo-c \
                 (ci/setup-toolchain installs them)"
            );
        }
        let debian_root = debian::cached_root_of(&debian::native_arch());
        let scratch = tempfile::tempdir().expect("temporary directory");
        let mut out = BTreeMap::new();
        for rhel in [Rhel::El8, Rhel::El9] {
            let repo = scratch.path().join(format!("el{}", rhel.major()));
            fs::create_dir_all(&repo).unwrap();
            for rpm in rpms(rhel) {
                let top = scratch.path().join(format!("top-{}-{}", rhel.major(), rpm.name));
                let src = top.join("payload");
                fs::create_dir_all(&src).unwrap();
                for p in rpm.payload.iter() {
                    let path = src.join(p.path.trim_start_matches('/'));
                    fs::create_dir_all(path.parent().unwrap()).unwrap();
                    fs::write(&path, &p.text).unwrap();
                    use std::os::unix::fs::PermissionsExt;
                    fs::set_permissions(&path, fs::Permissions::from_mode(p.mode)).unwrap();
                }
                let spec = top.join(format!("{}.spec", rpm.name));
                fs::write(&spec, rpm.spec(&src, debian_root)).unwrap();
                must(
                    Command::new("rpmbuild")
                        .arg("-bb")
                        .arg("--define")
                        .arg(format!("_topdir {}", top.display()))
                        .arg("--define")
                        .arg(format!("_rpmdir {}", repo.display()))
                        .arg(&spec),
                    &format!("rpmbuild {}", rpm.name),
                );
            }
            must(Command::new("createrepo_c").arg("-q").arg(&repo), "createrepo_c");
        }
        collect(scratch.path(), &mut out, &["el8", "el9"]);
        out
    })
}

/// Every file under `dir`'s `subdirs`, relative to `dir`, into `out`.
fn collect(dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>, subdirs: &[&str]) {
    fn walk(base: &Path, at: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for entry in fs::read_dir(at).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(base, &path, out);
            } else {
                out.insert(path.strip_prefix(base).unwrap().to_path_buf(), fs::read(&path).unwrap());
            }
        }
    }
    for s in subdirs {
        walk(dir, &dir.join(s), out);
    }
}

fn which(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The cached Debian root with Debian's dnf and rpm installed by its own apt-get.
fn dnf_root() -> &'static Path {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        debian::cached_derivative(&debian::native_arch(), "dnf-r1", |root| {
            fs::write(
                root.join("etc/resolv.conf"),
                fs::read_to_string("/etc/resolv.conf").unwrap_or_default(),
            )
            .unwrap();
            must(
                Command::new("chroot")
                    .arg(root)
                    .args([
                        "/bin/sh",
                        "-c",
                        "export DEBIAN_FRONTEND=noninteractive; apt-get update -q >/dev/null \
                         && apt-get install -y -q --no-install-recommends dnf rpm >/dev/null",
                    ])
                    .env_clear()
                    .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"),
                "install Debian's dnf and rpm into the root (is the Debian mirror reachable?)",
            );
        })
    })
}

/// What the RHEL scenarios ignore when comparing a node: [`BOOKKEEPING`] and rpm's
/// and dnf's own databases, caches and logs.
fn ignored() -> Vec<&'static str> {
    [BOOKKEEPING, &["var/lib/rpm", "var/lib/dnf", "var/cache/dnf"]].concat()
}

/// A node dressed as `rhel`, its packages from the local repository, grubby installed
/// by dnf.
fn dressed(rhel: Rhel) -> Node {
    assert!(
        nix::unistd::geteuid().is_root(),
        "the chroot tier needs root (chroot(2), debootstrap); run the test suite as root, as CI does"
    );
    let repos = repositories();
    let node = Node::copy_of(dnf_root(), Arch::Native, None);
    let el = format!("el{}", rhel.major());
    for (path, bytes) in repos.iter().filter(|(p, _)| p.starts_with(&el)) {
        let to = node.path(REPO_DIR).join(path.strip_prefix(&el).unwrap());
        fs::create_dir_all(to.parent().unwrap()).unwrap();
        fs::write(to, bytes).unwrap();
    }
    // Debian's /etc/os-release links to /usr/lib/os-release, as RHEL's does: both say RHEL.
    node.write("/etc/os-release", &rhel.os_release());
    node.write("/etc/redhat-release", rhel.redhat_release());
    std::os::unix::fs::symlink("redhat-release", node.path("/etc/system-release")).unwrap();
    node.write("/etc/rpm/macros.dbpath", "%_dbpath /var/lib/rpm\n");
    node.write(
        "/etc/yum.repos.d/skyhook-chroot.repo",
        &format!(
            "[skyhook-chroot]\nname=skyhook chroot tier RHEL {} stand-ins\nbaseurl=file://{REPO_DIR}\nenabled=1\n\
             gpgcheck=0\nmetadata_expire=0\n",
            rhel.major()
        ),
    );
    node.write("/etc/dnf/vars/releasever", &format!("{}\n", rhel.major()));
    node.write(PRESET, "enable kdump.service\nenable tuned.service\n");
    let kernel = rhel.kernel();
    node.write(&format!("/boot/vmlinuz-{kernel}"), "not a kernel\n");
    node.write(&format!("/boot/initramfs-{kernel}.img"), "not an initramfs\n");
    node.write(&format!("/boot/vmlinuz-0-rescue-{MACHINE_ID}"), "not a kernel\n");
    let options = format!("root=/dev/mapper/rhel-root ro {ARGS}");
    let name = rhel.redhat_release().trim().replace(" release", "");
    node.write(
        &rhel.entry(),
        &bls(
            &format!("{name} ({kernel})"),
            kernel,
            &format!("/vmlinuz-{kernel}"),
            &format!("/initramfs-{kernel}.img"),
            &options,
        ),
    );
    node.write(
        &rhel.rescue_entry(),
        &bls(
            &format!("{name} (0-rescue-{MACHINE_ID})"),
            &format!("0-rescue-{MACHINE_ID}"),
            &format!("/vmlinuz-0-rescue-{MACHINE_ID}"),
            &format!("/initramfs-0-rescue-{MACHINE_ID}.img"),
            &options,
        ),
    );
    node.write("/etc/default/grub", DEFAULT_GRUB);
    node.write("/etc/kernel/cmdline", &format!("{options}\n"));
    // 64 GiB: kdump reads the node's memory from /proc/meminfo (no /proc in a chroot).
    node.write(
        "/proc/meminfo",
        "MemTotal:       65536000 kB\nMemFree:        32000000 kB\n",
    );
    node.sh("dnf -y -q install chroot-debian-base grubby");
    assert!(node.sh("rpm -q grubby").starts_with("grubby-8.40"));
    node
}

/// The files the dressing put on the node that the packages edit, with their content.
fn dressed_files(node: &Node, rhel: Rhel) -> Vec<(String, Option<Vec<u8>>)> {
    [
        "/etc/default/grub".to_string(),
        "/etc/kernel/cmdline".into(),
        rhel.entry(),
        rhel.rescue_entry(),
        "/etc/os-release".into(),
        "/usr/lib/os-release".into(),
        "/etc/redhat-release".into(),
        "/etc/kdump.conf".into(),
        "/etc/tuned/tuned-main.conf".into(),
    ]
    .into_iter()
    .map(|p| {
        let bytes = fs::read(node.path(&p)).ok();
        (p, bytes)
    })
    .collect()
}

#[track_caller]
fn assert_dressed_files_back(node: &Node, rhel: Rhel, before: &[(String, Option<Vec<u8>>)]) {
    for ((path, now), (_, was)) in dressed_files(node, rhel).iter().zip(before) {
        assert!(
            now == was,
            "{path} is not byte for byte as before: now {:?}, before {:?}",
            now.as_deref().map(String::from_utf8_lossy),
            was.as_deref().map(String::from_utf8_lossy)
        );
    }
}

/// The `options` of every BLS entry of the node.
fn entry_options(node: &Node, rhel: Rhel) -> Vec<String> {
    [rhel.entry(), rhel.rescue_entry()]
        .iter()
        .map(|e| bls_options(node, e))
        .collect()
}

/// The `options` of the BLS entry `entry`.
fn bls_options(node: &Node, entry: &str) -> String {
    node.read(entry)
        .expect("BLS entry")
        .lines()
        .find_map(|l| l.strip_prefix("options ").map(str::to_string))
        .expect("options line")
}

const CRASHKERNEL: &str = "512M";
const KDUMP_CONF: &str = "path /var/crash\ncore_collector makedumpfile -l --message-level 7 -d 31\n";

fn kdump_lifecycle(rhel: Rhel) {
    let node = dressed(rhel);
    let ignore = ignored();
    let before = node.snapshot(&ignore);
    let dressed_before = dressed_files(&node, rhel);
    let conf = format!("kdump.conf={KDUMP_CONF}");
    let crash = format!("crashkernel={CRASHKERNEL}");
    let args = ["--configmap", &crash, "--configmap", &conf];
    let run = |mode: &str| node.run("kdump", &[&[mode][..], &args].concat());

    run("apply").expect_ok();
    run("apply-check").expect_ok();
    let (version, release, model) = rhel.kexec_tools();
    assert_eq!(
        node.sh("rpm -q --qf '%{VERSION}-%{RELEASE}' kexec-tools"),
        format!("{version}-{release}"),
        "dnf installed kexec-tools from the local repository"
    );
    assert!(node.sh("dnf -q history list kexec-tools").contains("install"));
    assert_eq!(
        node.sh("systemctl is-enabled kdump").trim(),
        "enabled",
        "enabled by the preset"
    );
    let after_install = entry_options(&node, rhel);
    if model == Kdumpctl::Legacy {
        assert!(
            after_install.iter().all(|o| !o.contains("crashkernel=")),
            "RHEL 8's kexec-tools has no %posttrans reset: {after_install:?}"
        );
    } else {
        assert!(
            after_install
                .iter()
                .all(|o| o.ends_with(kdumpctl::RHEL9_DEFAULT_CRASHKERNEL)),
            "the %posttrans of RHEL 9's kexec-tools put the distribution's default on every entry: {after_install:?}"
        );
    }

    run("config").expect_ok().expect_output("{type: reboot}");
    run("config-check").expect_ok();
    for options in entry_options(&node, rhel) {
        let crash: Vec<&str> = options.split(' ').filter(|a| a.starts_with("crashkernel=")).collect();
        assert_eq!(crash, [format!("crashkernel={CRASHKERNEL}")], "{options}");
    }
    let kdump_conf = node.read("/etc/kdump.conf").expect("kdump.conf");
    assert!(kdump_conf.starts_with(KDUMP_CONF), "{kdump_conf}");
    if model == Kdumpctl::Legacy {
        assert!(
            !kdump_conf.contains("auto_reset_crashkernel"),
            "RHEL 8's kdumpctl refuses the option: {kdump_conf}"
        );
    } else {
        assert!(
            kdump_conf.lines().any(|l| l == "auto_reset_crashkernel no"),
            "{kdump_conf}"
        );
    }
    node.sh("kdumpctl start");

    // The same configMap again: nothing changes.
    let configured = node.snapshot(&ignore);
    run("config").expect_ok();
    configured.assert_same(&node.snapshot(&ignore));

    run("uninstall").expect_ok();
    run("uninstall-check").expect_ok();
    assert!(!node.sh("rpm -qa").contains("kexec-tools"), "dnf removed kexec-tools");
    // The crashkernel the install's %posttrans set is not the node's original: the
    // entries are as before the install.
    assert_dressed_files_back(&node, rhel, &dressed_before);
    before.assert_same(&node.snapshot(&ignore));
}

#[test]
#[ignore = "chroot tier: root and the Debian mirror, minutes; .ci/run chroot, or cargo test -p skyhook-pkg --test chroot -- --ignored"]
fn rhel9_kdump_with_real_dnf_and_rpm() {
    kdump_lifecycle(Rhel::El9);
}

#[test]
#[ignore = "chroot tier: root and the Debian mirror, minutes; .ci/run chroot, or cargo test -p skyhook-pkg --test chroot -- --ignored"]
fn rhel8_kdump_with_real_dnf_and_rpm() {
    kdump_lifecycle(Rhel::El8);
}

const GRUB_CONF: &str = "iommu=pt\nhugepagesz=1G hugepages=4\n";

fn tuning_lifecycle(rhel: Rhel) {
    let node = dressed(rhel);
    let ignore = ignored();
    let before = node.snapshot(&ignore);
    let dressed_before = dressed_files(&node, rhel);
    let grub = format!("grub.conf={GRUB_CONF}");
    let args = ["--configmap", grub.as_str()];
    let run = |mode: &str| node.run("tuning", &[&[mode][..], &args].concat());

    run("config").expect_ok().expect_output("{type: reboot}");
    run("config-check").expect_ok();
    for options in entry_options(&node, rhel) {
        assert!(
            options.ends_with("iommu=pt hugepagesz=1G hugepages=4"),
            "grubby put the arguments on the entry: {options}"
        );
    }
    let cmdline = node.read("/etc/kernel/cmdline").unwrap();
    assert!(
        cmdline.contains("iommu=pt"),
        "grubby's ALL edit reaches /etc/kernel/cmdline: {cmdline}"
    );
    let configured = node.snapshot(&ignore);
    run("config").expect_ok();
    configured.assert_same(&node.snapshot(&ignore));

    run("uninstall").expect_ok();
    run("uninstall-check").expect_ok();
    assert_dressed_files_back(&node, rhel, &dressed_before);
    before.assert_same(&node.snapshot(&ignore));
}

#[test]
#[ignore = "chroot tier: root and the Debian mirror, minutes; .ci/run chroot, or cargo test -p skyhook-pkg --test chroot -- --ignored"]
fn rhel9_tuning_grub_conf_with_real_grubby_path() {
    tuning_lifecycle(Rhel::El9);
}

#[test]
#[ignore = "chroot tier: root and the Debian mirror, minutes; .ci/run chroot, or cargo test -p skyhook-pkg --test chroot -- --ignored"]
fn rhel8_tuning_grub_conf_with_real_grubby_path() {
    tuning_lifecycle(Rhel::El8);
}

const PROFILE: &str = "[main]\nsummary=GPU node\ninclude=throughput-performance\n\n[sysctl]\nvm.swappiness=10\n";

fn tuned_lifecycle(rhel: Rhel) {
    let node = dressed(rhel);
    let ignore = ignored();
    let before = node.snapshot(&ignore);
    let dressed_before = dressed_files(&node, rhel);
    let profile = format!("gpu-node={PROFILE}");
    let args = ["--configmap", "tuned_profile=gpu-node", "--configmap", profile.as_str()];
    let run = |mode: &str| node.run("tuned", &[&[mode][..], &args].concat());

    run("apply").expect_ok();
    run("apply-check").expect_ok();
    assert_eq!(
        node.sh("rpm -q --qf '%{VERSION}' tuned"),
        "2.22.1",
        "dnf installed tuned from the local repository"
    );
    assert_eq!(node.sh("systemctl is-enabled tuned").trim(), "enabled");
    run("config")
        .expect_ok()
        .expect_output("tuned applies it when it starts");
    run("config-check").expect_ok();
    // tuned before 2.23 reads custom profiles from /etc/tuned/<name>/.
    assert_eq!(node.read("/etc/tuned/gpu-node/tuned.conf").as_deref(), Some(PROFILE));
    assert_eq!(
        node.read("/etc/tuned/active_profile").map(|p| p.trim().to_string()),
        Some("gpu-node".into())
    );
    let configured = node.snapshot(&ignore);
    run("config").expect_ok();
    configured.assert_same(&node.snapshot(&ignore));

    run("uninstall").expect_ok();
    run("uninstall-check").expect_ok();
    assert!(!node.sh("rpm -qa").contains("tuned"), "dnf removed tuned");
    assert_dressed_files_back(&node, rhel, &dressed_before);
    before.assert_same(&node.snapshot(&ignore));
}

#[test]
#[ignore = "chroot tier: root and the Debian mirror, minutes; .ci/run chroot, or cargo test -p skyhook-pkg --test chroot -- --ignored"]
fn rhel9_tuned_with_real_dnf_and_rpm() {
    tuned_lifecycle(Rhel::El9);
}

#[test]
#[ignore = "chroot tier: root and the Debian mirror, minutes; .ci/run chroot, or cargo test -p skyhook-pkg --test chroot -- --ignored"]
fn rhel8_tuned_with_real_dnf_and_rpm() {
    tuned_lifecycle(Rhel::El8);
}

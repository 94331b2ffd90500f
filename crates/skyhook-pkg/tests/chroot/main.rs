// SPDX-License-Identifier: Apache-2.0
//! The chroot tier: every package's lifecycle run through `skyhook-pkg run`, chrooted
//! into a real Debian root (debootstrap), with that root's own tools — bash and sh,
//! apt-get installing tuned and kdump-tools from the mirror — and the result checked
//! inside the root after every mode. The kernel of this machine is never touched:
//! nothing is mounted into the root, and tuning gets a fake `/proc/sys` inside it.
//!
//! Every scenario runs twice: on a root of this machine's architecture, and on an
//! arm64 root with the aarch64 dist trees, both run under qemu-user emulation
//! ([`emulation`]) — the real agent's contract, as on a Grace node. `.ci/run chroot`
//! runs the x86_64 runs; the arm64 runs are `.ci/run chroot_arm64`'s, for CI's time
//! (the arm64 root's debootstrap and every apt and dpkg run emulated, minutes each):
//! the package logic they exercise is the aarch64 step's too, as aarch64 binaries,
//! and the tools are mostly scripts or Python on both architectures; what only they
//! prove (GRUB EFI's update-grub, arm64's kdump-tools and kexec-tools, the arm64
//! archive's packages) is for changes that touch it.
//!
//! The RHEL scenarios ([`rhel`]) dress copies of the root as RHEL 9 and RHEL 8 and run
//! kdump, tuning and tuned with the real dnf and rpm against a local repository of
//! small RPMs built once per test run (rpmbuild and createrepo_c on this machine);
//! they run natively only, not under emulation (time).
//!
//! Needs root and the Debian mirror (and, for arm64, qemu-user-static and the cross
//! toolchain; for the RHEL scenarios, rpm and createrepo-c: `ci/setup-toolchain`);
//! fails loudly, with the reason, when one is missing. Its scenarios are `#[ignore]`d
//! in the plain test suite, as the VM tier's are: run them with
//! `cargo test -p skyhook-pkg --test chroot -- --ignored` (`.ci/run chroot` runs them
//! in the background beside the test suite).

mod bind_mount;
mod copy_fail;
mod kdump;
mod nvidia_setup;
mod nvidia_tuned;
mod readme;
mod rhel;
mod shellscript;
mod tuned;
mod tuning;

use skyhook_pkg_support::{debian, emulation, grub_probe};

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use debian::must;
use emulation::Emulation;
use skyhook_testkit::Tree;

/// The name of a test run's package trees in the temporary directory, before `<pid>-<triple>`.
const DIST_PREFIX: &str = "skyhook-chroot-dist-";

/// The four packages for `triple`, assembled once per test run (static binaries,
/// validated, of the target's architecture) into the temporary directory; the
/// first call also removes the trees of earlier runs whose process has ended.
fn dist(triple: &str) -> &'static Path {
    static DIST: Mutex<BTreeMap<String, &'static Path>> = Mutex::new(BTreeMap::new());
    let mut trees = DIST.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(out) = trees.get(triple) {
        return out;
    }
    if trees.is_empty() {
        remove_trees_of_ended_runs(&std::env::temp_dir());
    }
    let out = std::env::temp_dir().join(format!("{DIST_PREFIX}{}-{triple}", std::process::id()));
    must(
        Command::new(env!("CARGO_BIN_EXE_skyhook-pkg"))
            .args(["dist", "--target", triple, "--out"])
            .arg(&out)
            .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")),
        "skyhook-pkg dist",
    );
    let out: &'static Path = Box::leak(out.into_boxed_path());
    trees.insert(triple.to_string(), out);
    out
}

/// Removes `<dir>/skyhook-chroot-dist-<pid>-*` of every `pid` no longer running (a
/// test process leaves its trees behind: statics are never dropped).
fn remove_trees_of_ended_runs(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.strip_prefix(DIST_PREFIX).and_then(|rest| rest.split('-').next()) else {
            continue;
        };
        if pid.parse::<u32>().is_ok() && !Path::new("/proc").join(pid).exists() {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

/// The architecture of a scenario's node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    /// This machine's.
    Native,
    /// arm64 (aarch64), emulated when this machine is not.
    Arm64,
}

impl Arch {
    /// The Debian architecture name.
    pub fn debian(self) -> String {
        match self {
            Arch::Native => debian::native_arch(),
            Arch::Arm64 => "arm64".into(),
        }
    }

    /// The Rust target triple of the package binaries.
    pub fn triple(self) -> &'static str {
        match self.debian().as_str() {
            "arm64" => "aarch64-unknown-linux-gnu",
            _ => "x86_64-unknown-linux-gnu",
        }
    }
}

/// A node: a private copy of the cached Debian root of its architecture.
pub struct Node {
    _dir: tempfile::TempDir,
    root: PathBuf,
    arch: Arch,
    _emulation: Option<Emulation>,
}

/// How a `skyhook-pkg run` ended.
pub struct Outcome {
    /// Whether every step succeeded.
    pub ok: bool,
    /// Its whole output.
    pub output: String,
}

impl Outcome {
    /// Asserts success, showing the output otherwise.
    #[track_caller]
    pub fn expect_ok(&self) -> &Self {
        assert!(self.ok, "skyhook-pkg run failed:\n{}", self.output);
        self
    }

    /// Asserts failure, showing the output otherwise.
    #[track_caller]
    pub fn expect_failure(&self) -> &Self {
        assert!(
            !self.ok,
            "skyhook-pkg run succeeded but should not have:\n{}",
            self.output
        );
        self
    }

    /// Asserts that the output contains `text`.
    #[track_caller]
    pub fn expect_output(&self, text: &str) -> &Self {
        assert!(self.output.contains(text), "output lacks {text:?}:\n{}", self.output);
        self
    }
}

impl Node {
    /// A fresh node of this machine's architecture (see [`Node::fresh_of`]).
    pub fn fresh() -> Node {
        Node::fresh_of(Arch::Native)
    }

    /// A fresh node of `arch`, as a real one would be: DNS from this machine, and
    /// services never started by package scripts (policy-rc.d), as in any chroot.
    pub fn fresh_of(arch: Arch) -> Node {
        assert!(
            nix::unistd::geteuid().is_root(),
            "the chroot tier needs root (chroot(2), debootstrap); run the test suite as root, as CI does"
        );
        let debian = arch.debian();
        let emulation = (debian != debian::native_arch()).then(Emulation::start);
        Node::copy_of(debian::cached_root_of(&debian), arch, emulation)
    }

    /// A node that is a private copy of `cached` (a root of `arch`), set up as
    /// [`Node::fresh_of`] says.
    fn copy_of(cached: &Path, arch: Arch, emulation: Option<Emulation>) -> Node {
        let dir = tempfile::tempdir().expect("temporary directory");
        let root = dir.path().join("root");
        must(
            Command::new("cp").arg("-a").arg(cached).arg(&root),
            "copy the cached Debian root",
        );
        let node = Node {
            _dir: dir,
            root,
            arch,
            _emulation: emulation,
        };
        node.write(
            "/etc/resolv.conf",
            &fs::read_to_string("/etc/resolv.conf").unwrap_or_default(),
        );
        node.write("/usr/sbin/policy-rc.d", "#!/bin/sh\nexit 101\n");
        node.chmod("/usr/sbin/policy-rc.d", 0o755);
        node
    }

    /// Where the host path `p` lives on this machine.
    pub fn path(&self, p: &str) -> PathBuf {
        self.root.join(p.trim_start_matches('/'))
    }

    /// Reads a file of the node, `None` when absent.
    pub fn read(&self, p: &str) -> Option<String> {
        fs::read_to_string(self.path(p)).ok()
    }

    /// Whether a path exists in the node.
    pub fn exists(&self, p: &str) -> bool {
        self.path(p).symlink_metadata().is_ok()
    }

    /// Writes a file of the node, creating its directories.
    pub fn write(&self, p: &str, content: &str) {
        let path = self.path(p);
        fs::create_dir_all(path.parent().expect("parent")).expect("create parent");
        fs::write(path, content).expect("write node file");
    }

    /// Sets the permission bits of a node file.
    pub fn chmod(&self, p: &str, mode: u32) {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(self.path(p), fs::Permissions::from_mode(mode)).expect("chmod");
    }

    /// The permission bits of a node file.
    pub fn mode(&self, p: &str) -> Option<u32> {
        use std::os::unix::fs::PermissionsExt;
        fs::metadata(self.path(p)).ok().map(|m| m.permissions().mode() & 0o7777)
    }

    /// Runs a command inside the node (chrooted); returns its output, panicking when it fails.
    pub fn sh(&self, script: &str) -> String {
        must(
            Command::new("chroot")
                .arg(&self.root)
                .args(["/bin/sh", "-c", script])
                .env_clear()
                .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"),
            &format!("in the node: {script}"),
        )
    }

    /// Installs GRUB from the mirror — its configuration tools (grub2-common) on this
    /// machine's architecture, the EFI GRUB (grub-efi-arm64, the only GRUB of arm64)
    /// on arm64 — and a kernel file for them to find, then generates
    /// `/boot/grub/grub.cfg` as a node has it.
    ///
    /// A chroot has no block devices, so `grub-probe` — the one GRUB tool that asks the
    /// kernel which disk holds `/` — is replaced by a stand-in describing a disk
    /// (`/dev/vda1`, ext4, msdos: [`grub_probe`]). `update-grub`, `grub-mkconfig` and its scripts are
    /// the root's own.
    pub fn install_grub(&self) {
        let grub = match self.arch {
            Arch::Arm64 => "grub-efi-arm64",
            Arch::Native => "grub2-common",
        };
        self.sh(&format!(
            "export DEBIAN_FRONTEND=noninteractive; apt-get update -q >/dev/null \
             && apt-get install -y -q --no-install-recommends {grub} >/dev/null"
        ));
        self.write("/usr/sbin/grub-probe", &grub_probe::script(1));
        self.chmod("/usr/sbin/grub-probe", 0o755);
        let arch = self.arch.debian();
        self.write(
            &format!("/boot/vmlinuz-6.1.0-chroot-{arch}"),
            "not a kernel: the chroot tier's stand-in for GRUB to list\n",
        );
        self.write(&format!("/boot/initrd.img-6.1.0-chroot-{arch}"), "not an initrd\n");
        self.write("/etc/default/grub", "GRUB_DEFAULT=0\nGRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX_DEFAULT=\"quiet console=ttyS0\"\nGRUB_CMDLINE_LINUX=\"\"\n");
        self.sh("mkdir -p /boot/grub && update-grub 2>&1");
    }

    /// The arguments of the `linux` lines of the generated grub.cfg.
    pub fn grub_kernel_args(&self) -> Vec<Vec<String>> {
        self.read("/boot/grub/grub.cfg")
            .unwrap_or_default()
            .lines()
            .filter(|l| l.trim_start().starts_with("linux"))
            .map(|l| l.split_whitespace().skip(2).map(str::to_string).collect())
            .collect()
    }

    /// [`Node::run`] of `modes` with the arguments of a README's SCR example, then `extra`.
    pub fn run_example(&self, package: &str, ex: &readme::Example, modes: &[&str], extra: &[&str]) -> Outcome {
        let args = ex.args();
        let mut all: Vec<&str> = modes.to_vec();
        all.extend(args.iter().map(String::as_str));
        all.extend(extra);
        self.run(package, &all)
    }

    /// `skyhook-pkg run <package> <args…> --root <node>`.
    pub fn run(&self, package: &str, args: &[&str]) -> Outcome {
        let out = Command::new(env!("CARGO_BIN_EXE_skyhook-pkg"))
            .arg("run")
            .arg(dist(self.arch.triple()).join(package))
            .args(args)
            .arg("--root")
            .arg(&self.root)
            .output()
            .expect("run skyhook-pkg");
        Outcome {
            ok: out.status.success(),
            output: format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        }
    }

    /// Every path of the node with a digest of what it is, except under `ignore`
    /// (prefixes, relative to the root).
    pub fn snapshot(&self, ignore: &[&str]) -> Tree {
        Tree::of_except(&self.root, ignore)
    }
}

/// What the package manager and the local agent keep for themselves: ignored when
/// comparing a node before and after a lifecycle.
pub const BOOKKEEPING: &[&str] = &[
    "var/cache/apt",
    "var/cache/debconf",
    "var/cache/ldconfig",
    "var/lib/apt",
    "var/lib/dpkg",
    "var/log",
    "var/lib/skyhook",
    "var/lib/skyhook-pkg",
    "etc/ld.so.cache",
    "tmp",
    // Runtime state, a tmpfs on a booted node: the node lock's directory (/run/lock)
    // is made there when the root has none.
    "run",
];

/// What Debian's maintainer scripts leave on a node and `apt-get purge` never takes
/// back — neither the packages' doing nor ours: ignored, besides [`BOOKKEEPING`], by the
/// scenarios that install and remove distribution packages. Each entry says why.
pub const APT_FOOTPRINT: &[&str] = &[
    // System accounts created by dependencies (messagebus, polkitd, kvm, render…):
    // Debian policy never deletes a system user or group.
    "etc/passwd",
    "etc/passwd-",
    "etc/group",
    "etc/group-",
    "etc/shadow",
    "etc/shadow-",
    "etc/gshadow",
    "etc/gshadow-",
    // Runtime state (adduser's lock directory), gone at the next boot.
    "run",
    // Created by netbase when missing; every real node has one.
    "etc/hosts",
    // The empty catalog directory xml-core leaves, and the mode polkitd's
    // dpkg-statoverride gives its rules directory (kept after the override is gone).
    "etc/xml",
    "usr/share/polkit-1/rules.d",
    // ucf's rotated backups of its own registry, written on every (un)registration of a
    // conffile (kdump-tools's, where grub-efi-arm64 brought ucf first); the registry and
    // hash file themselves are compared and come back.
    "var/lib/ucf/hashfile.0",
    "var/lib/ucf/hashfile.1",
    "var/lib/ucf/hashfile.2",
    "var/lib/ucf/hashfile.3",
    "var/lib/ucf/hashfile.4",
    "var/lib/ucf/hashfile.5",
    "var/lib/ucf/registry.0",
    "var/lib/ucf/registry.1",
    "var/lib/ucf/registry.2",
    "var/lib/ucf/registry.3",
    "var/lib/ucf/registry.4",
    "var/lib/ucf/registry.5",
];

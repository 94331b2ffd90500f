// SPDX-License-Identifier: Apache-2.0
//! A 64k-page arm64 kernel package, built here for the scenarios of the Grace
//! accelerators: nvidia-setup's GB200 and GB300 entries want the running kernel to
//! be the `-64k` flavour, and Debian builds arm64 kernels with 4k and 16k pages only.
//!
//! The recipe: the suite's own kernel source and configuration (`linux-source-6.1`,
//! and `linux-config-6.1`'s `cloud-arm64` flavour, Debian's configuration for
//! virtual machines), with 64 KiB pages ([`CONFIG_EDITS`]: also no debug information,
//! and no trusted keys of Debian's, whose files the source package does not carry),
//! its modules cut to what the guest loads ([`GUEST_MODULES`], through the kernel's
//! own `make localmodconfig`), built with the kernel's own `make bindeb-pkg` (Debian's
//! cross gcc on a machine that is not arm64). The package is
//! `linux-image-<`[`RELEASE`]`>`: its postinst runs the guest's kernel hooks as
//! Debian's own kernels' do (the initrd, update-grub).
//!
//! Built once per recipe (the source's and configuration's versions, the constants
//! of this file) into `<cache>/kernel-arm64-64k/<key>/kernel.deb`, older keys
//! removed; the build's output is kept beside it (`build.log`) and its time recorded
//! in the figures. A build stopped half way goes on where it stopped when run again
//! (`make` is incremental; the unpacked and configured tree is marked as such).
//! The build tools are `.ci/run vm_arm64`'s to install (DEVELOPING.md: The VM tier).
//! The nvidia-setup arm64 scenario builds the package when the cache has none;
//! [`arm64_64k_kernel`] builds it alone.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::arch::Arch;
use crate::cache;

/// The suite's kernel source package (a tarball of the patched tree).
const SOURCE: &str = "linux-source-6.1";
/// The suite's kernel configurations (arm64's: `:arm64`).
const CONFIGS: &str = "linux-config-6.1:arm64";
/// The configuration taken, in `linux-config-6.1`'s tree.
const CONFIG_FILE: &str = "usr/src/linux-config-6.1/config.arm64_none_cloud-arm64.xz";

/// The kernel release (`uname -r`): Debian's form, `<version>-<ABI>-<flavour>`, with
/// the `-64k` suffix nvidia-setup wants on arm64 (Ubuntu's name for the flavour). ABI
/// 1, below any of the suite's, so that GRUB (which sorts its entries newest first by
/// release) keeps the guest's own kernel as its first entry: only a saved default
/// boots this one, as with the x86_64 scenario's older kernel.
pub const RELEASE: &str = "6.1.0-1-cloud-arm64-64k";

/// `scripts/config` arguments applied to Debian's configuration.
const CONFIG_EDITS: &[&str] = &[
    // The point: 64 KiB pages (the Cortex-A57 of the arm64 guest has the granule).
    "--disable",
    "ARM64_4K_PAGES",
    "--enable",
    "ARM64_64K_PAGES",
    // No debug information (BTF would also need pahole): minutes less to build.
    "--disable",
    "DEBUG_INFO",
    "--disable",
    "DEBUG_INFO_DWARF_TOOLCHAIN_DEFAULT",
    "--enable",
    "DEBUG_INFO_NONE",
    "--disable",
    "DEBUG_INFO_BTF",
    // Debian's certificate files are not in the source package. Modules are still
    // signed (lockdown selects it) with a key the build makes.
    "--set-str",
    "SYSTEM_TRUSTED_KEYS",
    "",
    "--set-str",
    "SYSTEM_REVOCATION_KEYS",
    "",
    // The release is RELEASE, nothing appended.
    "--set-str",
    "LOCALVERSION",
    "",
    "--disable",
    "LOCALVERSION_AUTO",
];

/// What the guest loads, in `lsmod`'s format (`make localmodconfig` keeps these
/// modules and drops every other one; what Debian builds in stays): its disks and
/// network (virtio), the EFI system partition (vfat), the scenarios' arrays (md,
/// raid0 and raid1, xfs) and what systemd and Debian's boot load.
const GUEST_MODULES: &str = "Module Size Used by
virtio_pci
virtio_pci_modern_dev
virtio_pci_legacy_dev
virtio_blk
virtio_net
net_failover
failover
virtio_scsi
virtio_rng
virtio_console
virtio_balloon
rng_core
md_mod
raid0
raid1
xfs
libcrc32c
crc32c_generic
vfat
fat
nls_ascii
nls_cp437
nls_utf8
efivarfs
efi_pstore
ip_tables
x_tables
autofs4
loop
dm_mod
fuse
configfs
sg
evdev
ext4
jbd2
mbcache
crc16
";

/// Options the finished configuration must have (`make localmodconfig` could drop a
/// module whose name changed): the page size, and the drivers a scenario's guest
/// cannot boot or build its array without, built in or as modules.
const REQUIRED: &[(&str, &[&str])] = &[
    ("ARM64_64K_PAGES", &["y"]),
    ("VIRTIO_PCI", &["y", "m"]),
    ("VIRTIO_BLK", &["y", "m"]),
    ("VIRTIO_NET", &["y", "m"]),
    ("BLK_DEV_NVME", &["y", "m"]),
    ("EXT4_FS", &["y", "m"]),
    ("VFAT_FS", &["y", "m"]),
    ("BLK_DEV_MD", &["y", "m"]),
    ("MD_RAID0", &["y", "m"]),
    ("XFS_FS", &["y", "m"]),
    ("SERIAL_AMBA_PL011_CONSOLE", &["y"]),
];

/// The built package: `<cache>/kernel-arm64-64k/<key>/kernel.deb`, built now when
/// the cache has none for this recipe.
pub fn package(cache_dir: &Path) -> Result<PathBuf, String> {
    let source = crate::qemu::candidate(SOURCE)?;
    let configs = crate::qemu::candidate(CONFIGS)?;
    let key = cache::sha256(&format!(
        "{SOURCE} {source}\n{CONFIGS} {configs} {CONFIG_FILE}\n{RELEASE}\n{CONFIG_EDITS:?}\n{GUEST_MODULES}\n{REQUIRED:?}"
    ))?;
    let key = &key[..16];
    let root = cache_dir.join("kernel-arm64-64k");
    let done = root.join(key).join("kernel.deb");
    if done.is_file() {
        return Ok(done);
    }
    cache::remove_all_but(&root, &[key])?;
    let started = Instant::now();
    let work = root.join(key).join("build");
    fs::create_dir_all(&work).map_err(|e| format!("{}: {e}", work.display()))?;
    let log = root.join(key).join("build.log");
    eprintln!(
        "vm: building the arm64 64k-page kernel {RELEASE} from {SOURCE} {source} (the tier's longest preparation; its output: {})",
        log.display()
    );
    let deb = build(&work, &log).map_err(|e| format!("the arm64 64k-page kernel: {e}"))?;
    fs::rename(&deb, &done).map_err(|e| format!("{} -> {}: {e}", deb.display(), done.display()))?;
    cache::remove(&work)?;
    eprintln!("vm: the arm64 64k-page kernel built in {:.0?}", started.elapsed());
    skyhook_testkit::figures::record(
        crate::vm::FIGURES_SECTION,
        "arm64 64k-page kernel package built (cached: under a second)",
        format!("{} s", started.elapsed().as_secs()),
    );
    Ok(done)
}

/// Downloads, configures and builds in `work`; returns the image package's path.
fn build(work: &Path, log: &Path) -> Result<PathBuf, String> {
    let tree = work.join(SOURCE);
    if !tree.join(CONFIGURED).exists() {
        configure(work, &tree)?;
    }
    let jobs = std::thread::available_parallelism().map_or(2, |n| n.get());
    let out = fs::File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
    let err = out.try_clone().map_err(|e| e.to_string())?;
    let status = make(&tree)
        .arg(format!("-j{jobs}"))
        .arg(format!("KERNELRELEASE={RELEASE}"))
        .arg("bindeb-pkg")
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .status()
        .map_err(|e| format!("cannot run make: {e}"))?;
    if !status.success() {
        let text = fs::read_to_string(log).unwrap_or_default();
        return Err(format!(
            "make bindeb-pkg failed ({status}); the whole output is {}:\n{}",
            log.display(),
            cache::tail(&text, 40)
        ));
    }
    deb_in(work, &format!("linux-image-{RELEASE}_"))
}

/// The marker of a tree unpacked and configured ([`configure`]).
const CONFIGURED: &str = ".skyhook-vm-configured";

/// The package in `dir` whose file name starts with `prefix`.
fn deb_in(dir: &Path, prefix: &str) -> Result<PathBuf, String> {
    fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .find(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with(prefix)))
        .ok_or_else(|| format!("no {prefix}*.deb in {}", dir.display()))
}

/// Downloads the source and the configurations into `work`, unpacks the source as
/// `tree`, and configures it ([`CONFIG_EDITS`], [`GUEST_MODULES`], [`REQUIRED`]).
fn configure(work: &Path, tree: &Path) -> Result<(), String> {
    for (program, package) in [
        ("make", "make"),
        ("flex", "flex"),
        ("bison", "bison"),
        ("bc", "bc"),
        ("openssl", "openssl"),
        ("rsync", "rsync"),
        ("depmod", "kmod"),
        ("cpio", "cpio"),
        ("dpkg-buildpackage", "dpkg-dev"),
    ] {
        cache::need(program, package)?;
    }
    if !Arch::Arm64.is_native() {
        cache::need("aarch64-linux-gnu-gcc", "gcc-aarch64-linux-gnu")?;
    }
    cache::remove_all_but(work, &[])?;
    cache::run(
        Command::new("apt-get")
            .args(["download", "-q", "-o", "APT::Sandbox::User=root", SOURCE, CONFIGS])
            .current_dir(work),
    )?;
    let unpacked = work.join("unpacked");
    for deb in [deb_in(work, &format!("{SOURCE}_"))?, deb_in(work, "linux-config-")?] {
        cache::run(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&unpacked))?;
        cache::remove(&deb)?;
    }
    let tarball = unpacked.join(format!("usr/src/{SOURCE}.tar.xz"));
    cache::run(Command::new("tar").arg("-xJf").arg(&tarball).arg("-C").arg(work))?;
    let config = cache::run(Command::new("xz").arg("-dc").arg(unpacked.join(CONFIG_FILE)))?;
    cache::remove(&unpacked)?;
    fs::write(tree.join(".config"), config).map_err(|e| e.to_string())?;
    let modules = work.join("guest-modules");
    fs::write(&modules, GUEST_MODULES).map_err(|e| e.to_string())?;
    cache::run(
        Command::new(tree.join("scripts/config"))
            .args(CONFIG_EDITS)
            .current_dir(tree),
    )?;
    cache::run(make(tree).arg("olddefconfig"))?;
    cache::run(
        make(tree)
            .arg(format!("LSMOD={}", modules.display()))
            .arg("localmodconfig"),
    )?;
    check_config(&fs::read_to_string(tree.join(".config")).map_err(|e| e.to_string())?)?;
    fs::write(tree.join(CONFIGURED), "").map_err(|e| e.to_string())
}

/// `make` in `tree` for arm64, with Debian's cross compiler unless this machine is
/// arm64.
fn make(tree: &Path) -> Command {
    let mut cmd = Command::new("make");
    cmd.current_dir(tree).arg("ARCH=arm64");
    if !Arch::Arm64.is_native() {
        cmd.arg("CROSS_COMPILE=aarch64-linux-gnu-");
    }
    cmd
}

/// Checks the finished configuration against [`REQUIRED`].
fn check_config(config: &str) -> Result<(), String> {
    let missing: Vec<String> = REQUIRED
        .iter()
        .filter(|(option, values)| {
            let value = config
                .lines()
                .find_map(|l| l.strip_prefix(&format!("CONFIG_{option}=")));
            !value.is_some_and(|v| values.contains(&v))
        })
        .map(|(option, values)| format!("CONFIG_{option} ({})", values.join(" or ")))
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "the configuration lacks {} after localmodconfig: the recipe no longer fits the source",
            missing.join(", ")
        ))
    }
}

/// Builds the package into the cache (when it has none for the recipe) and nothing
/// else: `cargo test -p skyhook-pkg --test vm -- --ignored --exact kernel64k::arm64_64k_kernel`.
#[test]
#[ignore = "VM tier: needs root, the Debian mirror and tens of minutes; cargo test -p skyhook-pkg --test vm -- --ignored"]
fn arm64_64k_kernel() {
    crate::vm::kernel_64k();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_configuration_without_64k_pages_or_a_required_driver_is_refused() {
        let good = REQUIRED
            .iter()
            .map(|(o, v)| format!("CONFIG_{o}={}\n", v[0]))
            .collect::<String>();
        assert_eq!(check_config(&good), Ok(()));
        let four_k = good.replace("CONFIG_ARM64_64K_PAGES=y", "# CONFIG_ARM64_64K_PAGES is not set");
        assert!(
            check_config(&four_k)
                .unwrap_err()
                .contains("CONFIG_ARM64_64K_PAGES (y)")
        );
        let no_raid0 = good.replace("CONFIG_MD_RAID0=y", "");
        assert!(
            check_config(&no_raid0)
                .unwrap_err()
                .contains("CONFIG_MD_RAID0 (y or m)")
        );
    }
}

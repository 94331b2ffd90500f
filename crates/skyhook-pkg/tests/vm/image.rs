// SPDX-License-Identifier: Apache-2.0
//! The base image of each guest (an architecture and its kernel), built once per
//! recipe and cached in `<cache>/<image dir>/<key>/base.raw` ([`Guest::image_dir`]:
//! `image/` for x86_64, `image-arm64/`, `image-arm64-16k/`; a sparse raw disk; each
//! test boots a copy-on-write qcow2 overlay of it).
//!
//! 1. The root: on this machine's architecture, `debootstrap` with systemd, a kernel
//!    and GRUB ([`Arch::boot_packages`]); for a foreign architecture (arm64 here), a
//!    copy of the chroot tier's cached Debian root of that architecture
//!    (`support/src/debian.rs`: minbase with systemd and python3, built by debootstrap
//!    under qemu-user when the cache has none), to which the set-up adds the image's
//!    packages with `apt-get install --no-install-recommends` — what debootstrap's
//!    `--include` adds, without a second emulated second stage. Every chroot step of
//!    a foreign root runs under qemu-user, through `ci/with-qemu-binfmt` (which takes
//!    its binfmt registration back afterwards);
//! 2. set it up: the dependencies of the packages the scenarios install (not the
//!    packages themselves), the packages a scenario's node has before any package
//!    runs ([`NODE_PACKAGES`]), a kernel from the suite's `-backports` for a guest whose
//!    kernel comes from there ([`Guest::backports_kernel`]: the 16k-page arm64 one,
//!    with `-backports` kept in the guest's apt sources), fstab by UUID, DHCP through systemd-networkd on `eth0`
//!    (qemu's user network, DNS at 10.0.2.3; `net.ifnames=0`, see [`kernel_args`]),
//!    serial console, GRUB without a menu delay, no fsck at boot, apt timers and
//!    unused boot services masked, dpkg without fsync, and the runner unit (`guest/`);
//! 3. the initrd with the guest's own drivers ([`BUILD_INITRAMFS`]; x86_64 then hands
//!    later builds in the guest Debian's `MODULES=dep`: [`build_initrd`]);
//! 4. GRUB, in the root, by GRUB's own tools ([`install_grub`]): its modules under
//!    `/boot/grub/<platform>/`, its first stage made by `grub-mkimage` with the
//!    configuration `grub-install` embeds (find the root by UUID), grubenv, and
//!    `update-grub` with a `grub-probe` stand-in (`support/src/grub_probe.rs`) for the
//!    disk the image becomes;
//! 5. `mkfs.ext4 -d` it into a partition at 1 MiB behind a hand-written MBR, with
//!    GRUB's first stage where the firmware finds it ([`disk::make_boot_disk`]: BIOS
//!    GRUB embedded before the partition as `grub-bios-setup` does; on arm64 an EFI
//!    system partition made with `mkfs.vfat` and `mcopy`). No boot is needed to make
//!    the image: every scenario's first boot proves that the disk boots through GRUB
//!    (an image whose GRUB does not boot makes the first scenario fail with its serial
//!    console; delete the image directory to rebuild it).
//!
//! The key is the hash of this recipe: the guest, this file, arch.rs, disk.rs,
//! the chroot tier's root recipe, the `grub-probe` stand-in, the guest files and the
//! mirror. Any change to them
//! builds a new image (and removes the architecture's old ones).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::arch::{Arch, Guest};
use crate::disk::BootCode;
use crate::emulation::Emulation;
use crate::grub_probe::{self, ROOT_UUID};
use crate::{apt_sources, cache, debian, disk};

/// The Debian release of the guest.
const SUITE: &str = "bookworm";
/// Packages on top of debootstrap's minbase variant (and [`Arch::boot_packages`]).
const INCLUDE: &[&str] = &[
    "systemd",
    "systemd-sysv",
    "udev",
    "dbus",
    "initramfs-tools",
    "e2fsprogs",
    "util-linux",
    "procps",
    "kmod",
    "iproute2",
    // fsck.vfat and friends for arm64's EFI system partition, as on a real node
    "dosfstools",
];
/// Packages whose dependencies (with their recommendations) are installed in the
/// image, but not the packages themselves: the scenarios install these from the
/// mirror through the package under test, and unpacking python3 and friends under
/// TCG would take minutes per scenario. arm64's scenarios (see the README) install
/// nothing.
fn dependencies_of(arch: Arch) -> &'static [&'static str] {
    match arch {
        Arch::X86_64 => &["tuned", "kdump-tools"],
        Arch::Arm64 => &[],
    }
}
/// Packages installed in the image (without their recommendations) because a
/// scenario's node has them before any package runs: the EKS node of the
/// nvidia-setup scenarios (x86_64 and arm64), upstream's tools and chrony (its apply
/// installs them where missing; under TCG that would cost minutes) and mdadm and
/// xfsprogs (EKS AMIs carry them for their instance storage).
const NODE_PACKAGES: &[&str] = &["mdadm", "xfsprogs", "chrony", "curl", "wget", "gpg", "git"];
/// The disk size (sparse).
const DISK_BYTES: u64 = 4 << 30;
/// The EFI system partition's FAT volume ID (`mkfs.vfat -i`), which fstab names as
/// `UUID=5C1E-EF00`.
const ESP_VOLUME_ID: &str = "5C1EEF00";
/// The runner script and its unit.
const RUNNER: &str = include_str!("guest/skyhook-vm-runner");
const RUNNER_UNIT: &str = include_str!("guest/skyhook-vm-runner.service");

/// The cached base image.
#[derive(Debug, Clone)]
pub struct Image {
    /// The bootable raw disk; never written once built.
    pub disk: PathBuf,
}

/// The Debian mirror: `SKYHOOK_VM_MIRROR`, else the one this machine's apt sources
/// use for the suite, else `None` (debootstrap's own default).
pub fn mirror() -> Option<String> {
    std::env::var("SKYHOOK_VM_MIRROR")
        .ok()
        .or_else(|| apt_sources::mirror_of(&apt_sources::of_this_machine(), SUITE))
}

fn recipe(guest: Guest) -> String {
    [
        guest.name(),
        include_str!("image.rs"),
        include_str!("arch.rs"),
        include_str!("disk.rs"),
        include_str!("../support/src/debian.rs"),
        include_str!("../support/src/grub_probe.rs"),
        RUNNER,
        RUNNER_UNIT,
        &mirror().unwrap_or_default(),
    ]
    .join("\n\u{1f}\n")
}

/// The base image of `guest`, built now when the cache has none for this recipe.
pub fn base(cache_dir: &Path, guest: Guest) -> Result<Image, String> {
    let arch = guest.arch;
    let key = cache::sha256(&recipe(guest))?[..16].to_string();
    let images = cache_dir.join(guest.image_dir());
    let dir = images.join(&key);
    let image = Image {
        disk: dir.join("base.raw"),
    };
    if dir.join(".complete").exists() {
        eprintln!("vm: base image {} (cached)", dir.display());
        return Ok(image);
    }
    for (program, package) in [
        ("debootstrap", "debootstrap"),
        ("chroot", "coreutils"),
        ("mkfs.ext4", "e2fsprogs"),
        ("debugfs", "e2fsprogs"),
        ("qemu-img", "qemu-utils"),
        ("mkfs.vfat", "dosfstools"),
        ("mcopy", "mtools"),
    ] {
        cache::need(program, package)?;
    }
    let started = Instant::now();
    let tmp = dir.with_extension("partial");
    unmount_under(&tmp)?;
    cache::remove(&tmp)?;
    fs::create_dir_all(&tmp).map_err(|e| format!("{}: {e}", tmp.display()))?;
    eprintln!(
        "vm: building the {} base image in {} (minutes; arm64 under qemu-user: tens of minutes)",
        guest.name(),
        tmp.display()
    );

    let rootfs = tmp.join("rootfs");
    debootstrap(guest, &rootfs, &tmp.join("debootstrap.log"))?;
    let bootstrapped = started.elapsed();
    eprintln!("vm: {} root ready in {bootstrapped:.0?}", guest.name());
    set_up(guest, &rootfs)?;
    build_initrd(arch, &rootfs)?;
    let boot = install_grub(arch, &rootfs, &tmp)?;
    let raw = tmp.join("base.raw");
    disk::make_boot_disk(&raw, DISK_BYTES, &boot, &rootfs, ROOT_UUID)?;
    cache::remove(&rootfs)?;
    cache::remove(&tmp.join("esp.img"))?;
    let timings = format!(
        "root {:.0?}, set up and disk made at {:.0?}\n",
        bootstrapped,
        started.elapsed()
    );
    fs::write(tmp.join(".complete"), &timings).map_err(|e| e.to_string())?;
    cache::remove(&dir)?;
    fs::rename(&tmp, &dir).map_err(|e| format!("{} -> {}: {e}", tmp.display(), dir.display()))?;
    // Older recipes' images are of no further use.
    cache::remove_all_but(&images, &[&key])?;
    eprintln!("vm: base image {} built: {timings}", dir.display());
    Ok(image)
}

/// Unmounts what an interrupted build left mounted in its root (debootstrap's second
/// stage mounts `/proc` there), deepest first, so that the root can be removed.
fn unmount_under(dir: &Path) -> Result<(), String> {
    let mounts = fs::read_to_string("/proc/mounts").map_err(|e| format!("/proc/mounts: {e}"))?;
    let prefix = format!("{}/", dir.display());
    let mut points: Vec<&str> = mounts
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1))
        .filter(|p| p.starts_with(&prefix))
        .collect();
    points.sort_by_key(|p| std::cmp::Reverse(p.len()));
    for point in points {
        cache::run(Command::new("umount").arg(point))?;
    }
    Ok(())
}

/// `program` run as a guest architecture's program may need: directly, or for a
/// foreign `arch` under `ci/with-qemu-binfmt` (qemu-user registered for the command's
/// time only).
fn host_command(arch: Arch, program: &str) -> Command {
    if arch.is_native() {
        return Command::new(program);
    }
    let wrapper = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../ci/with-qemu-binfmt");
    let mut cmd = Command::new(wrapper);
    cmd.arg(arch.rust_target().split('-').next().unwrap_or_default())
        .arg(program);
    cmd
}

/// The initramfs settings of the image's initrd: the guest's own drivers only. In a
/// foreign root, where every program runs under qemu-user, Debian's `MODULES=most`
/// takes 20 min per initrd (measured: the kernel's postinst and initramfs-tools'
/// trigger each build one), these take seconds; under TCG, a small initrd also
/// boots faster. The arm64 image keeps them ([`build_initrd`]).
const BUILD_INITRAMFS: [(&str, &str); 2] = [
    ("/etc/initramfs-tools/conf.d/skyhook-vm-build", "MODULES=list\n"),
    (
        "/etc/initramfs-tools/hooks/skyhook-vm-build",
        "#!/bin/sh\n\
         # The VM tier's image: the drivers the guest needs to reach its root.\n\
         [ \"$1\" = prereqs ] && exit 0\n\
         . /usr/share/initramfs-tools/hook-functions\n\
         manual_add_modules virtio_pci virtio_blk ext4\n",
    ),
];

/// The image's initrd, built in the root with the guest's own drivers
/// ([`BUILD_INITRAMFS`]). A foreign root has them from the start ([`debootstrap`])
/// and keeps them: its scenarios install nothing that builds an initrd. x86_64 (a
/// native root, whose kernel package built Debian's `MODULES=most` initrd) builds
/// it again so, then hands later builds in the guest Debian's `MODULES=dep` (the
/// running guest's own drivers): its kdump scenario installs kdump-tools, which
/// rebuilds the initrd and builds kdump's own, in minutes under TCG with
/// `MODULES=most`.
fn build_initrd(arch: Arch, rootfs: &Path) -> Result<(), String> {
    match arch {
        Arch::Arm64 => Ok(()),
        Arch::X86_64 => {
            for (path, content) in BUILD_INITRAMFS {
                write(rootfs, path, content, 0o755)?;
            }
            chroot(arch, rootfs, &["update-initramfs", "-u"])?;
            for (path, _) in BUILD_INITRAMFS {
                cache::remove(&rootfs.join(path.trim_start_matches('/')))?;
            }
            let conf = rootfs.join("etc/initramfs-tools/initramfs.conf");
            let text = fs::read_to_string(&conf).map_err(|e| format!("{}: {e}", conf.display()))?;
            write(
                rootfs,
                "/etc/initramfs-tools/initramfs.conf",
                &set_vars(&text, &[("MODULES", "dep")]),
                0o644,
            )
        }
    }
}

/// Installs GRUB in the root with GRUB's own tools, as `grub-install` would on the
/// disk the image becomes, and returns its first stage for [`disk::make_boot_disk`]:
/// the modules in `/boot/grub/<platform>/`, the first stage by `grub-mkimage` with
/// the configuration `grub-install` embeds (search the root by UUID, the prefix on
/// it), `grubenv`, and `grub.cfg` by `update-grub`. `update-grub` asks `grub-probe`
/// about the root, which a root without block devices cannot answer: a stand-in
/// ([`grub_probe`]) does meanwhile, and `/dev/disk/by-uuid/<root>` exists (an empty
/// file: grub-mkconfig only tests that the path exists), without which it names the
/// root device instead of its UUID on the kernel's line; on a UEFI guest, the
/// firmware variable that makes `30_uefi-firmware` add its entry exists too. The grub.cfg is the one
/// `update-grub` writes in the booted guest, byte for byte (the scenarios compare
/// snapshots of it). x86_64 also gets debconf's install device (`/dev/vda`, for a grub-pc upgrade
/// in the guest); arm64's EFI binary becomes the EFI system partition's
/// (`mkfs.vfat`, `mcopy` into `<work>/esp.img`).
fn install_grub(arch: Arch, rootfs: &Path, work: &Path) -> Result<BootCode, String> {
    let platform = arch.grub_platform();
    let first_stage = arch.grub_first_stage();
    let mut script = format!(
        "mkdir -p /boot/grub/{platform} \"$(dirname {first_stage})\"\n\
         cp /usr/lib/grub/{platform}/*.mod /usr/lib/grub/{platform}/*.lst /boot/grub/{platform}/\n\
         printf 'search.fs_uuid {ROOT_UUID} root\\nset prefix=($root)/boot/grub\\n' >/tmp/skyhook-vm-load.cfg\n\
         grub-mkimage -O {platform} -c /tmp/skyhook-vm-load.cfg -p /boot/grub -o {first_stage} {}\n\
         rm /tmp/skyhook-vm-load.cfg\n\
         grub-editenv /boot/grub/grubenv create\n\
         update-grub\n",
        arch.grub_core_modules().join(" ")
    );
    if arch == Arch::X86_64 {
        script += "cp /usr/lib/grub/i386-pc/boot.img /boot/grub/i386-pc/\n\
                   echo 'grub-pc grub-pc/install_devices multiselect /dev/vda' | debconf-set-selections\n";
    }
    let probe = rootfs.join("usr/sbin/grub-probe");
    let real = rootfs.join("usr/sbin/grub-probe.skyhook-vm-real");
    let by_uuid = rootfs.join("dev/disk/by-uuid");
    fs::rename(&probe, &real).map_err(|e| format!("{}: {e}", probe.display()))?;
    write(
        rootfs,
        "/usr/sbin/grub-probe",
        &grub_probe::script(arch.root_partition()),
        0o755,
    )?;
    fs::create_dir_all(&by_uuid).map_err(|e| format!("{}: {e}", by_uuid.display()))?;
    fs::write(by_uuid.join(ROOT_UUID), "").map_err(|e| format!("{}: {e}", by_uuid.display()))?;
    if arch.esp_bytes().is_some() {
        // The firmware's OsIndicationsSupported (attributes, then the u64: bit 0, boot
        // to the firmware's setup), as the guest's UEFI reports it: 30_uefi-firmware
        // adds its menu entry when that bit is set, as it does in the booted guest.
        let efivars = rootfs.join("sys/firmware/efi/efivars");
        fs::create_dir_all(&efivars).map_err(|e| format!("{}: {e}", efivars.display()))?;
        fs::write(
            efivars.join("OsIndicationsSupported-8be4df61-93ca-11d2-aa0d-00e098032b8c"),
            [6, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0],
        )
        .map_err(|e| format!("{}: {e}", efivars.display()))?;
    }
    let installed = chroot(arch, rootfs, &["sh", "-euc", &script]);
    cache::remove(&rootfs.join("sys/firmware"))?;
    cache::remove(&rootfs.join("dev/disk"))?;
    cache::remove(&probe)?;
    fs::rename(&real, &probe).map_err(|e| format!("{}: {e}", real.display()))?;
    installed?;
    let read = |path: &str| {
        let p = rootfs.join(path.trim_start_matches('/'));
        fs::read(&p).map_err(|e| format!("{}: {e}", p.display()))
    };
    let Some(esp_bytes) = arch.esp_bytes() else {
        return Ok(BootCode::Bios {
            boot_img: read("/boot/grub/i386-pc/boot.img")?,
            core_img: read(first_stage)?,
        });
    };
    let staging = rootfs.join("tmp/skyhook-vm-esp");
    let esp = work.join("esp.img");
    cache::remove(&esp)?;
    cache::run(
        Command::new("mkfs.vfat")
            .args(["-F", "32", "-n", "ESP", "-i", ESP_VOLUME_ID, "-C"])
            .arg(&esp)
            .arg((esp_bytes / 1024).to_string()),
    )?;
    cache::run(
        Command::new("mcopy")
            .args(["-s", "-i"])
            .arg(&esp)
            .arg(staging.join("EFI"))
            .arg("::/"),
    )?;
    cache::remove(&staging)?;
    Ok(BootCode::Uefi { esp, bytes: esp_bytes })
}

/// The guest's root: debootstrap in one go on this machine's architecture; for a
/// foreign one, a copy of the chroot tier's cached root of that architecture (built
/// now under qemu-user when the cache has none) with [`BUILD_INITRAMFS`], which the
/// set-up completes ([`complete_foreign_root`]).
fn debootstrap(guest: Guest, rootfs: &Path, log: &Path) -> Result<(), String> {
    let arch = guest.arch;
    if !arch.is_native() {
        let base = {
            let _emulation = Emulation::start();
            debian::cached_root_of(arch.debian())
        };
        eprintln!("vm: {} root from the chroot tier's {}", arch.name(), base.display());
        cache::run(Command::new("cp").arg("-a").arg(base).arg(rootfs))?;
        for (path, content) in BUILD_INITRAMFS {
            write(rootfs, path, content, 0o755)?;
        }
        return Ok(());
    }
    let include: Vec<&str> = INCLUDE.iter().copied().chain(guest.boot_packages()).collect();
    let mut cmd = Command::new("debootstrap");
    cmd.arg(format!("--arch={}", arch.debian()))
        .args(["--variant=minbase", &format!("--include={}", include.join(","))])
        .arg(SUITE)
        .arg(rootfs)
        .args(mirror());
    logged(&mut cmd, log)
}

/// Adds to a foreign root copied from the chroot tier what debootstrap's `--include`
/// would have: [`INCLUDE`] and the boot packages, their dependencies but not their
/// recommendations (as debootstrap), no service started in the chroot (policy-rc.d).
fn complete_foreign_root(guest: Guest, rootfs: &Path) -> Result<(), String> {
    const POLICY: &str = "/usr/sbin/policy-rc.d";
    write(rootfs, POLICY, "#!/bin/sh\nexit 101\n", 0o755)?;
    let mut install = vec!["apt-get", "install", "-y", "-q", "--no-install-recommends"];
    install.extend(INCLUDE.iter().copied().chain(guest.boot_packages()));
    chroot(guest.arch, rootfs, &install)?;
    cache::remove(&rootfs.join(POLICY.trim_start_matches('/')))
}

/// Runs debootstrap, its output in `log`; a failure names the mirror and shows the
/// log's tail.
fn logged(cmd: &mut Command, log: &Path) -> Result<(), String> {
    let out = cmd
        .env("DEBIAN_FRONTEND", "noninteractive")
        .output()
        .map_err(|e| format!("cannot run {}: {e}", cache::show(cmd)))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    fs::write(log, &text).map_err(|e| format!("{}: {e}", log.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} failed ({}); is the mirror ({}) reachable? (SKYHOOK_VM_MIRROR selects another) Full log: {}\n{}",
            cache::show(cmd),
            out.status,
            mirror().as_deref().unwrap_or("debootstrap's default"),
            log.display(),
            cache::tail(&text, 20)
        ));
    }
    Ok(())
}

fn write(rootfs: &Path, path: &str, text: &str, mode: u32) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let p = rootfs.join(path.trim_start_matches('/'));
    fs::create_dir_all(p.parent().expect("absolute path")).map_err(|e| format!("{}: {e}", p.display()))?;
    cache::remove(&p)?; // /etc/resolv.conf may be a link
    fs::write(&p, text).map_err(|e| format!("{}: {e}", p.display()))?;
    fs::set_permissions(&p, fs::Permissions::from_mode(mode)).map_err(|e| format!("{}: {e}", p.display()))
}

fn chroot(arch: Arch, rootfs: &Path, args: &[&str]) -> Result<String, String> {
    cache::run(
        host_command(arch, "chroot")
            .arg(rootfs)
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .env("LC_ALL", "C"),
    )
}

/// `KEY=value` lines of a shell variables file replaced (or appended).
fn set_vars(text: &str, vars: &[(&str, &str)]) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    for (key, value) in vars {
        let line = format!("{key}={value}");
        match lines.iter().position(|l| l.starts_with(&format!("{key}="))) {
            Some(i) => lines[i] = line,
            None => lines.push(line),
        }
    }
    lines.join("\n") + "\n"
}

fn set_up(guest: Guest, rootfs: &Path) -> Result<(), String> {
    let arch = guest.arch;
    let chroot = |args: &[&str]| chroot(arch, rootfs, args);
    // A disposable test machine: dpkg need not fsync every file (much faster under TCG).
    write(rootfs, "/etc/dpkg/dpkg.cfg.d/skyhook-vm", "force-unsafe-io\n", 0o644)?;
    // The guest's apt uses this machine's sources for the suite (and its updates and
    // security companions); without any, what debootstrap wrote stays.
    let mut lines = apt_sources::suite_lines(&apt_sources::of_this_machine(), SUITE, mirror().as_deref());
    if guest.backports_kernel().is_some() {
        lines += &backports_line(rootfs)?;
    }
    if !lines.is_empty() {
        write(rootfs, "/etc/apt/sources.list", &lines, 0o644)?;
    }
    // The chroot still has this machine's resolv.conf here.
    chroot(&["apt-get", "update", "-q"])?;
    if !arch.is_native() {
        complete_foreign_root(guest, rootfs)?;
    }
    if let Some(kernel) = guest.backports_kernel() {
        // That package alone from backports; its dependencies from the suite.
        let from_backports = format!("{kernel}/{SUITE}-backports");
        chroot(&[
            "apt-get",
            "install",
            "-y",
            "-q",
            "--no-install-recommends",
            from_backports.as_str(),
        ])?;
    }
    let of = dependencies_of(arch);
    if !of.is_empty() {
        let mut install = vec!["apt-get", "install", "-y", "-q"];
        let simulated = chroot(&[&["apt-get", "install", "-s", "-q"], of].concat())?;
        let dependencies = would_install(&simulated, of);
        install.extend(dependencies.iter().map(String::as_str));
        chroot(&install)?;
    }
    chroot(
        &[
            &["apt-get", "install", "-y", "-q", "--no-install-recommends"],
            NODE_PACKAGES,
        ]
        .concat(),
    )?;
    write(rootfs, "/etc/hostname", "skyhook-vm\n", 0o644)?;
    write(
        rootfs,
        "/etc/hosts",
        "127.0.0.1 localhost\n127.0.1.1 skyhook-vm\n",
        0o644,
    )?;
    // No fsck at boot (pass 0): every disk is made fresh from the image, and the
    // check cost each boot seconds of emulated CPU.
    let mut fstab = format!("UUID={ROOT_UUID} / ext4 errors=remount-ro 0 0\n");
    if arch.esp_bytes().is_some() {
        let (high, low) = ESP_VOLUME_ID.split_at(4);
        fstab += &format!("UUID={high}-{low} /boot/efi vfat umask=0077 0 0\n");
        fs::create_dir_all(rootfs.join("boot/efi")).map_err(|e| format!("{}/boot/efi: {e}", rootfs.display()))?;
    }
    write(rootfs, "/etc/fstab", &fstab, 0o644)?;
    write(
        rootfs,
        "/etc/systemd/network/10-skyhook-vm.network",
        "[Match]\nName=eth*\n\n[Network]\nDHCP=yes\n",
        0o644,
    )?;
    write(rootfs, "/etc/resolv.conf", "nameserver 10.0.2.3\n", 0o644)?;
    let grub_path = rootfs.join("etc/default/grub");
    let grub = fs::read_to_string(&grub_path).map_err(|e| format!("{}: {e}", grub_path.display()))?;
    let grub = set_vars(
        &grub,
        &[
            ("GRUB_TIMEOUT", "0"),
            ("GRUB_CMDLINE_LINUX", &format!("\"{}\"", kernel_args(arch))),
            ("GRUB_TERMINAL", "serial"),
            ("GRUB_SERIAL_COMMAND", "\"serial --unit=0 --speed=115200\""),
        ],
    );
    write(rootfs, "/etc/default/grub", &grub, 0o644)?;
    write(rootfs, "/usr/local/sbin/skyhook-vm-runner", RUNNER, 0o755)?;
    write(
        rootfs,
        "/etc/systemd/system/skyhook-vm-runner.service",
        RUNNER_UNIT,
        0o644,
    )?;
    chroot(&[
        "systemctl",
        "enable",
        "systemd-networkd.service",
        "skyhook-vm-runner.service",
    ])?;
    // Unattended apt runs would hold the lock the packages under test need. Two boot
    // services no scenario uses cost each boot seconds of emulated CPU: e2scrub_reap
    // (LVM snapshots: the guest has none) and kexec-load (loads a kernel for kexec
    // reboots, which no scenario makes; kdump's crash kernel is kdump-tools' own).
    chroot(&[
        "systemctl",
        "mask",
        "apt-daily.timer",
        "apt-daily-upgrade.timer",
        "e2scrub_reap.service",
        "kexec-load.service",
    ])?;
    chroot(&["apt-get", "clean"])?;
    Ok(())
}

/// The `sources.list` line of the suite's `-backports`, from the mirror of the
/// suite (`SKYHOOK_VM_MIRROR`, this machine's sources, or the one debootstrap wrote in
/// the root): Debian serves backports from the main archive.
fn backports_line(rootfs: &Path) -> Result<String, String> {
    let uri = match mirror() {
        Some(uri) => uri,
        None => {
            let written = fs::read_to_string(rootfs.join("etc/apt/sources.list")).unwrap_or_default();
            apt_sources::mirror_of(&apt_sources::parse_list(&written), SUITE)
                .ok_or_else(|| format!("no mirror of {SUITE} known for {SUITE}-backports: set SKYHOOK_VM_MIRROR"))?
        }
    };
    Ok(format!("deb {uri} {SUITE}-backports main\n"))
}

/// The guest kernel's own arguments: the serial console, and `net.ifnames=0`, which
/// keeps the NIC `eth0`. Renamed by udev (`eth0` → `enp0s1`), the NIC raced
/// systemd-networkd 252, which was already configuring it: "Failed to configure DHCPv4
/// client: Device or resource busy", no address, and `systemd-networkd-wait-online`
/// failed the boot after its 2 minutes (seen once on arm64 under TCG).
fn kernel_args(arch: Arch) -> String {
    format!("{} net.ifnames=0", arch.console())
}

/// The packages an `apt-get install -s` would install, but for `except`.
fn would_install(simulated: &str, except: &[&str]) -> Vec<String> {
    simulated
        .lines()
        .filter_map(|l| l.strip_prefix("Inst "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|p| !except.contains(p))
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dependencies_are_read_from_a_simulated_install() {
        let sim = "NOTE: This is only a simulation!\n\
                   Inst python3-dbus (1.3.2-4+b1 Debian:12.13/stable [amd64])\n\
                   Inst tuned (2.19.0-2 Debian:12.13/stable [all])\n\
                   Conf python3-dbus (1.3.2-4+b1 Debian:12.13/stable [amd64])\n";
        assert_eq!(would_install(sim, &["tuned"]), ["python3-dbus"]);
    }

    #[test]
    fn grub_defaults_are_replaced_or_appended() {
        let text = "GRUB_DEFAULT=0\nGRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX=\"\"\n";
        assert_eq!(
            set_vars(text, &[("GRUB_TIMEOUT", "0"), ("GRUB_TERMINAL", "serial")]),
            "GRUB_DEFAULT=0\nGRUB_TIMEOUT=0\nGRUB_CMDLINE_LINUX=\"\"\nGRUB_TERMINAL=serial\n"
        );
    }
}

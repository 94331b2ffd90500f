// SPDX-License-Identifier: Apache-2.0
//! The guest architectures of the VM tier and what differs between them: the qemu
//! that runs the guest and its firmware, the kernel, the boot loader and the disk
//! layout it boots from, the serial console, the Rust target of the payload.
//!
//! - x86_64: qemu-system-x86_64 (`pc` machine, SeaBIOS), GRUB for BIOS (grub-pc) in
//!   the MBR gap, the cloud kernel, console ttyS0.
//! - arm64: qemu-system-aarch64 (`virt` machine, UEFI from qemu-efi-aarch64), GRUB
//!   EFI (grub-efi-arm64) on the disk's own EFI system partition at the removable
//!   media path `EFI/BOOT/BOOTAA64.EFI` (the firmware's NVRAM is not kept between
//!   boots, the path is found on every boot), Debian's generic arm64 kernel (4k pages),
//!   console ttyAMA0 (the PL011 of `virt`).
//!
//! A [`Guest`] is an architecture and its [`Kernel`]: each has its own base image.
//! Besides the distribution's kernel, arm64 has a 16k-page guest: bookworm-backports'
//! `linux-image-arm64-16k` on a CPU model with 16k translation granules (`-cpu max`;
//! the Cortex-A57 of the other arm64 guest has 4k and 64k granules only).

/// A guest architecture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Arch {
    /// x86_64 (Debian amd64).
    X86_64,
    /// aarch64 (Debian arm64).
    Arm64,
}

impl Arch {
    /// Both, in the order the tier prepares them.
    pub const ALL: [Arch; 2] = [Arch::X86_64, Arch::Arm64];

    /// The name in logs and cache paths (`x86_64`, `arm64`).
    pub fn name(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64",
            Arch::Arm64 => "arm64",
        }
    }

    /// The cache directory of its base images, under the tier's cache (x86_64's is
    /// `image/`, as before there was arm64, so that branches without arm64 and this
    /// one do not remove each other's images).
    pub fn image_dir(self) -> &'static str {
        match self {
            Arch::X86_64 => "image",
            Arch::Arm64 => "image-arm64",
        }
    }

    /// Debian's name of the architecture (`debootstrap --arch`).
    pub fn debian(self) -> &'static str {
        match self {
            Arch::X86_64 => "amd64",
            Arch::Arm64 => "arm64",
        }
    }

    /// The Rust target the guest's payload is built for.
    pub fn rust_target(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64-unknown-linux-gnu",
            Arch::Arm64 => "aarch64-unknown-linux-gnu",
        }
    }

    /// The guest's virtual CPUs (`-smp`). The x86_64 guests, all scenarios but one,
    /// run two at a time: one vCPU each keeps a 2-core machine busy, and TCG runs a
    /// single vCPU without the atomic operations and barriers it puts between vCPUs —
    /// under `.ci/run`, on a cold cache, the x86_64 scenarios together took less time
    /// at one vCPU than at two, in each run measured. The arm64 guest keeps two: it
    /// runs at the end of the step with no guest beside it, and at one vCPU its boots
    /// took longer.
    pub fn vcpus(self) -> u32 {
        match self {
            Arch::X86_64 => 1,
            Arch::Arm64 => 2,
        }
    }

    /// True when this machine runs the guest's programs natively (no qemu-user for
    /// the image's chroot steps).
    pub fn is_native(self) -> bool {
        std::env::consts::ARCH == self.rust_target().split('-').next().unwrap_or_default()
    }

    /// The guest's kernel and boot loader packages.
    pub fn boot_packages(self) -> [&'static str; 2] {
        match self {
            Arch::X86_64 => ["linux-image-cloud-amd64", "grub-pc"],
            Arch::Arm64 => ["linux-image-arm64", "grub-efi-arm64"],
        }
    }

    /// The serial console on the kernel command line.
    pub fn console(self) -> &'static str {
        match self {
            Arch::X86_64 => "console=ttyS0,115200n8",
            Arch::Arm64 => "console=ttyAMA0,115200n8",
        }
    }

    /// The EFI system partition's size, for an EFI boot (`None`: BIOS, GRUB's core
    /// image in the gap before the root partition).
    pub fn esp_bytes(self) -> Option<u64> {
        match self {
            Arch::X86_64 => None,
            Arch::Arm64 => Some(64 << 20),
        }
    }

    /// The partition of the root file system on the boot disk (1-based): after the
    /// EFI system partition on a UEFI disk.
    pub fn root_partition(self) -> u32 {
        match self.esp_bytes() {
            None => 1,
            Some(_) => 2,
        }
    }

    /// GRUB's platform (`/usr/lib/grub/<platform>`, `grub-mkimage -O`).
    pub fn grub_platform(self) -> &'static str {
        match self {
            Arch::X86_64 => "i386-pc",
            Arch::Arm64 => "arm64-efi",
        }
    }

    /// The modules GRUB's first stage carries, as `grub-install` would choose them for
    /// the guest's disk: the disk driver (BIOS), the msdos partition table, ext4 (GRUB's
    /// `ext2`) and the search by UUID its embedded configuration runs; GRUB loads the
    /// rest from `/boot/grub/<platform>/`.
    pub fn grub_core_modules(self) -> &'static [&'static str] {
        match self {
            Arch::X86_64 => &["biosdisk", "part_msdos", "ext2", "search_fs_uuid"],
            Arch::Arm64 => &["part_msdos", "ext2", "search_fs_uuid"],
        }
    }

    /// Where the image build has GRUB write its first stage in the root: x86_64's
    /// `core.img` where `grub-install` keeps it (the disk build embeds it and
    /// `boot.img` before the partition); arm64's `BOOTAA64.EFI` in a staging tree the
    /// build moves out of the root and into the EFI system partition, at the removable
    /// media path UEFI boots without any NVRAM entry (qemu keeps no NVRAM between
    /// boots).
    pub fn grub_first_stage(self) -> &'static str {
        match self {
            Arch::X86_64 => "/boot/grub/i386-pc/core.img",
            Arch::Arm64 => "/tmp/skyhook-vm-esp/EFI/BOOT/BOOTAA64.EFI",
        }
    }
}

/// The kernel of a guest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kernel {
    /// The distribution's kernel of the architecture ([`Arch::boot_packages`]; 4k pages).
    Stock,
    /// arm64 only: bookworm-backports' `linux-image-arm64-16k` (16k pages).
    Page16k,
}

/// A guest: an architecture and its kernel. Each has its own base image.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Guest {
    /// The architecture.
    pub arch: Arch,
    /// Its kernel.
    pub kernel: Kernel,
}

impl Guest {
    /// Every guest, in the order of their base images' cache slots.
    pub const ALL: [Guest; 3] = [Guest::stock(Arch::X86_64), Guest::stock(Arch::Arm64), Guest::ARM64_16K];

    /// arm64 with bookworm-backports' 16k-page kernel.
    pub const ARM64_16K: Guest = Guest {
        arch: Arch::Arm64,
        kernel: Kernel::Page16k,
    };

    /// `arch` with its distribution's kernel.
    pub const fn stock(arch: Arch) -> Guest {
        Guest {
            arch,
            kernel: Kernel::Stock,
        }
    }

    /// The name in logs and cache paths (`x86_64`, `arm64`, `arm64-16k`).
    pub fn name(self) -> &'static str {
        match self.kernel {
            Kernel::Stock => self.arch.name(),
            Kernel::Page16k => "arm64-16k",
        }
    }

    /// The cache directory of its base images ([`Arch::image_dir`] for a stock kernel).
    pub fn image_dir(self) -> &'static str {
        match self.kernel {
            Kernel::Stock => self.arch.image_dir(),
            Kernel::Page16k => "image-arm64-16k",
        }
    }

    /// The boot packages installed from the suite itself (the kernel and GRUB, or GRUB
    /// alone when the kernel comes from backports: [`Guest::backports_kernel`]).
    pub fn boot_packages(self) -> Vec<&'static str> {
        match self.kernel {
            Kernel::Stock => self.arch.boot_packages().to_vec(),
            Kernel::Page16k => vec!["grub-efi-arm64"],
        }
    }

    /// The kernel package taken from the suite's `-backports`, if any.
    pub fn backports_kernel(self) -> Option<&'static str> {
        match self.kernel {
            Kernel::Stock => None,
            Kernel::Page16k => Some("linux-image-arm64-16k"),
        }
    }

    /// The qemu CPU model the guest needs, when not the architecture's default
    /// (`qemu::Qemu::command`).
    pub fn cpu(self) -> Option<&'static str> {
        match self.kernel {
            Kernel::Stock => None,
            // A 16k-page kernel needs 16k translation granules (ID_AA64MMFR0_EL1.TGran16).
            Kernel::Page16k => Some("max"),
        }
    }
}

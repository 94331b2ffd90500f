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

    /// The guest's commands (in the provisioning boot) that install GRUB on the boot
    /// disk `/dev/vda`.
    pub fn grub_install(self) -> &'static str {
        match self {
            Arch::X86_64 => {
                "echo 'grub-pc grub-pc/install_devices multiselect /dev/vda' | debconf-set-selections\n\
                 grub-install --target=i386-pc /dev/vda\n"
            }
            Arch::Arm64 => {
                "mkfs.vfat -F 32 -n ESP /dev/vda1\n\
                 mkdir -p /boot/efi\n\
                 echo \"UUID=$(blkid -s UUID -o value /dev/vda1) /boot/efi vfat umask=0077 0 2\" >> /etc/fstab\n\
                 mount /boot/efi\n\
                 grub-install --target=arm64-efi --efi-directory=/boot/efi --removable --no-nvram\n\
                 test -f /boot/efi/EFI/BOOT/BOOTAA64.EFI\n"
            }
        }
    }
}

// SPDX-License-Identifier: Apache-2.0
//! Which processor architecture the node runs, for the facts that depend on it
//! (arm64 boots only through UEFI, so its GRUB is always the EFI one).
//!
//! The kernel's word comes first: `/proc/sys/kernel/arch`, the machine name
//! `uname -m` prints (`x86_64`, `aarch64`). Where the kernel has no such file (an
//! older kernel, a chroot without `/proc`), the architecture this binary was built
//! for answers: `skyhook-pkg dist` builds one tree per architecture and a node runs
//! its own, so on a node the two agree. Reading a file, not running `uname`, keeps
//! the detection free of commands and lets a test simulate an arm64 node.

use std::fmt;

use crate::host::Host;

/// The file holding the kernel's machine name (`uname -m`).
pub const KERNEL_ARCH: &str = "/proc/sys/kernel/arch";

/// A processor architecture, by the kernel's machine name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Arch {
    /// `x86_64`.
    X86_64,
    /// `aarch64` (arm64: Grace, Graviton, Ampere).
    Aarch64,
    /// Any other machine name, as the kernel spells it.
    Other(String),
}

impl Arch {
    /// The architecture of a machine name (`uname -m`); `arm64` is read as `aarch64`.
    pub fn from_machine(name: &str) -> Self {
        match name.trim() {
            "x86_64" | "amd64" => Arch::X86_64,
            "aarch64" | "arm64" => Arch::Aarch64,
            other => Arch::Other(other.to_string()),
        }
    }

    /// The architecture of `host`: [`KERNEL_ARCH`] when the kernel has it, else the
    /// one this binary was built for.
    pub fn detect(host: &Host) -> Self {
        match host.read_to_string(KERNEL_ARCH) {
            Ok(Some(name)) if !name.trim().is_empty() => Arch::from_machine(&name),
            _ => Arch::from_machine(std::env::consts::ARCH),
        }
    }

    /// Whether the architecture only boots through UEFI (arm64 servers have no
    /// BIOS; their GRUB is grub-efi-arm64 / grub2-efi-aa64).
    pub fn efi_only(&self) -> bool {
        matches!(self, Arch::Aarch64)
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Arch::X86_64 => "x86_64",
            Arch::Aarch64 => "aarch64",
            Arch::Other(name) => name,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::command::RecordingRunner;

    #[test]
    fn reads_the_kernels_machine_name_first() {
        let d = tempfile::tempdir().unwrap();
        let h = Host::new(d.path(), RecordingRunner::succeeding());
        assert_eq!(
            Arch::detect(&h),
            Arch::from_machine(std::env::consts::ARCH),
            "no {KERNEL_ARCH}: the build's architecture"
        );
        h.write(KERNEL_ARCH, b"aarch64\n", 0o444).unwrap();
        assert_eq!(Arch::detect(&h), Arch::Aarch64);
        assert!(Arch::detect(&h).efi_only());
        h.write(KERNEL_ARCH, b"x86_64\n", 0o444).unwrap();
        assert_eq!(Arch::detect(&h), Arch::X86_64);
        assert!(!Arch::detect(&h).efi_only());
        h.write(KERNEL_ARCH, b"ppc64le\n", 0o444).unwrap();
        assert_eq!(Arch::detect(&h).to_string(), "ppc64le");
    }

    #[test]
    fn names_as_uname_and_debian_spell_them() {
        assert_eq!(Arch::from_machine("arm64"), Arch::Aarch64);
        assert_eq!(Arch::from_machine("amd64"), Arch::X86_64);
        assert_eq!(Arch::Aarch64.to_string(), "aarch64");
    }
}

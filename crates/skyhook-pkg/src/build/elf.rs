// SPDX-License-Identifier: Apache-2.0
//! Just enough ELF to tell what a step binary needs from the host it lands on: its
//! architecture, and whether it asks for a dynamic loader (`PT_INTERP`). A binary
//! without one runs on any distribution, in an empty chroot.

use std::fs;
use std::io;
use std::path::Path;

/// What the ELF header and program headers say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElfInfo {
    /// `x86_64`, `aarch64`, or `machine <n>`.
    pub arch: String,
    /// Whether it needs no dynamic loader.
    pub is_static: bool,
}

const PT_INTERP: u32 = 3;

/// Reads the ELF facts of the file at `path`.
pub fn inspect(path: &Path) -> io::Result<ElfInfo> {
    parse(&fs::read(path)?).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} is not an ELF executable", path.display()),
        )
    })
}

/// Parses ELF bytes (32- or 64-bit, little- or big-endian).
pub fn parse(b: &[u8]) -> Option<ElfInfo> {
    if b.len() < 52 || &b[..4] != b"\x7fELF" {
        return None;
    }
    let is64 = b[4] == 2;
    let le = b[5] == 1;
    let u16_at = |o: usize| -> Option<u16> {
        let s: [u8; 2] = b.get(o..o + 2)?.try_into().ok()?;
        Some(if le {
            u16::from_le_bytes(s)
        } else {
            u16::from_be_bytes(s)
        })
    };
    let u32_at = |o: usize| -> Option<u32> {
        let s: [u8; 4] = b.get(o..o + 4)?.try_into().ok()?;
        Some(if le {
            u32::from_le_bytes(s)
        } else {
            u32::from_be_bytes(s)
        })
    };
    let u64_at = |o: usize| -> Option<u64> {
        let s: [u8; 8] = b.get(o..o + 8)?.try_into().ok()?;
        Some(if le {
            u64::from_le_bytes(s)
        } else {
            u64::from_be_bytes(s)
        })
    };
    let machine = u16_at(18)?;
    let (phoff, phentsize, phnum) = if is64 {
        (u64_at(32)? as usize, u16_at(54)? as usize, u16_at(56)? as usize)
    } else {
        (u32_at(28)? as usize, u16_at(42)? as usize, u16_at(44)? as usize)
    };
    let mut is_static = true;
    for i in 0..phnum {
        if u32_at(phoff + i * phentsize)? == PT_INTERP {
            is_static = false;
        }
    }
    let arch = match machine {
        62 => "x86_64".to_string(),
        183 => "aarch64".to_string(),
        n => format!("machine {n}"),
    };
    Some(ElfInfo { arch, is_static })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dynamic_executables_have_an_interpreter() {
        let sh = inspect(Path::new("/bin/sh")).unwrap();
        assert!(!sh.is_static, "/bin/sh of this machine is dynamically linked");
        assert_eq!(sh.arch, std::env::consts::ARCH);
    }

    #[test]
    fn rejects_non_elf_files() {
        assert_eq!(parse(b"#!/bin/sh\necho hi\n"), None);
        assert_eq!(parse(&[0x7f, b'E', b'L', b'F']), None);
    }
}

// SPDX-License-Identifier: Apache-2.0
//! The host's PCI devices, read from `<root>/sys/bus/pci/devices/*/{vendor,device,class}`
//! (hexadecimal with a `0x` prefix, as the kernel writes them). A host without
//! `/sys/bus/pci` (a chroot, a container, a test root) has no devices: an empty list,
//! not an error. A device whose file is missing or malformed is an error naming the
//! file and an excerpt of what it holds, never a device silently skipped.

use std::path::{Path, PathBuf};

use crate::error::{HostError, excerpt};
use crate::host::Host;

/// Where the kernel lists the PCI devices.
pub const DEVICES_DIR: &str = "/sys/bus/pci/devices";

/// One PCI function as sysfs describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PciDevice {
    /// Its address, the directory name (`0000:17:00.0`).
    pub address: String,
    /// The vendor ID (`0x10de` for NVIDIA).
    pub vendor: u16,
    /// The device ID (`0x2330` for an H100 SXM5).
    pub device: u16,
    /// The class code, 24 bits (`0x030200`: 3D controller).
    pub class: u32,
}

/// Why the PCI devices could not be read.
#[derive(Debug, thiserror::Error)]
pub enum PciError {
    /// Listing the directory or reading a file failed.
    #[error(transparent)]
    Host(#[from] HostError),
    /// A device lacks one of the files every PCI device has in sysfs.
    #[error("{}: missing; every PCI device in sysfs has it, so /sys looks damaged or is not sysfs", .path.display())]
    Missing {
        /// The host path of the file.
        path: PathBuf,
    },
    /// A file does not hold the hexadecimal number it should.
    #[error("{}: holds {excerpt}, not a {bits}-bit hexadecimal number such as 0x10de", .path.display())]
    Malformed {
        /// The host path of the file.
        path: PathBuf,
        /// A bounded excerpt of what the file holds.
        excerpt: String,
        /// The width the number must fit in.
        bits: u32,
    },
}

/// Every PCI device of `host`, sorted by address; empty without `/sys/bus/pci`.
pub fn devices(host: &Host) -> Result<Vec<PciDevice>, PciError> {
    let mut found = Vec::new();
    for address in host.list_dir(DEVICES_DIR)? {
        let dir = Path::new(DEVICES_DIR).join(&address);
        found.push(PciDevice {
            vendor: read_hex(host, &dir.join("vendor"), 16)? as u16,
            device: read_hex(host, &dir.join("device"), 16)? as u16,
            class: read_hex(host, &dir.join("class"), 24)? as u32,
            address,
        });
    }
    Ok(found)
}

/// The number in the sysfs file `path`, which must fit in `bits` bits.
fn read_hex(host: &Host, path: &Path, bits: u32) -> Result<u64, PciError> {
    let text = host.read(path)?.ok_or_else(|| PciError::Missing {
        path: path.to_path_buf(),
    })?;
    let text = String::from_utf8_lossy(&text);
    let malformed = || PciError::Malformed {
        path: path.to_path_buf(),
        excerpt: excerpt(&text),
        bits,
    };
    let digits = text.trim().strip_prefix("0x").ok_or_else(malformed)?;
    let value = u64::from_str_radix(digits, 16).map_err(|_| malformed())?;
    if digits.is_empty() || digits.starts_with('+') || value >> bits != 0 {
        return Err(malformed());
    }
    Ok(value)
}

/// Test helpers: a simulated `/sys/bus/pci` tree under a scratch root (unit tests and
/// builds with the `test-hooks` feature, i.e. package tests through the test kit).
#[cfg(any(test, feature = "test-hooks"))]
pub mod simulated {
    use std::fs;
    use std::path::Path;

    use super::DEVICES_DIR;

    /// Writes device `address` under `root` with the given IDs, as sysfs shows them.
    pub fn add_device(root: &Path, address: &str, vendor: u16, device: u16, class: u32) {
        let dir = root.join(DEVICES_DIR.trim_start_matches('/')).join(address);
        fs::create_dir_all(&dir).expect("create the simulated PCI device directory");
        fs::write(dir.join("vendor"), format!("0x{vendor:04x}\n")).expect("write vendor");
        fs::write(dir.join("device"), format!("0x{device:04x}\n")).expect("write device");
        fs::write(dir.join("class"), format!("0x{class:06x}\n")).expect("write class");
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;
    use crate::host::command::RecordingRunner;

    fn host(root: &Path) -> Host {
        Host::new(root, RecordingRunner::succeeding())
    }

    #[test]
    fn a_host_without_sys_has_no_devices() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(devices(&host(d.path())).unwrap(), Vec::new());
    }

    #[test]
    fn reads_every_device_sorted_by_address() {
        let d = tempfile::tempdir().unwrap();
        simulated::add_device(d.path(), "0000:c0:00.0", 0x10de, 0x2941, 0x030200);
        simulated::add_device(d.path(), "0000:00:01.0", 0x8086, 0x1237, 0x060000);
        let found = devices(&host(d.path())).unwrap();
        assert_eq!(
            found,
            vec![
                PciDevice {
                    address: "0000:00:01.0".into(),
                    vendor: 0x8086,
                    device: 0x1237,
                    class: 0x060000
                },
                PciDevice {
                    address: "0000:c0:00.0".into(),
                    vendor: 0x10de,
                    device: 0x2941,
                    class: 0x030200
                },
            ]
        );
    }

    #[test]
    fn devices_behind_symbolic_links_are_read_as_sysfs_has_them() {
        let d = tempfile::tempdir().unwrap();
        simulated::add_device(d.path(), "real", 0x10de, 0x2330, 0x030200);
        let devices_dir = d.path().join("sys/bus/pci/devices");
        let target = d.path().join("sys/devices/pci0000:17/0000:17:00.0");
        fs::create_dir_all(target.parent().unwrap()).unwrap();
        fs::rename(devices_dir.join("real"), &target).unwrap();
        std::os::unix::fs::symlink(
            "../../../devices/pci0000:17/0000:17:00.0",
            devices_dir.join("0000:17:00.0"),
        )
        .unwrap();
        let found = devices(&host(d.path())).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!((found[0].address.as_str(), found[0].device), ("0000:17:00.0", 0x2330));
    }

    #[test]
    fn malformed_or_missing_files_name_the_file_and_what_it_holds() {
        let cases: &[(&str, Option<&str>, &str)] = &[
            ("vendor", Some("10de\n"), "vendor: holds \"10de\\n\", not a 16-bit"),
            ("device", Some("0xzz\n"), "device: holds \"0xzz\\n\", not a 16-bit"),
            (
                "device",
                Some("0x12345\n"),
                "device: holds \"0x12345\\n\", not a 16-bit",
            ),
            ("class", Some("0x\n"), "class: holds \"0x\\n\", not a 24-bit"),
            ("class", Some("0x+30200\n"), "class: holds \"0x+30200\\n\""),
            ("class", None, "class: missing"),
        ];
        for (file, content, expected) in cases {
            let d = tempfile::tempdir().unwrap();
            simulated::add_device(d.path(), "0000:17:00.0", 0x10de, 0x2330, 0x030200);
            let path = d.path().join("sys/bus/pci/devices/0000:17:00.0").join(file);
            match content {
                Some(text) => fs::write(&path, text).unwrap(),
                None => fs::remove_file(&path).unwrap(),
            }
            let message = devices(&host(d.path())).unwrap_err().to_string();
            assert!(
                message.starts_with("/sys/bus/pci/devices/0000:17:00.0/") && message.contains(expected),
                "{file} {content:?}: {message}"
            );
        }
    }

    #[test]
    fn a_huge_file_is_quoted_bounded() {
        let d = tempfile::tempdir().unwrap();
        simulated::add_device(d.path(), "0000:17:00.0", 0x10de, 0x2330, 0x030200);
        let path = d.path().join("sys/bus/pci/devices/0000:17:00.0/vendor");
        fs::write(&path, "x".repeat(100_000)).unwrap();
        let message = devices(&host(d.path())).unwrap_err().to_string();
        assert!(message.len() < 400 && message.contains("(100000 bytes)"), "{message}");
    }
}

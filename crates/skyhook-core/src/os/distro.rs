// SPDX-License-Identifier: Apache-2.0
//! Which distribution the host runs, from `/etc/os-release` (or
//! `/usr/lib/os-release`), and the family that decides the package manager and
//! boot tools: by `ID` first, then by each `ID_LIKE` entry.

use std::collections::BTreeMap;
use std::fmt;

use crate::error::{Error, Result};
use crate::host::Host;

/// A family of distributions that share tools and file locations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// Debian, Ubuntu and derivatives: apt-get, update-grub, `/etc/default/grub.d`.
    Debian,
    /// RHEL, CentOS, Rocky, AlmaLinux, Oracle Linux, Amazon Linux, Fedora: dnf/yum, grubby.
    Rhel,
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Family::Debian => "Debian-like",
            Family::Rhel => "RHEL-like",
        })
    }
}

const DEBIAN_IDS: &[&str] = &["debian", "ubuntu", "linuxmint", "pop", "raspbian", "kali", "devuan"];
const RHEL_IDS: &[&str] = &[
    "rhel",
    "centos",
    "rocky",
    "almalinux",
    "ol",
    "amzn",
    "fedora",
    "scientific",
    "eurolinux",
    "circle",
    "nobara",
];

fn family_of(id: &str) -> Option<Family> {
    if DEBIAN_IDS.contains(&id) {
        Some(Family::Debian)
    } else if RHEL_IDS.contains(&id) {
        Some(Family::Rhel)
    } else {
        None
    }
}

/// Why this host's `/etc` does not survive a reboot, if it does not: GKE's
/// Container-Optimized OS (`ID=cos` in os-release), or any host whose `/etc` is a
/// tmpfs (the host's `/proc/mounts`). `None` for an ordinary host.
pub fn stateless_etc(host: &Host) -> Result<Option<String>> {
    let os = ["/etc/os-release", "/usr/lib/os-release"]
        .iter()
        .find_map(|p| host.read(p).ok().flatten())
        .map(|b| OsRelease::parse(&String::from_utf8_lossy(&b)));
    if let Some(os) = os.filter(|o| o.id() == "cos") {
        return Ok(Some(format!(
            "os-release says ID=cos: {}",
            os.get("PRETTY_NAME").unwrap_or("Container-Optimized OS")
        )));
    }
    let mounts = host.read("/proc/mounts")?.unwrap_or_default();
    let tmpfs_etc = String::from_utf8_lossy(&mounts).lines().any(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        f.len() > 2 && f[1] == "/etc" && f[2] == "tmpfs"
    });
    Ok(tmpfs_etc.then(|| "/proc/mounts shows /etc on a tmpfs".to_string()))
}

/// The parsed os-release file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OsRelease {
    fields: BTreeMap<String, String>,
}

impl OsRelease {
    /// Parses os-release(5) text: `KEY=value` lines, values optionally single- or
    /// double-quoted (with backslash escapes in double quotes), `#` comments.
    pub fn parse(text: &str) -> Self {
        let mut fields = BTreeMap::new();
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let Some((key, raw)) = line.split_once('=') else {
                continue;
            };
            fields.insert(key.trim().to_string(), unquote(raw.trim()));
        }
        OsRelease { fields }
    }

    /// Reads `/etc/os-release`, falling back to `/usr/lib/os-release`.
    pub fn read(host: &Host) -> Result<Self> {
        for path in ["/etc/os-release", "/usr/lib/os-release"] {
            if let Some(text) = host.read_to_string(path)? {
                return Ok(Self::parse(&text));
            }
        }
        Err(Error::action(
            "cannot tell which distribution this host runs: neither /etc/os-release nor /usr/lib/os-release exists",
        ))
    }

    /// A field's value (`VERSION_ID`, `PRETTY_NAME`, …).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.fields.get(key).map(String::as_str)
    }

    /// `ID`, lower-case (`linux` when absent, as os-release(5) says).
    pub fn id(&self) -> String {
        self.get("ID").unwrap_or("linux").to_ascii_lowercase()
    }

    /// The `ID_LIKE` entries, lower-case.
    pub fn id_like(&self) -> Vec<String> {
        self.get("ID_LIKE")
            .unwrap_or("")
            .split_whitespace()
            .map(str::to_ascii_lowercase)
            .collect()
    }

    /// `VERSION_ID`, empty when absent.
    pub fn version_id(&self) -> &str {
        self.get("VERSION_ID").unwrap_or("")
    }

    /// The family: by `ID`, then by each `ID_LIKE` entry in order.
    pub fn family(&self) -> Result<Family> {
        let id = self.id();
        std::iter::once(id.clone())
            .chain(self.id_like())
            .find_map(|i| family_of(&i))
            .ok_or_else(|| {
                Error::action(format!(
                    "unsupported distribution: ID={id:?}, ID_LIKE={:?} is neither Debian-like ({}) nor RHEL-like ({})",
                    self.get("ID_LIKE").unwrap_or(""),
                    DEBIAN_IDS.join(", "),
                    RHEL_IDS.join(", ")
                ))
            })
    }
}

fn unquote(raw: &str) -> String {
    let bytes = raw.as_bytes();
    if bytes.len() >= 2 && bytes[0] == b'\'' && bytes[bytes.len() - 1] == b'\'' {
        return raw[1..raw.len() - 1].to_string();
    }
    if bytes.len() >= 2 && bytes[0] == b'"' && bytes[bytes.len() - 1] == b'"' {
        let mut out = String::new();
        let mut chars = raw[1..raw.len() - 1].chars();
        while let Some(c) = chars.next() {
            if c == '\\' {
                if let Some(n) = chars.next() {
                    out.push(n);
                }
            } else {
                out.push(c);
            }
        }
        return out;
    }
    raw.to_string()
}

/// Test fixtures: the os-release files of the distributions the packages support.
pub mod fixtures {
    /// Ubuntu 22.04 LTS.
    pub const UBUNTU_2204: &str = "PRETTY_NAME=\"Ubuntu 22.04.4 LTS\"\nNAME=\"Ubuntu\"\nVERSION_ID=\"22.04\"\nVERSION=\"22.04.4 LTS (Jammy Jellyfish)\"\nVERSION_CODENAME=jammy\nID=ubuntu\nID_LIKE=debian\nHOME_URL=\"https://www.ubuntu.com/\"\nUBUNTU_CODENAME=jammy\n";
    /// Ubuntu 24.04 LTS.
    pub const UBUNTU_2404: &str = "PRETTY_NAME=\"Ubuntu 24.04.1 LTS\"\nNAME=\"Ubuntu\"\nVERSION_ID=\"24.04\"\nVERSION=\"24.04.1 LTS (Noble Numbat)\"\nVERSION_CODENAME=noble\nID=ubuntu\nID_LIKE=debian\nUBUNTU_CODENAME=noble\nLOGO=ubuntu-logo\n";
    /// Debian 12.
    pub const DEBIAN_12: &str = "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nNAME=\"Debian GNU/Linux\"\nVERSION_ID=\"12\"\nVERSION=\"12 (bookworm)\"\nVERSION_CODENAME=bookworm\nID=debian\nHOME_URL=\"https://www.debian.org/\"\n";
    /// Red Hat Enterprise Linux 9.
    pub const RHEL_9: &str = "NAME=\"Red Hat Enterprise Linux\"\nVERSION=\"9.4 (Plow)\"\nID=\"rhel\"\nID_LIKE=\"fedora\"\nVERSION_ID=\"9.4\"\nPLATFORM_ID=\"platform:el9\"\nPRETTY_NAME=\"Red Hat Enterprise Linux 9.4 (Plow)\"\nANSI_COLOR=\"0;31\"\n";
    /// Rocky Linux 9.
    pub const ROCKY_9: &str = "NAME=\"Rocky Linux\"\nVERSION=\"9.3 (Blue Onyx)\"\nID=\"rocky\"\nID_LIKE=\"rhel centos fedora\"\nVERSION_ID=\"9.3\"\nPLATFORM_ID=\"platform:el9\"\nPRETTY_NAME=\"Rocky Linux 9.3 (Blue Onyx)\"\n";
    /// Amazon Linux 2.
    pub const AMAZON_LINUX_2: &str = "NAME=\"Amazon Linux\"\nVERSION=\"2\"\nID=\"amzn\"\nID_LIKE=\"centos rhel fedora\"\nVERSION_ID=\"2\"\nPRETTY_NAME=\"Amazon Linux 2\"\nANSI_COLOR=\"0;33\"\n";
    /// Amazon Linux 2023.
    pub const AMAZON_LINUX_2023: &str = "NAME=\"Amazon Linux\"\nVERSION=\"2023\"\nID=\"amzn\"\nID_LIKE=\"fedora\"\nVERSION_ID=\"2023\"\nPLATFORM_ID=\"platform:al2023\"\nPRETTY_NAME=\"Amazon Linux 2023.4.20240401\"\n";
    /// Fedora 40.
    pub const FEDORA_40: &str = "NAME=\"Fedora Linux\"\nVERSION=\"40 (Cloud Edition)\"\nID=fedora\nVERSION_ID=40\nPRETTY_NAME=\"Fedora Linux 40 (Cloud Edition)\"\n";
    /// An unsupported distribution (openSUSE).
    pub const OPENSUSE: &str = "NAME=\"openSUSE Leap\"\nVERSION=\"15.5\"\nID=\"opensuse-leap\"\nID_LIKE=\"suse opensuse\"\nVERSION_ID=\"15.5\"\n";
}

#[cfg(test)]
mod tests {
    use super::fixtures::*;
    use super::*;

    #[test]
    fn detects_the_family_of_every_supported_distribution() {
        for (text, id, version, family) in [
            (UBUNTU_2204, "ubuntu", "22.04", Family::Debian),
            (UBUNTU_2404, "ubuntu", "24.04", Family::Debian),
            (DEBIAN_12, "debian", "12", Family::Debian),
            (RHEL_9, "rhel", "9.4", Family::Rhel),
            (ROCKY_9, "rocky", "9.3", Family::Rhel),
            (AMAZON_LINUX_2, "amzn", "2", Family::Rhel),
            (AMAZON_LINUX_2023, "amzn", "2023", Family::Rhel),
            (FEDORA_40, "fedora", "40", Family::Rhel),
        ] {
            let os = OsRelease::parse(text);
            assert_eq!((os.id().as_str(), os.version_id()), (id, version));
            assert_eq!(os.family().unwrap(), family, "{id}");
        }
    }

    #[test]
    fn falls_back_to_id_like() {
        let os = OsRelease::parse("ID=mycorp\nID_LIKE=\"ubuntu debian\"\n");
        assert_eq!(os.family().unwrap(), Family::Debian);
    }

    #[test]
    fn unknown_distribution_names_id_and_id_like() {
        let e = OsRelease::parse(OPENSUSE).family().unwrap_err().to_string();
        assert!(
            e.contains("ID=\"opensuse-leap\"") && e.contains("ID_LIKE=\"suse opensuse\""),
            "{e}"
        );
    }

    #[test]
    fn parses_quotes_escapes_and_comments() {
        let os = OsRelease::parse(
            "# comment\n\nNAME='single quoted'\nPRETTY_NAME=\"a \\\"b\\\" \\$c\"\nBROKEN LINE\nID=Debian\n",
        );
        assert_eq!(os.get("NAME"), Some("single quoted"));
        assert_eq!(os.get("PRETTY_NAME"), Some("a \"b\" $c"));
        assert_eq!(os.id(), "debian");
        assert_eq!(OsRelease::parse("").id(), "linux");
    }

    #[test]
    fn reads_usr_lib_os_release_when_etc_has_none() {
        let d = tempfile::tempdir().unwrap();
        let h = Host::new(d.path(), crate::host::command::RecordingRunner::succeeding());
        assert!(OsRelease::read(&h).unwrap_err().to_string().contains("/etc/os-release"));
        h.write("/usr/lib/os-release", DEBIAN_12.as_bytes(), 0o644).unwrap();
        assert_eq!(OsRelease::read(&h).unwrap().family().unwrap(), Family::Debian);
    }

    #[test]
    fn container_optimized_os_and_a_tmpfs_etc_are_stateless() {
        use crate::host::command::RecordingRunner;
        let d = tempfile::tempdir().unwrap();
        let h = Host::new(d.path(), RecordingRunner::succeeding());
        h.write("/etc/os-release", b"ID=ubuntu\nVERSION_ID=24.04\n", 0o644)
            .unwrap();
        h.write("/proc/mounts", b"/dev/vda1 / ext4 rw 0 0\n", 0o444).unwrap();
        assert_eq!(stateless_etc(&h).unwrap(), None);
        h.write(
            "/proc/mounts",
            b"/dev/vda1 / ext4 rw 0 0\ntmpfs /etc tmpfs rw 0 0\n",
            0o444,
        )
        .unwrap();
        assert_eq!(
            stateless_etc(&h).unwrap().as_deref(),
            Some("/proc/mounts shows /etc on a tmpfs")
        );
        h.write(
            "/etc/os-release",
            b"ID=cos\nPRETTY_NAME=\"Container-Optimized OS from Google\"\n",
            0o644,
        )
        .unwrap();
        let why = stateless_etc(&h).unwrap().unwrap();
        assert!(
            why.contains("ID=cos") && why.contains("Container-Optimized OS from Google"),
            "{why}"
        );
    }
}

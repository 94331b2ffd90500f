// SPDX-License-Identifier: Apache-2.0
//! What kdump is called on this host's distribution family: the package, the service,
//! the service's configuration file, and whether the kernel understands
//! `crashkernel=auto`.

use skyhook_core::os::distro::{Family, OsRelease};
use skyhook_core::{Result, Step};

/// The Debian-like GRUB drop-in that kdump-tools ships with its own `crashkernel=`
/// default, and that the package (like the bash package before it) takes over.
pub const DEBIAN_DROP_IN: &str = "/etc/default/grub.d/kdump-tools.cfg";

/// debconf answers given before installing on Debian-like hosts: kdump enabled (the
/// package's "enable kdump" question), and kexec-tools not taking over ordinary
/// reboots (a kexec reboot skips the firmware, and with it the GPUs' reset).
pub const DEBCONF_SELECTIONS: &str =
    "kdump-tools kdump-tools/use_kdump boolean true\nkexec-tools kexec-tools/load_kexec boolean false\n";

/// The host's distribution as far as kdump is concerned.
#[derive(Debug, Clone)]
pub struct Platform {
    /// The family.
    pub family: Family,
    /// The os-release it was read from.
    pub os: OsRelease,
}

impl Platform {
    /// The platform of the step's host (an unsupported distribution is an error).
    pub fn detect(step: &Step) -> Result<Self> {
        let os = step.os_release()?.clone();
        let family = step.family()?;
        Ok(Platform { family, os })
    }

    /// A platform from os-release text (tests).
    pub fn from_os_release(text: &str) -> Result<Self> {
        let os = OsRelease::parse(text);
        let family = os.family()?;
        Ok(Platform { family, os })
    }

    /// The package that brings kdump: `kdump-tools` or `kexec-tools`.
    pub fn package(&self) -> &'static str {
        match self.family {
            Family::Debian => "kdump-tools",
            Family::Rhel => "kexec-tools",
        }
    }

    /// The service that loads the crash kernel: `kdump-tools` or `kdump`.
    pub fn service(&self) -> &'static str {
        match self.family {
            Family::Debian => "kdump-tools",
            Family::Rhel => "kdump",
        }
    }

    /// Where the `kdump.conf` configMap value goes: `/etc/default/kdump-tools` or `/etc/kdump.conf`.
    pub fn kdump_conf(&self) -> &'static str {
        match self.family {
            Family::Debian => "/etc/default/kdump-tools",
            Family::Rhel => "/etc/kdump.conf",
        }
    }

    /// Whether the service's configuration has a `USE_KDUMP` switch that must be 1
    /// for a crash kernel to load (kdump-tools' `/etc/default/kdump-tools`).
    pub fn has_use_kdump(&self) -> bool {
        match self.family {
            Family::Debian => true,
            Family::Rhel => false,
        }
    }

    /// Whether kdumpctl runs the service (kexec-tools, whose `kdump.service` comes
    /// from kdump-utils on RHEL 10 and Fedora 41+): it knows `auto_reset_crashkernel`
    /// and may reset the boot entries' `crashkernel=` on grubby hosts.
    pub fn has_kdumpctl(&self) -> bool {
        match self.family {
            Family::Debian => false,
            Family::Rhel => true,
        }
    }

    /// Commands that show why the service did not load a crash kernel.
    pub fn status_hint(&self) -> String {
        match self.family {
            Family::Debian => format!(
                "`kdump-config show`, `systemctl status {0}` and `journalctl -b -u {0}`",
                self.service()
            ),
            Family::Rhel => format!(
                "`kdumpctl status`, `systemctl status {0}` and `journalctl -b -u {0}`",
                self.service()
            ),
        }
    }

    /// Whether the distribution's kernel still understands `crashkernel=auto`: only
    /// RHEL and its rebuilds before version 9. Upstream kernels (Debian, Ubuntu,
    /// Fedora, Amazon Linux) never had it; RHEL 9 dropped it.
    pub fn supports_auto(&self) -> bool {
        const EL: &[&str] = &["rhel", "centos", "rocky", "almalinux", "ol", "scientific", "eurolinux"];
        let major: Option<u32> = self.os.version_id().split('.').next().and_then(|m| m.parse().ok());
        EL.contains(&self.os.id().as_str()) && major.is_some_and(|m| m < 9)
    }

    /// A name for messages: `Ubuntu 24.04.1 LTS`.
    pub fn name(&self) -> String {
        self.os
            .get("PRETTY_NAME")
            .map(str::to_string)
            .unwrap_or_else(|| format!("{} {}", self.os.id(), self.os.version_id()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use skyhook_core::os::distro::fixtures::*;

    #[test]
    fn names_per_family() {
        for (text, package, service, conf) in [
            (UBUNTU_2404, "kdump-tools", "kdump-tools", "/etc/default/kdump-tools"),
            (DEBIAN_12, "kdump-tools", "kdump-tools", "/etc/default/kdump-tools"),
            (RHEL_9, "kexec-tools", "kdump", "/etc/kdump.conf"),
            (ROCKY_9, "kexec-tools", "kdump", "/etc/kdump.conf"),
            (AMAZON_LINUX_2023, "kexec-tools", "kdump", "/etc/kdump.conf"),
        ] {
            let p = Platform::from_os_release(text).unwrap();
            assert_eq!((p.package(), p.service(), p.kdump_conf()), (package, service, conf));
            let debian = package == "kdump-tools";
            assert_eq!((p.has_use_kdump(), p.has_kdumpctl()), (debian, !debian), "{text}");
        }
    }

    #[test]
    fn only_rhel_before_9_understands_auto() {
        let rhel8 = "ID=\"rhel\"\nID_LIKE=\"fedora\"\nVERSION_ID=\"8.10\"\n";
        let centos7 = "ID=\"centos\"\nID_LIKE=\"rhel fedora\"\nVERSION_ID=\"7\"\n";
        for text in [rhel8, centos7] {
            assert!(Platform::from_os_release(text).unwrap().supports_auto(), "{text}");
        }
        for text in [
            UBUNTU_2404,
            DEBIAN_12,
            RHEL_9,
            ROCKY_9,
            AMAZON_LINUX_2023,
            AMAZON_LINUX_2,
            FEDORA_40,
        ] {
            assert!(!Platform::from_os_release(text).unwrap().supports_auto(), "{text}");
        }
    }
}

// SPDX-License-Identifier: Apache-2.0
//! The kernel command line: the arguments a package adds to the boot configuration
//! (GRUB), how that configuration is regenerated on each family, and the command line
//! the running kernel was booted with.
//!
//! - Debian-like: a drop-in `/etc/default/grub.d/<name>.cfg` that appends to the
//!   distribution's `GRUB_CMDLINE_LINUX_DEFAULT` (never replaces it), then `update-grub`.
//! - RHEL-like: `grubby --update-kernel=ALL --args/--remove-args`, the distribution's
//!   way; without grubby, `/etc/default/grub` and `grub2-mkconfig` writing to the
//!   configuration the firmware boots (BIOS or EFI).

use std::path::PathBuf;

use crate::command::Cmd;
use crate::distro::Family;
use crate::error::{Error, Result};
use crate::host::Host;

/// How this host's boot configuration takes extra kernel arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BootConfig {
    /// Drop-ins in `/etc/default/grub.d`, applied by `update-grub` (or `grub-mkconfig`).
    GrubDropIns {
        /// The generated configuration (`/boot/grub/grub.cfg`).
        output: PathBuf,
    },
    /// `grubby` edits every kernel entry directly.
    Grubby,
    /// `GRUB_CMDLINE_LINUX` in `/etc/default/grub`, applied by `grub2-mkconfig -o <output>`.
    GrubDefault {
        /// The configuration the firmware boots.
        output: PathBuf,
    },
}

/// The Debian-like drop-in directory.
pub const DROP_IN_DIR: &str = "/etc/default/grub.d";

impl BootConfig {
    /// The boot configuration of `host`; a host without GRUB is a clear error.
    pub fn detect(host: &Host, family: Family) -> Result<Self> {
        let found = match family {
            Family::Debian if host.which("update-grub").is_some() || host.which("grub-mkconfig").is_some() => {
                Some(BootConfig::GrubDropIns {
                    output: PathBuf::from("/boot/grub/grub.cfg"),
                })
            }
            Family::Rhel if host.which("grubby").is_some() => Some(BootConfig::Grubby),
            Family::Rhel if host.which("grub2-mkconfig").is_some() => Some(BootConfig::GrubDefault {
                output: grub2_output(host),
            }),
            _ => None,
        };
        found.ok_or_else(|| {
            let tools = match family {
                Family::Debian => "update-grub or grub-mkconfig",
                Family::Rhel => "grubby or grub2-mkconfig",
            };
            Error::action(format!(
                "this {family} host has no GRUB ({tools} not found), so kernel arguments cannot be set; \
                 install GRUB or remove the kernel arguments from the configMap"
            ))
        })
    }

    /// Regenerates the boot configuration after a drop-in or `/etc/default/grub`
    /// changed (nothing to do with grubby, which edits the entries itself).
    pub fn regenerate(&self, host: &Host) -> Result<()> {
        let cmd = match self {
            BootConfig::Grubby => return Ok(()),
            BootConfig::GrubDropIns { output } => {
                if host.which("update-grub").is_some() {
                    Cmd::new("update-grub")
                } else {
                    Cmd::new("grub-mkconfig").arg("-o").arg(output.to_string_lossy())
                }
            }
            BootConfig::GrubDefault { output } => Cmd::new("grub2-mkconfig").arg("-o").arg(output.to_string_lossy()),
        };
        log::info!("regenerating the boot configuration: {}", cmd.display());
        host.run_ok(&cmd.echo())?;
        Ok(())
    }

    /// The kernel arguments of every boot entry, as the boot configuration holds them
    /// now: the `linux` lines of the generated grub.cfg, or `grubby --info=ALL`.
    pub fn entries(&self, host: &Host) -> Result<Vec<Vec<String>>> {
        match self {
            BootConfig::Grubby => {
                let out = host.run_ok(&Cmd::new("grubby").arg("--info=ALL"))?;
                Ok(out
                    .stdout
                    .lines()
                    .filter_map(|l| l.trim().strip_prefix("args="))
                    .map(|a| split_cmdline(a.trim_matches('"')))
                    .collect())
            }
            BootConfig::GrubDropIns { output } | BootConfig::GrubDefault { output } => {
                let text = host.read_to_string(output)?.unwrap_or_default();
                Ok(text
                    .lines()
                    .filter_map(|l| {
                        let mut words = l.trim_start().splitn(3, char::is_whitespace);
                        match (words.next(), words.next()) {
                            (Some("linux" | "linuxefi" | "linux16"), Some(_kernel)) => {
                                Some(split_cmdline(words.next().unwrap_or("")))
                            }
                            _ => None,
                        }
                    })
                    .collect())
            }
        }
    }
}

/// Where `grub2-mkconfig` must write: the EFI vendor directory's grub.cfg when the
/// host boots by EFI and that file is a full configuration (RHEL 8 and older), else
/// `/boot/grub2/grub.cfg` (BIOS, and RHEL 9+ where the EFI file only chains to it).
pub fn grub2_output(host: &Host) -> PathBuf {
    if host.exists("/sys/firmware/efi") {
        for vendor in host.list_dir("/boot/efi/EFI").unwrap_or_default() {
            let cfg = PathBuf::from("/boot/efi/EFI").join(&vendor).join("grub.cfg");
            if let Ok(Some(text)) = host.read_to_string(&cfg)
                && !is_chaining_stub(&text)
            {
                return cfg;
            }
        }
    }
    PathBuf::from("/boot/grub2/grub.cfg")
}

fn is_chaining_stub(text: &str) -> bool {
    text.contains("configfile") && !text.lines().any(|l| l.trim_start().starts_with("menuentry"))
}

/// Checks one kernel argument for the boot configuration: non-empty, no whitespace,
/// no quotes, backslashes, `$` or backticks (they would be interpreted by the shell
/// that reads GRUB's defaults), no control characters. Returns why it is refused.
pub fn check_arg(arg: &str) -> std::result::Result<(), String> {
    if arg.is_empty() {
        return Err("empty argument".into());
    }
    if let Some(c) = arg.chars().find(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!("contains {c:?}; give one argument per line, without spaces"));
    }
    if let Some(c) = arg.chars().find(|c| matches!(c, '"' | '\'' | '\\' | '$' | '`')) {
        return Err(format!(
            "contains {c:?}, which GRUB's shell-sourced defaults would interpret"
        ));
    }
    if arg.starts_with('=') {
        return Err("starts with '='; expected name or name=value".into());
    }
    Ok(())
}

/// The text of a Debian-like drop-in appending `args` to the distribution's
/// `GRUB_CMDLINE_LINUX_DEFAULT`. `args` must have passed [`check_arg`].
pub fn render_drop_in(header: &str, args: &[String]) -> String {
    let mut text = String::new();
    for line in header.lines() {
        text.push_str("# ");
        text.push_str(line);
        text.push('\n');
    }
    text.push_str(&format!(
        "GRUB_CMDLINE_LINUX_DEFAULT=\"${{GRUB_CMDLINE_LINUX_DEFAULT}} {}\"\n",
        args.join(" ")
    ));
    text
}

/// The arguments a drop-in written by [`render_drop_in`] appends (empty for any other text).
pub fn parse_drop_in(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("GRUB_CMDLINE_LINUX_DEFAULT=\"${GRUB_CMDLINE_LINUX_DEFAULT}"))
        .flat_map(|rest| split_cmdline(rest.trim_end_matches('"')))
        .collect()
}

/// Splits a kernel command line into arguments: whitespace-separated, double quotes
/// grouping (kept in the argument, as `/proc/cmdline` shows them).
pub fn split_cmdline(text: &str) -> Vec<String> {
    let mut args = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    for c in text.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                current.push(c);
            }
            c if c.is_whitespace() && !quoted => {
                if !current.is_empty() {
                    args.push(std::mem::take(&mut current));
                }
            }
            c => current.push(c),
        }
    }
    if !current.is_empty() {
        args.push(current);
    }
    args
}

/// The arguments the running kernel was booted with (`/proc/cmdline`).
pub fn running_cmdline(host: &Host) -> Result<Vec<String>> {
    let text = host
        .read_to_string("/proc/cmdline")?
        .ok_or_else(|| Error::action("/proc/cmdline does not exist: is /proc mounted on this host?"))?;
    Ok(split_cmdline(&text))
}

/// Whether `wanted` appear in `cmdline` as whole arguments and in the same relative
/// order (so that repeated keys such as `hugepagesz=1G hugepages=4 hugepagesz=2M
/// hugepages=512` pair up as intended).
pub fn contains_in_order(cmdline: &[String], wanted: &[String]) -> bool {
    let mut rest = cmdline.iter();
    wanted.iter().all(|w| rest.any(|a| a == w))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::{Output, RecordingRunner};

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    fn host_with(programs: &'static [&'static str]) -> (tempfile::TempDir, Host) {
        let d = tempfile::tempdir().unwrap();
        let h = Host::new(
            d.path(),
            RecordingRunner::new(move |c| {
                if c.program == "which" {
                    let found = programs.contains(&c.args[0].as_str());
                    return Ok(Output::exited(
                        if found { 0 } else { 1 },
                        format!("/usr/sbin/{}", c.args[0]),
                    ));
                }
                if c.program == "grubby" {
                    return Ok(Output::exited(
                        0,
                        "index=0\nkernel=\"/boot/vmlinuz-5.14\"\nargs=\"ro crashkernel=1G-4G:192M,4G-64G:256M rhgb quiet\"\nroot=UUID=x\nindex=1\nargs=\"ro quiet\"\n",
                    ));
                }
                Ok(Output::exited(0, ""))
            }),
        );
        (d, h)
    }

    #[test]
    fn detects_the_boot_configuration_per_family() {
        let (_d, h) = host_with(&["update-grub"]);
        assert!(matches!(
            BootConfig::detect(&h, Family::Debian).unwrap(),
            BootConfig::GrubDropIns { .. }
        ));
        let (_d, h) = host_with(&["grubby", "grub2-mkconfig"]);
        assert_eq!(BootConfig::detect(&h, Family::Rhel).unwrap(), BootConfig::Grubby);
        let (_d, h) = host_with(&["grub2-mkconfig"]);
        assert_eq!(
            BootConfig::detect(&h, Family::Rhel).unwrap(),
            BootConfig::GrubDefault {
                output: "/boot/grub2/grub.cfg".into()
            }
        );
        let (_d, h) = host_with(&[]);
        let e = BootConfig::detect(&h, Family::Debian).unwrap_err().to_string();
        assert!(e.contains("has no GRUB") && e.contains("update-grub"), "{e}");
    }

    #[test]
    fn grub2_output_follows_the_firmware() {
        let (_d, h) = host_with(&[]);
        assert_eq!(grub2_output(&h), PathBuf::from("/boot/grub2/grub.cfg"), "BIOS");
        h.write("/sys/firmware/efi/runtime", b"", 0o644).unwrap();
        h.write(
            "/boot/efi/EFI/rocky/grub.cfg",
            b"search --no-floppy --fs-uuid --set=dev x\nset prefix=($dev)/grub2\nconfigfile $prefix/grub.cfg\n",
            0o644,
        )
        .unwrap();
        assert_eq!(
            grub2_output(&h),
            PathBuf::from("/boot/grub2/grub.cfg"),
            "EFI stub chains to /boot/grub2"
        );
        h.write(
            "/boot/efi/EFI/redhat/grub.cfg",
            b"menuentry 'RHEL 8' {\n linuxefi /vmlinuz ro\n}\n",
            0o644,
        )
        .unwrap();
        assert_eq!(
            grub2_output(&h),
            PathBuf::from("/boot/efi/EFI/redhat/grub.cfg"),
            "EFI full config"
        );
    }

    #[test]
    fn drop_in_appends_to_the_distribution_default_and_parses_back() {
        let args = s(&["hugepagesz=1G", "hugepages=4", "iommu=pt"]);
        let text = render_drop_in("written by tuning\nline two", &args);
        assert_eq!(
            text,
            "# written by tuning\n# line two\nGRUB_CMDLINE_LINUX_DEFAULT=\"${GRUB_CMDLINE_LINUX_DEFAULT} hugepagesz=1G hugepages=4 iommu=pt\"\n"
        );
        assert_eq!(parse_drop_in(&text), args);
        assert!(parse_drop_in("GRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"\n").is_empty());
    }

    #[test]
    fn refuses_arguments_a_shell_would_interpret() {
        for good in [
            "quiet",
            "crashkernel=1G-4G:192M,4G-:256M",
            "isolcpus=2-7",
            "console=ttyS0,115200n8",
        ] {
            assert!(check_arg(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "a b",
            "a\"b",
            "x='1'",
            "a\\b",
            "$(reboot)",
            "`id`",
            "a\nb",
            "=1",
            "a\0b",
        ] {
            assert!(check_arg(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn reads_boot_entries_from_grub_cfg_and_grubby() {
        let (_d, h) = host_with(&["grubby"]);
        let entries = BootConfig::Grubby.entries(&h).unwrap();
        assert_eq!(
            entries,
            vec![
                s(&["ro", "crashkernel=1G-4G:192M,4G-64G:256M", "rhgb", "quiet"]),
                s(&["ro", "quiet"])
            ]
        );
        h.write("/boot/grub/grub.cfg", b"menuentry 'Debian' {\n\tlinux\t/boot/vmlinuz-6.1 root=UUID=1 ro  quiet crashkernel=256M\n\tinitrd /boot/initrd\n}\n", 0o644).unwrap();
        let cfg = BootConfig::GrubDropIns {
            output: "/boot/grub/grub.cfg".into(),
        };
        assert_eq!(
            cfg.entries(&h).unwrap(),
            vec![s(&["root=UUID=1", "ro", "quiet", "crashkernel=256M"])]
        );
    }

    #[test]
    fn cmdline_tokens_are_whole_and_ordered() {
        let cmd = split_cmdline(
            "BOOT_IMAGE=/vmlinuz ro quiet dyndbg=\"file x.c +p\" hugepagesz=1G hugepages=4 hugepagesz=2M hugepages=512\n",
        );
        assert_eq!(cmd[3], "dyndbg=\"file x.c +p\"");
        assert!(contains_in_order(
            &cmd,
            &s(&["hugepagesz=1G", "hugepages=4", "hugepagesz=2M", "hugepages=512"])
        ));
        assert!(
            !contains_in_order(&cmd, &s(&["hugepagesz=2M", "hugepages=4"])),
            "order matters"
        );
        assert!(
            !contains_in_order(&s(&["crashkernel=1256M"]), &s(&["crashkernel=256M"])),
            "whole tokens only"
        );
    }

    #[test]
    fn regenerates_with_the_familys_tool() {
        let d = tempfile::tempdir().unwrap();
        let runner = std::sync::Arc::new(RecordingRunner::new(|c| {
            Ok(Output::exited(
                if c.program == "which" && c.args[0] == "update-grub" {
                    1
                } else {
                    0
                },
                "",
            ))
        }));
        let h = Host::new(d.path(), runner.clone());
        BootConfig::GrubDefault {
            output: "/boot/efi/EFI/redhat/grub.cfg".into(),
        }
        .regenerate(&h)
        .unwrap();
        BootConfig::Grubby.regenerate(&h).unwrap();
        BootConfig::GrubDropIns {
            output: "/boot/grub/grub.cfg".into(),
        }
        .regenerate(&h)
        .unwrap();
        let calls: Vec<String> = runner.calls().into_iter().filter(|c| !c.starts_with("which")).collect();
        assert_eq!(
            calls,
            [
                "grub2-mkconfig -o /boot/efi/EFI/redhat/grub.cfg",
                "grub-mkconfig -o /boot/grub/grub.cfg"
            ]
        );
    }
}

// SPDX-License-Identifier: Apache-2.0
//! The PCIe ACS correction's and the IOMMU passthrough workaround's kernel arguments
//! on RHEL-like hosts (Oracle Linux on OCI), where no GRUB reads
//! `/etc/default/grub.d`: they are put on the boot configuration the family's own
//! way through core's [`OwnArgs`] — grubby (each entry's arguments of the same key
//! recorded first and given back exactly: with grubby-bls every entry's `options`
//! line, `/etc/default/grub` and `/etc/kernel/cmdline`), or without grubby appended
//! to `GRUB_CMDLINE_LINUX` in `/etc/default/grub` and `grub2-mkconfig` — with the
//! record ([`Changes::kernel_args`](super::ledger::Changes::kernel_args)) saved
//! before every change, so that a rerun, switching a step off and uninstall (from
//! the record alone) converge and give the files back byte for byte.
//!
//! The ACS argument's value comes from the node's tool, as on Debian-family hosts:
//! `rdma_topo write-grub-acs --dry-run` prints the drop-in it would write and
//! changes nothing (no file, no `update-grub`, which RHEL-like hosts do not have),
//! and the `pci=config_acs=…` of that text is taken. A value naming several ports
//! (`…@A;…@B`, as on a GB300 with several RoCE NICs) is set with the value
//! double-quoted, `pci="config_acs=…@A;…@B"`: GRUB reads `;` as the end of a
//! command outside quotes, and drops the quotes before the kernel (which strips them
//! itself when given them, as from `/etc/kernel/cmdline`). grubby-bls puts it on the
//! `options` lines and `/etc/kernel/cmdline` as given; in `/etc/default/grub`, which
//! grub2-mkconfig sources, core writes it escaped (`pci=\"config_acs=…\"`). The
//! running command line shows it as the boot loader passed it, so ours is compared
//! without its quotes. A value that is not a `;`-separated list of
//! `<flags>@<PCI address>` (a newline, `$(…)`, a backtick, an unbalanced quote) is
//! refused before any change, naming it.
//!
//! The effective value must be ours: the kernel takes the last `iommu.passthrough`
//! and the last `pci=config_acs=`. grubby-bls puts ours at the end of every entry
//! (removing the others of the key); the C grubby replaces only the first of a key,
//! so an entry repeating it is refused; grubby also replaces every `pci=` argument,
//! so an entry or `GRUB_CMDLINE_LINUX` holding another `pci=` option is refused
//! rather than losing it. Without grubby, GRUB puts `GRUB_CMDLINE_LINUX_DEFAULT`
//! after `GRUB_CMDLINE_LINUX`, so the same key there is refused, naming the line.

use std::path::Path;

use skyhook_core::boot::cmdline::{check_arg, key_of, running_cmdline, unquoted};
use skyhook_core::boot::defaults::{GRUB_DEFAULTS, assignment_args};
use skyhook_core::boot::grubby::{self, Flavor};
use skyhook_core::boot::{BootConfig, OwnArgs};
use skyhook_core::error::excerpt;
use skyhook_core::host::command::Cmd;
use skyhook_core::{Error, Host, Interrupt, Result};

use super::ledger::Ledger;
use super::pcie_acs::{self, Acs, TOOL};

/// The prefix of the ACS argument.
pub const ACS_PREFIX: &str = "pci=config_acs=";
/// The IOMMU workaround's argument.
pub const IOMMU_ARG: &str = "iommu.passthrough=0";
/// The IOMMU argument's key.
const IOMMU_KEY: &str = "iommu.passthrough";
/// The variable GRUB puts after `GRUB_CMDLINE_LINUX`.
const DEFAULT_VAR: &str = "GRUB_CMDLINE_LINUX_DEFAULT";
/// The drop-in [`OwnArgs`] would use on a Debian-family host; never written here
/// (only the drop-in method writes it), named so that it is never another's file.
const UNUSED_DROP_IN: &str = "/etc/default/grub.d/99-nvidia-tuned-host-steps.cfg";

/// Whether `arg` is the ACS argument (quoted or not).
pub fn is_acs(arg: &str) -> bool {
    unquoted(arg).starts_with(ACS_PREFIX)
}

/// Whether two arguments are the same as the kernel reads them (quotes aside).
fn same_arg(a: &str, b: &str) -> bool {
    unquoted(a) == unquoted(b)
}

/// The port list of the `pci=config_acs=` assignment in `rdma_topo write-grub-acs
/// --dry-run` output (an uncommented line; its quotes, escaped or not, removed):
/// `None` without one, `Err` (a bounded excerpt of the value, and why) when a quote
/// opened around it is not closed on that line.
pub fn parse_dry_run(text: &str) -> Option<std::result::Result<String, String>> {
    let rest = text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .find_map(|l| l.split_once(ACS_PREFIX).map(|(_, rest)| rest))?;
    for quote in ["\\\"", "\""] {
        if let Some(inner) = rest.strip_prefix(quote) {
            return Some(match inner.split_once(quote) {
                Some((list, after)) if after.is_empty() || after.starts_with(['"', ' ', '\t']) => Ok(list.to_string()),
                Some(_) => Err(format!("{} (text runs on after its closing quote)", excerpt(rest))),
                None => Err(format!("{} (its quote is not closed)", excerpt(rest))),
            });
        }
    }
    Some(Ok(rest
        .chars()
        .take_while(|c| !c.is_whitespace() && *c != '"' && *c != '\\')
        .collect()))
}

/// Why the port list cannot be set on a RHEL-like host (`None`: it can): items of
/// `<flags>@<PCI address>` (flags of `0`, `1`, `x`), separated by `;`.
pub fn list_problem(list: &str) -> Option<String> {
    if list.is_empty() {
        return Some("it is empty".into());
    }
    for item in list.split(';') {
        let ok = item.split_once('@').is_some_and(|(flags, dev)| {
            !flags.is_empty()
                && flags.chars().all(|c| matches!(c, '0' | '1' | 'x'))
                && !dev.is_empty()
                && dev.chars().all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.')
        });
        if !ok {
            return Some(format!(
                "{} is not <flags>@<PCI address> (ports are separated by ';')",
                excerpt(item)
            ));
        }
    }
    None
}

/// The kernel argument of a port list: its value double-quoted when it names several
/// ports (GRUB ends a command at an unquoted `;`).
pub fn acs_arg(list: &str) -> String {
    if list.contains(';') {
        format!("pci=\"config_acs={list}\"")
    } else {
        format!("{ACS_PREFIX}{list}")
    }
}

/// The ACS argument the node's tool would write (`rdma_topo write-grub-acs
/// --dry-run`, which changes nothing), refused (exit 1) when it cannot be set here.
pub fn acs_from_tool(host: &Host) -> Result<String> {
    let out = host.run_ok(&Cmd::new(TOOL).arg("write-grub-acs").arg("--dry-run"))?;
    let what = format!("`{TOOL} write-grub-acs --dry-run`");
    let refuse = |value: &str, why: &str| {
        Error::action(format!(
            "pcie-acs: {what} gives {value} as the {ACS_PREFIX} value, which cannot be set on this RHEL-like node: \
             {why}. \
             Nothing was changed. Run `{TOOL} check` and {what} by hand to see why, set CONFIGURE_PCIE_ACS=false \
             in the package's env (nvidia_peermem and NCCL_DMABUF_ENABLE=0 then stay required), or put the \
             argument on the boot entries by hand"
        ))
    };
    let list = match parse_dry_run(&out.stdout) {
        None => {
            return Err(Error::action(format!(
                "pcie-acs: {what} printed no {ACS_PREFIX} assignment, so there is no correction to set on this \
                 RHEL-like node; nothing was changed. Run `{TOOL} check` and {what} by hand to see why, or set \
                 CONFIGURE_PCIE_ACS=false in the package's env"
            )));
        }
        Some(Err(why)) => return Err(refuse(&why, "the value is not well formed")),
        Some(Ok(list)) => list,
    };
    if let Some(why) = list_problem(&list) {
        return Err(refuse(&excerpt(&list), &why));
    }
    let arg = acs_arg(&list);
    check_arg(&arg).map_err(|why| refuse(&excerpt(&list), &why))?;
    Ok(arg)
}

/// The arguments the plan wants, ACS first and the IOMMU argument last. ACS: none
/// when off; when `rdma_topo check` reports the settings correct, the recorded one
/// (the correction already acting) or none; else the tool's.
pub fn wanted(ledger: &Ledger, pcie_acs: bool, iommu: bool) -> Result<Vec<String>> {
    let host = ledger.host();
    let mut args = Vec::new();
    if pcie_acs {
        let recorded = ledger.changes.kernel_args.args.iter().find(|a| is_acs(a)).cloned();
        match (pcie_acs::live(host)?, recorded) {
            (Acs::Correct, Some(arg)) => args.push(arg),
            (Acs::Correct, None) => {
                log::info!("pcie-acs: {TOOL} check reports the ACS settings correct; nothing to do")
            }
            _ => args.push(acs_from_tool(host)?),
        }
    }
    if iommu {
        args.push(IOMMU_ARG.to_string());
    }
    Ok(args)
}

/// The package's arguments on `boot`.
fn own<'a>(host: &'a Host, boot: &'a BootConfig) -> OwnArgs<'a> {
    OwnArgs {
        host,
        boot,
        drop_in: Path::new(UNUSED_DROP_IN),
        header: "",
    }
}

/// Whether the boot configuration already carries `wanted` as recorded.
pub fn is_current(ledger: &Ledger, boot: &BootConfig, wanted: &[String]) -> Result<bool> {
    own(ledger.host(), boot).is_current(&ledger.changes.kernel_args, wanted)
}

/// Refuses (exit 1, before any change) a boot configuration where `wanted` would
/// not be the effective value, naming the entry or line.
pub fn refuse_conflicts(host: &Host, boot: &BootConfig, wanted: &[String]) -> Result<()> {
    let acs = wanted.iter().any(|a| is_acs(a));
    let iommu = wanted.iter().any(|a| a == IOMMU_ARG);
    let refuse = |why: String| {
        Err(Error::action(format!(
            "{why}; nothing was changed. Remove that argument from the boot configuration, or set {} in the \
             package's env",
            if acs && !iommu {
                "CONFIGURE_PCIE_ACS=false"
            } else if iommu && !acs {
                "CONFIGURE_IOMMU_PASSTHROUGH=false"
            } else {
                "CONFIGURE_PCIE_ACS=false or CONFIGURE_IOMMU_PASSTHROUGH=false"
            }
        )))
    };
    let defaults = host.read(GRUB_DEFAULTS)?.unwrap_or_default();
    match boot {
        BootConfig::Grubby => {
            let flavor = Flavor::detect(host);
            if flavor == Flavor::Legacy
                && let Some(quoted) = wanted.iter().find(|a| a.contains('"'))
            {
                return refuse(format!(
                    "pcie-acs: {quoted} names several ports and needs its quotes kept on the boot line, which this \
                     node's C grubby (RHEL 7, Amazon Linux 2) is not known to do"
                ));
            }
            for e in grubby::entries(host)? {
                if acs && let Some(other) = e.args.iter().find(|a| key_of(a) == "pci" && !is_acs(a)) {
                    return refuse(format!(
                        "pcie-acs: the boot entry of {} carries {other}, and grubby replaces every pci= argument \
                         with {ACS_PREFIX}…, so that option would be lost",
                        e.kernel
                    ));
                }
                let repeated = e.args.iter().filter(|a| key_of(a) == IOMMU_KEY).count();
                if iommu && flavor == Flavor::Legacy && repeated > 1 {
                    return refuse(format!(
                        "iommu-passthrough: the boot entry of {} carries {IOMMU_KEY} {repeated} times, and this \
                         grubby replaces only the first, so {IOMMU_ARG} would not be the last one the kernel reads",
                        e.kernel
                    ));
                }
            }
            let linux = assignment_args(&defaults, "GRUB_CMDLINE_LINUX").unwrap_or_default();
            if acs && let Some(other) = linux.iter().find(|a| key_of(a) == "pci" && !is_acs(a)) {
                return refuse(format!(
                    "pcie-acs: GRUB_CMDLINE_LINUX in {GRUB_DEFAULTS} carries {other}, and grubby replaces every \
                     pci= argument with {ACS_PREFIX}…, so that option would be lost"
                ));
            }
        }
        BootConfig::GrubDefault { .. } => {
            let later = assignment_args(&defaults, DEFAULT_VAR).unwrap_or_default();
            let line = || {
                String::from_utf8_lossy(&defaults)
                    .lines()
                    .rfind(|l| l.trim_start().starts_with(&format!("{DEFAULT_VAR}=")))
                    .unwrap_or_default()
                    .trim()
                    .to_string()
            };
            if iommu && let Some(other) = later.iter().find(|a| key_of(a) == IOMMU_KEY) {
                return refuse(format!(
                    "iommu-passthrough: {GRUB_DEFAULTS} has `{}`: GRUB puts {DEFAULT_VAR} after GRUB_CMDLINE_LINUX, \
                     so its {other} would override the {IOMMU_ARG} this package appends to GRUB_CMDLINE_LINUX",
                    line()
                ));
            }
            if acs && let Some(other) = later.iter().find(|a| key_of(a) == "pci" && a.contains("config_acs=")) {
                return refuse(format!(
                    "pcie-acs: {GRUB_DEFAULTS} has `{}`: GRUB puts {DEFAULT_VAR} after GRUB_CMDLINE_LINUX, so its \
                     {other} would override the {ACS_PREFIX}… this package appends to GRUB_CMDLINE_LINUX",
                    line()
                ));
            }
        }
        BootConfig::GrubDropIns { .. } => {}
    }
    Ok(())
}

/// Makes `boot` carry `wanted` (nothing when empty) as the host steps' arguments, the
/// record saved before every change; a reboot when anything changed.
pub fn apply(ledger: &mut Ledger, boot: &BootConfig, wanted: &[String]) -> Result<Interrupt> {
    let host = ledger.host();
    let mut record = std::mem::take(&mut ledger.changes.kernel_args);
    let before = record.args.clone();
    let result = own(host, boot).apply(&mut record, wanted, &mut |r| {
        ledger.changes.kernel_args = r.clone();
        ledger.save()
    });
    ledger.changes.kernel_args = record;
    if !result? {
        return Ok(Interrupt::NoOp);
    }
    if wanted.is_empty() {
        log::info!(
            "took {} back off the boot configuration; the node's own settings return at the next boot (needs a \
             reboot)",
            before.join(" ")
        );
    } else {
        log::info!(
            "put {} on the boot configuration ({:?}); it takes effect at the next boot (needs a reboot)",
            wanted.join(" "),
            boot.method()
        );
    }
    Ok(Interrupt::Reboot)
}

/// What is unmet on a RHEL-like host. Before the reboot: the record carrying what is
/// wanted, and the default boot entry ending with our values. After it (`booted`):
/// ACS correct, and the last `iommu.passthrough` on `/proc/cmdline` not 1.
pub fn check(
    ledger: &Ledger,
    boot: Option<&BootConfig>,
    pcie_acs: bool,
    iommu: bool,
    booted: bool,
    unmet: &mut Vec<String>,
) -> Result<()> {
    let host = ledger.host();
    let record = &ledger.changes.kernel_args;
    if record.pending {
        unmet.push(
            "the host steps' kernel arguments were being changed when a run stopped; config finishes the change".into(),
        );
    }
    for arg in &record.args {
        let still = (is_acs(arg) && pcie_acs) || (arg == IOMMU_ARG && iommu);
        if !still {
            unmet.push(format!(
                "{arg} is still on the boot configuration although its step no longer applies; config takes it back"
            ));
        }
    }
    let first = match boot {
        Some(b) => b.entries(host)?.into_iter().next(),
        None => None,
    };
    if pcie_acs && pcie_acs::live(host)? != Acs::Correct {
        let ours = record.args.iter().find(|a| is_acs(a));
        if !booted {
            match (ours, &first) {
                (None, _) => unmet.push(format!(
                    "pcie-acs: {TOOL} check reports the ACS settings wrong and no {ACS_PREFIX} is on the boot \
                     configuration; config puts it on"
                )),
                (Some(arg), Some(entry)) if !entry.iter().rfind(|a| is_acs(a)).is_some_and(|a| same_arg(a, arg)) => unmet.push(format!(
                    "pcie-acs: the default boot entry's last {ACS_PREFIX} is not {arg} (it has: {}); config puts it on",
                    entry.join(" ")
                )),
                _ => {}
            }
        } else {
            let on = running_cmdline(host)?.iter().any(|a| is_acs(a));
            unmet.push(format!(
                "pcie-acs: the ACS correction did not take effect: {}. GPU↔NIC peer-to-peer DMA stays blocked; if \
                 this node cannot take the correction, set CONFIGURE_PCIE_ACS=false in the package's env",
                if on {
                    format!("the booted command line carries {ACS_PREFIX} but this kernel does not honour it")
                } else {
                    format!(
                        "the booted command line (/proc/cmdline) has no {ACS_PREFIX}: the node booted another entry"
                    )
                }
            ));
        }
    }
    if iommu {
        if !record.args.iter().any(|a| a == IOMMU_ARG) {
            unmet.push(format!(
                "iommu-passthrough: {IOMMU_ARG} is not on the boot configuration; config puts it on"
            ));
        } else if let Some(entry) = &first {
            let last = entry.iter().rfind(|a| key_of(a) == IOMMU_KEY);
            if last.map(String::as_str) != Some(IOMMU_ARG) {
                unmet.push(format!(
                    "iommu-passthrough: the default boot entry's last {IOMMU_KEY} is not {IOMMU_ARG} (it has: {}); \
                     config puts it on",
                    entry.join(" ")
                ));
            }
        }
        if booted {
            super::iommu_passthrough::check_booted(
                host,
                "the node booted an entry without it, or an argument after it on that entry overrides it",
                unmet,
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_value_rdma_topo_would_write() {
        let real = "# Generated by /usr/bin/rdma_topo do not change. ACS settings for RDMA GPU Direct\n\
                    GRUB_CMDLINE_LINUX=\"$GRUB_CMDLINE_LINUX pci=config_acs=\\\"xx111x0@0009:01:00.0\\\"\"\n";
        assert_eq!(parse_dry_run(real), Some(Ok("xx111x0@0009:01:00.0".into())));
        let plain = "GRUB_CMDLINE_LINUX_DEFAULT=\"$X pci=config_acs=xx111x0@0009:01:00.0\"\n";
        assert_eq!(parse_dry_run(plain), Some(Ok("xx111x0@0009:01:00.0".into())));
        assert_eq!(parse_dry_run("# pci=config_acs=1@0:0.0\n"), None);
        let two = "GRUB_CMDLINE_LINUX=\"$GRUB_CMDLINE_LINUX pci=config_acs=\\\"1@0:1.0;x@0:2.0\\\"\"\n";
        assert_eq!(parse_dry_run(two), Some(Ok("1@0:1.0;x@0:2.0".into())));
        let open = "GRUB_CMDLINE_LINUX=\"$GRUB_CMDLINE_LINUX pci=config_acs=\\\"1@0:1.0;\nx@0:2.0\\\"\"\n";
        assert!(parse_dry_run(open).is_some_and(|r| r.is_err_and(|w| w.contains("not closed"))));
        let runs_on = "GRUB_CMDLINE_LINUX=\"$GRUB_CMDLINE_LINUX pci=config_acs=\\\"1@0:1.0\\\";x@0:2.0\\\"\"\n";
        assert!(parse_dry_run(runs_on).is_some_and(|r| r.is_err_and(|w| w.contains("runs on"))));
    }

    #[test]
    fn one_port_is_set_bare_several_quoted() {
        assert_eq!(list_problem("xx111x0@0009:01:00.0"), None);
        assert_eq!(list_problem("xx110x1@0009:02:00.0;xx101x1@0009:02:02.0"), None);
        assert_eq!(acs_arg("1@0:1.0"), "pci=config_acs=1@0:1.0");
        assert_eq!(acs_arg("1@0:1.0;1@0:2.0"), "pci=\"config_acs=1@0:1.0;1@0:2.0\"");
        assert!(is_acs(&acs_arg("1@0:1.0;1@0:2.0")) && is_acs("pci=config_acs=1@0:1.0;1@0:2.0"));
        assert!(list_problem("xx1$(x)@0").is_some());
        assert!(list_problem("1@0:1.0;").is_some());
        assert!(list_problem("1@0:1.0;`id`@0").is_some());
        assert!(list_problem("").is_some());
    }
}

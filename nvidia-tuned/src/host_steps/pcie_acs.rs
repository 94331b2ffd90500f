// SPDX-License-Identifier: Apache-2.0
//! The PCIe ACS correction (upstream's `configure-pcie-acs`, #108): GB300 nodes on OCI
//! ship with ACS on the RoCE NICs' root ports, which blocks GPU↔NIC peer-to-peer DMA
//! (DMA-BUF fails, RDMA runs slower). The node's own `rdma_topo` reads the live state
//! (`rdma_topo check`: one `OK ACS …` or `FAIL ACS …` record per port) and, when it is
//! wrong, writes `pci=config_acs=…` with this node's PCI addresses into a GRUB drop-in
//! (`rdma_topo write-grub-acs`); the boot configuration is then regenerated and the
//! correction acts from the next boot (a reboot). Only the ACS records count, not the
//! tool's exit code: its check also asserts GPU topology, which needs the GPU driver
//! that cannot be installed before this package completes. Switched off with
//! `CONFIGURE_PCIE_ACS=false`; the drop-in's original (usually none) is recorded
//! before the tool runs and restored by uninstall or when switched off.

use std::path::Path;

use skyhook_core::boot::cmdline::running_cmdline;
use skyhook_core::host::command::Cmd;
use skyhook_core::{Error, Host, Interrupt, Result};

use super::ledger::Ledger;

/// The step's name in the record and the log.
pub const STEP: &str = "pcie-acs";
/// The node's tool.
pub const TOOL: &str = "rdma_topo";
/// The drop-in `rdma_topo write-grub-acs` writes.
pub const DROP_IN: &str = "/etc/default/grub.d/config-acs.cfg";
/// The kernel argument it carries.
const ARG: &str = "pci=config_acs=";

/// What `rdma_topo check` says about ACS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acs {
    /// At least one ACS record, none failing.
    Correct,
    /// A failing ACS record.
    Wrong,
    /// No ACS record (the tool could not read the ports): not evidence of either.
    Unknown,
}

/// Reads the ACS records of `rdma_topo check` output (`OK ACS …`, `FAIL ACS …`).
pub fn parse_check(output: &str) -> Acs {
    let mut seen = false;
    for line in output.lines() {
        let mut words = line.split_whitespace();
        let (Some(verdict), Some("ACS")) = (words.next(), words.next()) else {
            continue;
        };
        match verdict {
            "FAIL" => return Acs::Wrong,
            "OK" => seen = true,
            _ => {}
        }
    }
    if seen { Acs::Correct } else { Acs::Unknown }
}

/// Whether the drop-in text assigns `pci=config_acs=` on a line that is not a comment.
pub fn drop_in_active(text: &str) -> bool {
    text.lines()
        .any(|l| !l.trim_start().starts_with('#') && l.contains(ARG))
}

/// Refuses a node without the tool, naming it (nothing changed yet).
pub fn require_tool(host: &Host) -> Result<()> {
    if host.which(TOOL).is_none() {
        return Err(Error::action(format!(
            "pcie-acs: {TOOL} is not installed on this node (not found on PATH); it ships in OCI's GB300 node \
             image and is what reads and corrects the ACS settings. Use that image, or set \
             CONFIGURE_PCIE_ACS=false in the package's env to run without the correction (nvidia_peermem and \
             NCCL_DMABUF_ENABLE=0 then stay required)"
        )));
    }
    Ok(())
}

/// The live ACS state, from `rdma_topo check`.
pub fn live(host: &Host) -> Result<Acs> {
    let out = host.run(&Cmd::new(TOOL).arg("check"))?;
    Ok(parse_check(&format!("{}\n{}", out.stdout, out.stderr)))
}

/// Corrects ACS when it is wrong: records the drop-in, runs `write-grub-acs`, checks
/// what it wrote. The caller regenerates the boot configuration (owed in the record).
pub fn apply(ledger: &mut Ledger) -> Result<Interrupt> {
    let host = ledger.host();
    let state = live(host)?;
    if state == Acs::Correct {
        log::info!("pcie-acs: {TOOL} check reports the ACS settings correct; nothing to do");
        return Ok(Interrupt::NoOp);
    }
    ledger.take(STEP, Path::new(DROP_IN), false)?;
    ledger.owe_regeneration()?;
    host.run_ok(&Cmd::new(TOOL).arg("write-grub-acs").echo())?;
    let text = host.read_to_string(DROP_IN)?.unwrap_or_default();
    if !drop_in_active(&text) {
        return Err(Error::action(format!(
            "pcie-acs: `{TOOL} write-grub-acs` succeeded but {DROP_IN} holds no active {ARG} assignment, so the \
             correction cannot reach the kernel; run `{TOOL} check` and `{TOOL} write-grub-acs` by hand to see why"
        )));
    }
    log::info!(
        "pcie-acs: {TOOL} check reports {}; wrote {DROP_IN} with {TOOL} write-grub-acs. It takes effect at the \
         next boot (needs a reboot)",
        if state == Acs::Wrong {
            "wrong ACS settings"
        } else {
            "no ACS state"
        }
    );
    Ok(Interrupt::Reboot)
}

/// Takes the drop-in back (uninstall, `CONFIGURE_PCIE_ACS=false`, a pair that ships
/// no correction); a reboot when it changed. The caller regenerates.
pub fn remove(ledger: &mut Ledger) -> Result<Interrupt> {
    ledger.give_back_boot_drop_in(
        STEP,
        &format!("took {DROP_IN} back; the node's own ACS settings return at the next boot"),
    )
}

/// What is unmet. Before the reboot: ACS correct, or the drop-in active. After it
/// (`booted`): ACS correct, with the reason when not (the argument on `/proc/cmdline`
/// or not).
pub fn check(host: &Host, booted: bool, unmet: &mut Vec<String>) -> Result<()> {
    if host.which(TOOL).is_none() {
        unmet.push(format!(
            "pcie-acs: {TOOL} is not installed on this node, so the ACS settings cannot be read"
        ));
        return Ok(());
    }
    if live(host)? == Acs::Correct {
        return Ok(());
    }
    if !booted {
        let text = host.read_to_string(DROP_IN)?.unwrap_or_default();
        if !drop_in_active(&text) {
            unmet.push(format!(
                "pcie-acs: {TOOL} check reports the ACS settings wrong and {DROP_IN} holds no active {ARG}; \
                 config writes it"
            ));
        }
        return Ok(());
    }
    let on_cmdline = running_cmdline(host)?.iter().any(|a| a.starts_with(ARG));
    let why = if on_cmdline {
        format!(
            "the booted command line carries {ARG} but the ACS settings are still wrong: this kernel does not \
             honour {ARG}"
        )
    } else {
        format!(
            "the booted command line (/proc/cmdline) has no {ARG}, so {DROP_IN} never reached the kernel: look for \
             a later /etc/default/grub.d file overriding GRUB_CMDLINE_LINUX_DEFAULT and for the entry GRUB_DEFAULT \
             boots"
        )
    };
    unmet.push(format!(
        "pcie-acs: the ACS correction did not take effect: {why}. GPU↔NIC peer-to-peer DMA stays blocked (about 15% \
         less RDMA bandwidth, no DMA-BUF; workloads need nvidia_peermem and NCCL_DMABUF_ENABLE=0). If this node \
         cannot take the correction, set CONFIGURE_PCIE_ACS=false in the package's env"
    ));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_acs_records_count() {
        assert_eq!(parse_check("OK ACS 0008:00:00.0\nFAIL GPU iommu_group\n"), Acs::Correct);
        assert_eq!(parse_check("OK ACS a\nFAIL ACS 0009:00:00.0\n"), Acs::Wrong);
        assert_eq!(parse_check("ACS query unavailable\nFAIL GPU x\n"), Acs::Unknown);
        assert_eq!(parse_check("FAIL ACSX y\n"), Acs::Unknown);
    }

    #[test]
    fn a_commented_assignment_is_not_active() {
        assert!(drop_in_active(
            "GRUB_CMDLINE_LINUX_DEFAULT=\"$X pci=config_acs=1@0008:00:00.0\"\n"
        ));
        assert!(drop_in_active("\tGRUB_CMDLINE_LINUX_DEFAULT=\"pci=config_acs=1\"\n"));
        assert!(!drop_in_active("  # GRUB_CMDLINE_LINUX_DEFAULT=\"pci=config_acs=1\"\n"));
        assert!(!drop_in_active(""));
    }
}

// SPDX-License-Identifier: Apache-2.0
//! Host changes beyond tuned profiles that a service ships for an accelerator
//! (nodewright-packages' `oci` × `gb300`, #108/#111 and 0.8.0; of them only
//! [`rdma_vf_ipv6`] is shipped for `oci` with every accelerator, as upstream's oci
//! profile script runs it whatever the accelerator), one module per step:
//! [`nccl_topo`] the NCCL topology file at `TOPO_PATH`, [`rdma_vfs_ready`] the RDMA VF
//! boot gate, [`pcie_acs`] the PCIe ACS correction through the node's `rdma_topo`,
//! [`iommu_passthrough`] the IOMMU passthrough workaround, [`rdma_vf_ipv6`] IPv6 on the
//! RDMA VFs that exist already, [`spcx_cc`] DOCA Spectrum-X congestion control;
//! [`switches`] reads their
//! environment, [`ledger`] records what they changed; on RHEL-like hosts, whose GRUB
//! reads no `/etc/default/grub.d`, [`boot_args`] puts the ACS and IOMMU kernel
//! arguments on the boot configuration instead (grubby, or GRUB's defaults).
//!
//! [`Plan::read`] validates everything (switches, `TOPO_PATH` not under a link, the
//! tool present, GRUB present, on RHEL-like hosts the kernel arguments' values and
//! their effect) before config changes anything; [`apply`] converges
//! the node and says which interrupt it needs, naming the step; a pair that ships no
//! step gets none (and what an earlier pair left is taken back); [`uninstall`] goes by
//! the record alone, so it works without the configMap and env.

pub mod boot_args;
pub mod iommu_passthrough;
pub mod ledger;
pub mod nccl_topo;
pub mod pcie_acs;
pub mod rdma_vf_ipv6;
pub mod rdma_vfs_ready;
pub mod spcx_cc;
pub mod switches;

use std::path::Path;

use skyhook_core::boot::config::BootConfig;
use skyhook_core::os::distro::Family;
use skyhook_core::{Interrupt, Result, Step};

use crate::catalog::HostAssets;
use ledger::Ledger;
use switches::Switches;

/// The host steps this node gets.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The steps and files of the pair.
    pub assets: HostAssets,
    /// The switches (read only for a pair that ships a step).
    pub switches: Option<Switches>,
    /// Whether the IOMMU passthrough workaround applies on this node.
    pub iommu_wanted: bool,
    /// Whether SPCX congestion control runs (shipped, and `spcx_cc` not off).
    pub spcx_cc: bool,
    /// Its rails, found by [`Plan::preflight`].
    pub rails: Vec<String>,
    /// On RHEL-like hosts, found by [`Plan::preflight`]: the boot configuration and
    /// the kernel arguments the ACS and IOMMU steps want on it ([`boot_args`]).
    pub kernel_args: Option<(BootConfig, Vec<String>)>,
}

impl Plan {
    /// Reads the switches for `assets` when one of its steps has any (bad values are
    /// bad input, exit 2; a pair with only [`rdma_vf_ipv6`] reads none);
    /// `spcx_cc`: the configMap's `spcx_cc` key.
    pub fn read(step: &Step, assets: HostAssets, spcx_cc: bool) -> Result<Self> {
        if !assets.needs_switches() {
            return Ok(Plan {
                assets,
                switches: None,
                iommu_wanted: false,
                spcx_cc: false,
                rails: Vec::new(),
                kernel_args: None,
            });
        }
        let switches = Switches::from_env()?;
        if assets.nccl_topo.is_some() && !switches.topo_path_set {
            log::info!(
                "nccl-topo: {} is not set; the NCCL topology file goes to {}",
                switches::TOPO_PATH,
                switches::DEFAULT_TOPO_PATH
            );
        }
        if assets.pcie_acs && !switches.pcie_acs {
            log::info!("pcie-acs: switched off by {}=false", switches::CONFIGURE_PCIE_ACS);
        }
        let iommu_wanted = assets.iommu_passthrough && iommu_passthrough::wanted(&step.host, switches.iommu)?;
        if assets.spcx_cc.is_some() && !spcx_cc {
            log::info!("spcx-cc: switched off by the configMap key spcx_cc");
        }
        Ok(Plan {
            spcx_cc: assets.spcx_cc.is_some() && spcx_cc,
            assets,
            switches: Some(switches),
            iommu_wanted,
            rails: Vec::new(),
            kernel_args: None,
        })
    }

    /// Checks the node before config changes anything: `TOPO_PATH` not a link nor
    /// under one, `rdma_topo` present, GRUB present where a drop-in changes; on a
    /// RHEL-like host, the kernel arguments wanted (the ACS value from `rdma_topo`)
    /// and nothing on the boot configuration that would override them.
    pub fn preflight(&mut self, step: &Step) -> Result<()> {
        if let (true, Some(s)) = (self.spcx_cc, &self.switches) {
            self.rails = spcx_cc::preflight(&step.host, &s.rail_glob)?;
        }
        if let Some(path) = self.topo_path() {
            nccl_topo::check_path(&step.host, path)?;
        }
        if self.pcie_acs() {
            pcie_acs::require_tool(&step.host)?;
        }
        let ledger = Ledger::load(&step.host, step.ctx.package_name())?;
        let taken_back = [pcie_acs::STEP, iommu_passthrough::STEP]
            .iter()
            .any(|s| !ledger.paths_of(s).is_empty());
        let touches = self.pcie_acs() || self.iommu_wanted || taken_back || ledger.changes.regenerate;
        if !touches && ledger.changes.kernel_args.is_empty() {
            return Ok(());
        }
        match step.family()? {
            Family::Rhel => {
                let boot = boot_config(step)?;
                let wanted = boot_args::wanted(&ledger, self.pcie_acs(), self.iommu_wanted)?;
                if !wanted.is_empty() && !boot_args::is_current(&ledger, &boot, &wanted)? {
                    boot_args::refuse_conflicts(&step.host, &boot, &wanted)?;
                }
                self.kernel_args = Some((boot, wanted));
            }
            Family::Debian if touches => {
                boot_config(step)?;
            }
            Family::Debian => {}
        }
        Ok(())
    }

    /// Whether the PCIe ACS correction applies.
    pub fn pcie_acs(&self) -> bool {
        self.assets.pcie_acs && self.switches.as_ref().is_some_and(|s| s.pcie_acs)
    }

    fn topo_path(&self) -> Option<&Path> {
        self.assets.nccl_topo.as_ref()?;
        self.switches.as_ref().map(|s| s.topo_path.as_path())
    }

    /// Whether the plan wants `path` of `step` (else a recorded one is left over).
    fn wants(&self, step: &str, path: &Path) -> bool {
        match step {
            nccl_topo::STEP => self.topo_path() == Some(path),
            rdma_vfs_ready::STEP => self.assets.rdma_vfs_ready.is_some(),
            pcie_acs::STEP => self.pcie_acs(),
            iommu_passthrough::STEP => self.iommu_wanted,
            spcx_cc::STEP => self.spcx_cc,
            _ => false,
        }
    }
}

/// The node's boot configuration (a host without GRUB is refused, naming the tools).
fn boot_config(step: &Step) -> Result<BootConfig> {
    BootConfig::detect(&step.host, step.family()?)
}

/// Regenerates the boot configuration when the record owes it.
fn regenerate_if_owed(step: &Step, ledger: &mut Ledger) -> Result<()> {
    if ledger.changes.regenerate {
        boot_config(step)?.regenerate(&step.host)?;
        ledger.regenerated()?;
    }
    Ok(())
}

/// Converges the node to `plan`; the interrupt the changes need.
pub fn apply(step: &Step, plan: &Plan) -> Result<Interrupt> {
    let mut ledger = Ledger::load(&step.host, step.ctx.package_name())?;
    let mut needs = Interrupt::NoOp;
    match (&plan.assets.nccl_topo, plan.topo_path()) {
        (Some(topo), Some(path)) => nccl_topo::apply(&mut ledger, path, &topo.bytes)?,
        _ => {
            ledger.give_back_step(nccl_topo::STEP, &[])?;
        }
    }
    match &plan.assets.rdma_vfs_ready {
        Some((unit, helper)) => needs = needs.combine(rdma_vfs_ready::apply(&mut ledger, unit, helper)?),
        None => rdma_vfs_ready::remove(&mut ledger)?,
    }
    if let Some((boot, wanted)) = &plan.kernel_args {
        needs = needs.combine(pcie_acs::remove(&mut ledger)?);
        needs = needs.combine(iommu_passthrough::remove(&mut ledger)?);
        needs = needs.combine(boot_args::apply(&mut ledger, boot, wanted)?);
    } else {
        needs = needs.combine(if plan.pcie_acs() {
            pcie_acs::apply(&mut ledger)?
        } else {
            pcie_acs::remove(&mut ledger)?
        });
        needs = needs.combine(iommu_passthrough::apply(&mut ledger, plan.iommu_wanted)?);
    }
    regenerate_if_owed(step, &mut ledger)?;
    match (&plan.assets.spcx_cc, plan.spcx_cc) {
        (Some((unit, rules)), true) => spcx_cc::apply(&mut ledger, unit, rules, &plan.rails)?,
        _ => spcx_cc::remove(&mut ledger)?,
    }
    if plan.assets.rdma_vf_ipv6 {
        rdma_vf_ipv6::apply(&step.host)?;
    }
    Ok(needs)
}

/// What is unmet on the node for `plan`; `booted`: after the reboot interrupt.
pub fn check(step: &Step, plan: &Plan, booted: bool) -> Result<Vec<String>> {
    let host = &step.host;
    let ledger = Ledger::load(host, step.ctx.package_name())?;
    let mut unmet = Vec::new();
    if let (Some(topo), Some(path)) = (&plan.assets.nccl_topo, plan.topo_path()) {
        nccl_topo::check(host, path, &topo.bytes, &mut unmet)?;
    }
    if let Some((unit, helper)) = &plan.assets.rdma_vfs_ready {
        rdma_vfs_ready::check(host, unit, helper, booted, &mut unmet)?;
    }
    let record = &ledger.changes.kernel_args;
    let relevant = plan.pcie_acs() || plan.iommu_wanted || !record.is_empty();
    // A node whose family cannot be told (no os-release, neither family) is checked
    // as the Debian family is, by its drop-ins: a check reports, it does not refuse.
    let rhel = relevant
        && match step.family() {
            Ok(Family::Rhel) => true,
            Ok(Family::Debian) | Err(_) => false,
        };
    if rhel {
        if plan.pcie_acs() && host.which(pcie_acs::TOOL).is_none() {
            unmet.push(format!(
                "pcie-acs: {} is not installed on this node, so the ACS settings cannot be read",
                pcie_acs::TOOL
            ));
        } else {
            let boot = boot_config(step).ok();
            boot_args::check(
                &ledger,
                boot.as_ref(),
                plan.pcie_acs(),
                plan.iommu_wanted,
                booted,
                &mut unmet,
            )?;
        }
    } else {
        if plan.pcie_acs() {
            pcie_acs::check(host, booted, &mut unmet)?;
        }
        if plan.assets.iommu_passthrough {
            iommu_passthrough::check(host, plan.iommu_wanted, booted, &mut unmet)?;
        }
    }
    if let (Some((unit, rules)), true, Some(s)) = (&plan.assets.spcx_cc, plan.spcx_cc, &plan.switches) {
        spcx_cc::check(host, unit, rules, &s.rail_glob, &mut unmet)?;
    }
    for unit in ledger.changes.units.iter().filter(|u| u.starts_with("doca-spcx-cc@")) {
        if !plan.spcx_cc {
            unmet.push(format!(
                "spcx-cc: {unit} is still enabled although congestion control is off; config stops it"
            ));
        }
    }
    for (path, taken) in &ledger.changes.files {
        if !plan.wants(&taken.step, path) {
            unmet.push(format!(
                "{}: {} is still changed although this node no longer gets the step; config takes it back",
                taken.step,
                path.display()
            ));
        }
    }
    if ledger.changes.regenerate {
        unmet.push(
            "the boot configuration was not regenerated after a GRUB drop-in changed; config regenerates it".into(),
        );
    }
    Ok(unmet)
}

/// Takes back everything the record lists (units disabled, files restored, the boot
/// configuration regenerated); says which interrupt that needs.
pub fn uninstall(step: &Step) -> Result<Interrupt> {
    let mut ledger = Ledger::load(&step.host, step.ctx.package_name())?;
    let grub = [pcie_acs::STEP, iommu_passthrough::STEP];
    let touches_grub = ledger.changes.regenerate || grub.iter().any(|s| !ledger.paths_of(s).is_empty());
    let kernel_args = !ledger.changes.kernel_args.is_empty();
    let boot = if touches_grub || kernel_args {
        Some(boot_config(step)?)
    } else {
        None
    };
    rdma_vfs_ready::remove(&mut ledger)?;
    spcx_cc::remove(&mut ledger)?;
    let mut needs = pcie_acs::remove(&mut ledger)?;
    needs = needs.combine(iommu_passthrough::remove(&mut ledger)?);
    if let (true, Some(boot)) = (kernel_args, &boot) {
        needs = needs.combine(boot_args::apply(&mut ledger, boot, &[])?);
    }
    ledger.give_back_step(nccl_topo::STEP, &[])?;
    regenerate_if_owed(step, &mut ledger)?;
    for path in ledger.changes.files.keys().cloned().collect::<Vec<_>>() {
        ledger.give_back(&path)?;
    }
    ledger.save()?;
    Ok(needs)
}

/// What uninstall left: anything still recorded.
pub fn uninstall_unmet(step: &Step) -> Result<Vec<String>> {
    let ledger = Ledger::load(&step.host, step.ctx.package_name())?;
    Ok(ledger
        .changes
        .files
        .iter()
        .map(|(path, t)| {
            format!(
                "{}: {} is still changed; uninstall takes it back",
                t.step,
                path.display()
            )
        })
        .chain(
            ledger
                .changes
                .units
                .iter()
                .map(|u| format!("{u} is still enabled; uninstall disables it")),
        )
        .chain((!ledger.changes.kernel_args.is_empty()).then(|| {
            format!(
                "the host steps' kernel arguments ({}) are still on the boot configuration; uninstall takes them back",
                ledger.changes.kernel_args.args.join(" ")
            )
        }))
        .chain(
            ledger
                .changes
                .regenerate
                .then(|| "the boot configuration still has to be regenerated; uninstall does it".to_string()),
        )
        .collect())
}

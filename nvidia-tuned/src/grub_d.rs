// SPDX-License-Identifier: Apache-2.0
//! GRUB drop-ins (`/etc/default/grub.d/*.cfg`) reach a kernel only on Debian-family
//! hosts, whose `update-grub` / `grub-mkconfig` source them after
//! `/etc/default/grub`. The `grub2-mkconfig` of RHEL-like hosts sources
//! `/etc/default/grub` alone (rhboot/grub2, RHEL 9 and Fedora: `util/grub-mkconfig.in`),
//! and grubby hosts boot their BLS entries, which no regeneration of ours touches.
//! eks's and aks's drop-in is left out there (tuned's bootloader plugin takes the
//! family's own way: `crate::grub::bootloader_step`), rke2's refused by its own step;
//! a pair whose host steps still write one (oci × gb300) is therefore refused on a
//! RHEL-like host before any change, rather than reported applied.

use std::path::{Path, PathBuf};

use skyhook_core::os::distro::Family;
use skyhook_core::{Error, Result, Step};

use crate::desired::Desired;
use crate::host_steps::{self, iommu_passthrough, pcie_acs};

/// Where Debian-family GRUB reads drop-ins.
const GRUB_D: &str = "/etc/default/grub.d/";

/// The GRUB drop-ins this config would write, each with what writes it.
fn drop_ins(desired: &Desired, host_plan: &host_steps::Plan) -> Vec<(PathBuf, String)> {
    let service = desired.choice.service.as_deref().unwrap_or("");
    let mut out: Vec<(PathBuf, String)> = desired
        .rendered
        .files
        .iter()
        .filter(|(f, _)| f.path.starts_with(GRUB_D))
        .map(|(f, _)| (f.path.clone(), format!("service {service}")))
        .collect();
    if host_plan.pcie_acs() {
        out.push((
            Path::new(pcie_acs::DROP_IN).to_path_buf(),
            "the PCIe ACS correction (CONFIGURE_PCIE_ACS)".into(),
        ));
    }
    if host_plan.iommu_wanted {
        out.push((
            Path::new(iommu_passthrough::DROP_IN).to_path_buf(),
            "the IOMMU passthrough workaround (CONFIGURE_IOMMU_PASSTHROUGH)".into(),
        ));
    }
    out
}

/// Refuses (exit 1) a config that would write a GRUB drop-in on a RHEL-like host,
/// naming the drop-ins, the host's family and what to do instead. Called before any
/// change.
pub fn refuse_on_rhel_like(step: &Step, desired: &Desired, host_plan: &host_steps::Plan) -> Result<()> {
    let found = drop_ins(desired, host_plan);
    if found.is_empty() {
        return Ok(());
    }
    let os = step.os_release()?;
    if os.family()? != Family::Rhel {
        return Ok(());
    }
    let listed: Vec<String> = found.iter().map(|(p, by)| format!("{} ({by})", p.display())).collect();
    Err(Error::action(format!(
        "accelerator {} with service {} writes GRUB drop-ins ({}), but this is a RHEL-like host (os-release \
         ID={}): only Debian-family GRUB (update-grub) reads /etc/default/grub.d; grub2-mkconfig here reads \
         /etc/default/grub alone and grubby boots the BLS entries, so these kernel arguments would reach no \
         kernel. Nothing was changed. On RHEL-like hosts set CONFIGURE_PCIE_ACS=false and \
         CONFIGURE_IOMMU_PASSTHROUGH=false and set their kernel arguments with grubby (the tuning package's \
         grub.conf)",
        desired.choice.accelerator,
        desired.choice.service.as_deref().unwrap_or("(none)"),
        listed.join(", "),
        os.id()
    )))
}

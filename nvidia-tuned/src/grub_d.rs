// SPDX-License-Identifier: Apache-2.0
//! GRUB drop-ins (`/etc/default/grub.d/*.cfg`) reach a kernel only on Debian-family
//! hosts, whose `update-grub` / `grub-mkconfig` source them after
//! `/etc/default/grub`. The `grub2-mkconfig` of RHEL-like hosts sources
//! `/etc/default/grub` alone (rhboot/grub2, RHEL 9 and Fedora: `util/grub-mkconfig.in`),
//! and grubby hosts boot their BLS entries, which no regeneration of ours touches.
//! eks's and aks's drop-in is left out there (tuned's bootloader plugin takes the
//! family's own way: `crate::grub::bootloader_step`), rke2's refused by its own step;
//! the oci × gb300 host steps put their kernel arguments on the boot configuration
//! there instead of writing drop-ins (`crate::host_steps::boot_args`). Any other
//! service's GRUB drop-in is refused on a RHEL-like host before any change, rather
//! than reported applied.

use std::path::PathBuf;

use skyhook_core::os::distro::Family;
use skyhook_core::{Error, Result, Step};

use crate::plan::Desired;

/// Where Debian-family GRUB reads drop-ins.
const GRUB_D: &str = "/etc/default/grub.d/";

/// The services' GRUB drop-ins this config would write.
fn drop_ins(desired: &Desired) -> Vec<PathBuf> {
    desired
        .rendered
        .files
        .iter()
        .filter(|(f, _)| f.path.starts_with(GRUB_D))
        .map(|(f, _)| f.path.clone())
        .collect()
}

/// Refuses (exit 1) a config whose service would write a GRUB drop-in on a
/// RHEL-like host, naming the drop-ins, the host's family and what to do instead.
/// Called before any change.
pub fn refuse_on_rhel_like(step: &Step, desired: &Desired) -> Result<()> {
    let found = drop_ins(desired);
    if found.is_empty() {
        return Ok(());
    }
    match step.family()? {
        Family::Debian => return Ok(()),
        Family::Rhel => {}
    }
    let os = step.os_release()?;
    let service = desired.choice.service.as_deref().unwrap_or("(none)");
    let listed: Vec<String> = found
        .iter()
        .map(|p| format!("{} (service {service})", p.display()))
        .collect();
    Err(Error::action(format!(
        "accelerator {} with service {service} writes GRUB drop-ins ({}), but this is a RHEL-like host (os-release \
         ID={}): only Debian-family GRUB (update-grub) reads /etc/default/grub.d; grub2-mkconfig here reads \
         /etc/default/grub alone and grubby boots the BLS entries, so these kernel arguments would reach no \
         kernel. Nothing was changed. On RHEL-like hosts set these kernel arguments with grubby (the tuning \
         package's grub.conf)",
        desired.choice.accelerator,
        listed.join(", "),
        os.id()
    )))
}

// SPDX-License-Identifier: Apache-2.0
//! The EKS combinations' steps after the kernel check, in upstream's order: apt
//! ([`apt`]), EFA ([`efa`]), OFI ([`ofi`]), chrony ([`chrony`]), the NVMe
//! instance storage ([`disks`]).
//!
//! Everything that can refuse is checked before anything changes: EFA must already
//! be installed (this version does not run AWS's installer), the OFI prefix it
//! brings must exist, and instance-storage disks must be absent or already
//! assembled and mounted where upstream's step mounts them (this version does not
//! build the RAID0 array); an `apt-get upgrade` that would replace the container
//! runtime or kubelet is refused before it starts.

pub mod apt;
pub mod chrony;
pub mod disks;
pub mod efa;
pub mod ofi;

use skyhook_core::os::pkgmgr::{PackageManager, Retry};
use skyhook_core::{Checklist, Outcome, Result, Step};

use crate::combos::Combination;
use crate::record::Record;

/// apply's EKS steps.
pub fn apply(step: &Step, combination: &Combination, efa_version: &str, apt_upgrade: bool) -> Result<Outcome> {
    let retry = Retry::from_env()?;
    let pm = PackageManager::detect(&step.host, step.family()?, retry)?;
    efa::require(step, &pm, efa_version)?;
    ofi::require(step)?;
    disks::require(step)?;
    let mut record = Record::load(step)?;
    apt::apply(&pm, apt_upgrade)?;
    ofi::apply(step, &mut record)?;
    chrony::apply(step, &mut record)?;
    log::info!("{}: the EKS steps are done", combination.name());
    Ok(Outcome::done())
}

/// The EKS steps' problems, for apply-check and post-interrupt-check.
pub fn check(step: &Step, efa_version: &str, list: &mut Checklist) -> Result<()> {
    let pm = PackageManager::detect(&step.host, step.family()?, Retry::default())?;
    list.absorb(efa::require(step, &pm, efa_version))?;
    list.expect_none(ofi::check(step)?);
    list.expect_none(chrony::check(step)?);
    list.absorb(disks::require(step))?;
    Ok(())
}

/// uninstall's part: the OFI files and chrony's configuration given back.
pub fn release(step: &Step, record: &mut Record) -> Result<()> {
    ofi::release(step, record)?;
    chrony::release(step, record)
}

// SPDX-License-Identifier: Apache-2.0
//! The EKS combinations' steps after the kernel check, in upstream's order: apt
//! ([`apt`]), EFA ([`efa`]), OFI ([`ofi`]), chrony ([`chrony`]), the NVMe
//! instance storage ([`disks`]).
//!
//! Everything that can refuse is checked before anything changes: instance-storage
//! disks must be absent or already assembled and mounted where upstream's step
//! mounts them (this version does not build the RAID0 array); an `apt-get upgrade`
//! that would replace the container runtime or kubelet is refused before it starts.
//! EFA is installed when missing; the OFI prefix it brings must then exist.

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
    disks::require(step)?;
    let mut record = Record::load(step)?;
    apt::apply(&step.host, &pm, apt_upgrade)?;
    efa::install(step, &mut record, &pm, efa_version)?;
    ofi::require(step)?;
    ofi::apply(step, &mut record)?;
    chrony::apply(step, &mut record)?;
    log::info!("{}: the EKS steps are done", combination.name());
    Ok(Outcome::done())
}

/// The EKS steps' problems, for apply-check and post-interrupt-check.
pub fn check(step: &Step, list: &mut Checklist) -> Result<()> {
    let pm = PackageManager::detect(&step.host, step.family()?, Retry::default())?;
    list.expect_none(efa::check(step, &pm)?);
    list.expect_none(ofi::check(step)?);
    list.expect_none(chrony::check(step)?);
    list.absorb(disks::require(step))?;
    Ok(())
}

/// uninstall's part: the OFI files and chrony's configuration given back, a killed
/// install's scratch directory removed (EFA and the packages stay).
pub fn release(step: &Step, record: &mut Record) -> Result<()> {
    efa::remove_work_dir(step, record)?;
    ofi::release(step, record)?;
    chrony::release(step, record)
}

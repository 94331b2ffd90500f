// SPDX-License-Identifier: Apache-2.0
//! The EKS combinations' steps after the kernel check, in upstream's order: apt
//! ([`apt`]), EFA ([`efa`]), OFI ([`ofi`]), chrony ([`chrony`]), the system
//! settings of upstream's closed PR #43 (the inotify limits on the tuning engine,
//! [`inotify`]; ufw masked, [`firewall`]; cloud-init on EC2, [`cloud_init`]), the
//! NVMe instance storage ([`disks`]).
//!
//! Everything that can refuse is checked before anything changes: every
//! instance-storage disk must be blank or a member of the array [`disks`] builds
//! (at the next boot, from a unit apply enables: a reboot); the kernel must have
//! the inotify limits; an `apt-get upgrade`
//! that would replace the container runtime or kubelet is refused before it starts.
//! EFA is installed when missing; the OFI prefix it brings must then exist.

pub mod apt;
pub mod chrony;
pub mod cloud_init;
pub mod disks;
pub mod efa;
pub mod firewall;
pub mod inotify;
pub mod ofi;

use skyhook_core::os::pkgmgr::{PackageManager, Retry};
use skyhook_core::{Checklist, Mode, Outcome, Result, Step};

use crate::combos::Combination;
use crate::record::Record;

/// apply's EKS steps.
pub fn apply(step: &Step, combination: &Combination, efa: &efa::Source, apt_upgrade: bool) -> Result<Outcome> {
    let retry = Retry::from_env()?;
    let pm = PackageManager::detect(&step.host, step.family()?, retry)?;
    let storage = disks::plan(&step.host)?;
    let settings = inotify::engine(&step.host)?;
    let mut record = Record::load(step)?;
    apt::apply(&step.host, &pm, apt_upgrade)?;
    efa::install(step, &mut record, &pm, efa)?;
    ofi::require(step)?;
    ofi::apply(step, &mut record)?;
    chrony::apply(step, &mut record)?;
    settings.run(step, Mode::Config)?;
    firewall::apply(step, &mut record)?;
    cloud_init::apply(step, &mut record)?;
    let reboot = disks::apply(step, &mut record, &pm, storage)?;
    log::info!("{}: the EKS steps are done", combination.name());
    Ok(match reboot {
        Some(interrupt) => Outcome::needs(interrupt),
        None => Outcome::done(),
    })
}

/// The EKS steps' problems, for apply-check and post-interrupt-check (`booted`:
/// the array must be up).
pub fn check(step: &Step, list: &mut Checklist, booted: bool) -> Result<()> {
    let pm = PackageManager::detect(&step.host, step.family()?, Retry::default())?;
    list.expect_none(efa::check(step, &pm)?);
    list.expect_none(ofi::check(step)?);
    list.expect_none(chrony::check(step)?);
    list.absorb(inotify::engine(&step.host)?.run(step, Mode::ConfigCheck).map(|_| ()))?;
    list.expect_none(firewall::check(&step.host)?);
    list.expect_none(cloud_init::check(&step.host)?);
    list.expect_none(disks::check(&step.host, booted)?);
    Ok(())
}

/// uninstall's part: the OFI files and chrony's configuration given back, a killed
/// install's scratch directory removed, the instance storage's boot unit removed
/// (EFA, the packages and an assembled array stay).
pub fn release(step: &Step, record: &mut Record) -> Result<()> {
    efa::remove_work_dir(step, record)?;
    disks::release(step, record)?;
    cloud_init::release(step, record)?;
    firewall::release(step, record)?;
    inotify::recorded().run_if_recorded(step, Mode::Uninstall)?;
    ofi::release(step, record)?;
    chrony::release(step, record)
}

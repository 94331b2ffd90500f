// SPDX-License-Identifier: Apache-2.0
//! apply with `NVIDIA_SETUP_INSTALL_KERNEL=true`: the target kernel's packages
//! installed and made the next boot's default; the reboot is the SCR's interrupt.
//!
//! Nothing at all happens when the running kernel already satisfies the target
//! (exactly, or newer with `NVIDIA_SETUP_KERNEL_ALLOW_NEWER=true`): upstream
//! installed unconditionally and so downgraded a newer kernel (its issue #85), and
//! re-ran GRUB on a node already booted into the target (AICR #2870). A dpkg left
//! half-done by an earlier run is finished (`dpkg --configure -a`) before any
//! install, or reported, never installed over.

use skyhook_core::os::distro::Family;
use skyhook_core::os::dpkg;
use skyhook_core::os::pkgmgr::{PackageManager, Retry};
use skyhook_core::{Error, Interrupt, Outcome, Result, Step};

use crate::kernel::{self, Target, boot, pin};
use crate::record::Record;

/// Installs `target` as the next boot's kernel (pinned when `pin_kernel`).
pub fn install(step: &Step, target: &Target, pin_kernel: bool) -> Result<Outcome> {
    let host = &step.host;
    let running = kernel::running(host)?;
    let mut record = Record::load(step)?;
    if target.satisfied_by(&running) {
        log::info!(
            "kernel: the node runs {running}, which satisfies {}; nothing to install",
            target.release
        );
        reconcile_pin(step, &mut record, target, pin_kernel && running == target.release)?;
        return Ok(Outcome::done());
    }
    let family = step.family()?;
    match family {
        Family::Debian => {}
        Family::Rhel => {
            return Err(Error::action(format!(
                "kernel: installing {} needs an Ubuntu node (apt and GRUB's update-grub); this is a {family} \
                 node; nothing was changed",
                target.release
            )));
        }
    }
    let pm = PackageManager::detect(host, family, Retry::from_env()?)?;
    boot::require_tools(host)?;
    dpkg::finish_unfinished(host)?;
    let packages = target.packages();
    pm.install(&packages.each_ref().map(String::as_str))?;
    boot::make_default(step, &mut record, &target.release)?;
    reconcile_pin(step, &mut record, target, pin_kernel)?;
    log::info!(
        "kernel {} installed and set as the boot default; it runs after the reboot (the SCR's interrupt), \
         which post-interrupt-check verifies",
        target.release
    );
    Ok(Outcome::needs(Interrupt::Reboot))
}

/// Pins when asked, and releases a pin no longer asked for.
fn reconcile_pin(step: &Step, record: &mut Record, target: &Target, wanted: bool) -> Result<()> {
    if wanted {
        let family = step.family()?;
        let pm = PackageManager::detect(&step.host, family, Retry::default())?;
        pin::apply(step, record, &pm, target)
    } else {
        pin::release(step, record)
    }
}

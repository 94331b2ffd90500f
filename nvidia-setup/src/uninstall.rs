// SPDX-License-Identifier: Apache-2.0
//! uninstall (upstream has none) and uninstall-check, from the record alone: the
//! configMap and environment are not read. GRUB's saved entry and
//! `/etc/default/grub` come back, the pin file and the holds this package made go,
//! the headers links it made go, and aks's modules-load.d file and the tuning
//! engine's memlock settings (the engine's own uninstall) go, and the OFI files,
//! chrony's configuration, ufw, cloud-init's files and the inotify limits come back
//! (packages installed or upgraded stay; the instance storage's array stays). An installed kernel stays installed (removing the
//! kernel a node may be running is never safe); the next boot follows the restored
//! default.

use skyhook_core::{Checklist, Mode, Outcome, Result, Step};

use crate::eks::inotify;
use crate::kernel::{boot, pin};
use crate::record::Record;
use crate::{aks, eks, headers, ib_modules};

/// uninstall.
pub fn uninstall(step: &Step) -> Result<Outcome> {
    let mut record = Record::load(step)?;
    pin::release(step, &mut record)?;
    boot::restore(step, &mut record)?;
    headers::release(step, &mut record)?;
    ib_modules::release(step, &mut record)?;
    eks::release(step, &mut record)?;
    aks::take_over_upstream(step)?;
    let outcome = aks::engine().run_if_recorded(step, Mode::Uninstall)?;
    record.save(step)?;
    log::info!("uninstall: nothing of nvidia-setup is left recorded (an installed kernel stays installed)");
    Ok(outcome)
}

/// uninstall-check: nothing is recorded any more.
pub fn uninstall_check(step: &Step) -> Result<Outcome> {
    let record = Record::load(step)?;
    let mut list = Checklist::new();
    list.expect(record == Record::default(), || {
        format!(
            "nvidia-setup still records changes in {}; run uninstall",
            step.state().file().display()
        )
    });
    let engines = inotify::recorded()
        .run_if_recorded(step, Mode::UninstallCheck)
        .and_then(|_| aks::engine().run_if_recorded(step, Mode::UninstallCheck));
    list.finish_after(engines)
}

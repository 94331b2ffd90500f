// SPDX-License-Identifier: Apache-2.0
//! uninstall (upstream has none) and uninstall-check, from the record alone: the
//! configMap and environment are not read. GRUB's saved entry and
//! `/etc/default/grub` come back, the pin file and the holds this package made go,
//! the headers links it made go. An installed kernel stays installed (removing the
//! kernel a node may be running is never safe); the next boot follows the restored
//! default.

use skyhook_core::{Checklist, Outcome, Result, Step};

use crate::headers;
use crate::kernel::{boot, pin};
use crate::record::Record;

/// uninstall.
pub fn uninstall(step: &Step) -> Result<Outcome> {
    let mut record = Record::load(step)?;
    pin::release(step, &mut record)?;
    boot::restore(step, &mut record)?;
    headers::release(step, &mut record)?;
    record.save(step)?;
    log::info!("uninstall: nothing of nvidia-setup is left recorded (an installed kernel stays installed)");
    Ok(Outcome::done())
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
    list.finish().map(|()| Outcome::done())
}

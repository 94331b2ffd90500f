// SPDX-License-Identifier: Apache-2.0
//! config, on the tuning engine in process ([`tuning::run_with_input`]) with the
//! plan's input ([`crate::plan`]).

use skyhook_core::os::distro::stateless_etc;
use skyhook_core::{Interrupt, Outcome, Result, Step};

use crate::KIND;
use crate::optional;
use crate::plan::prepare;

/// Warns when the SCR gives this package a reboot interrupt on a node whose `/etc`
/// does not persist: the reboot would wipe what it was meant to apply.
fn warn_reboot_on_stateless_etc(step: &Step) -> Result<()> {
    let Some(why) = stateless_etc(&step.host)? else {
        return Ok(());
    };
    let metadata = step.node_metadata();
    let Some(entry) = metadata.packages.get(step.ctx.package_name()) else {
        return Ok(());
    };
    let reboots = entry
        .interrupt
        .iter()
        .chain(entry.config_interrupts.values())
        .any(|i| *i == Interrupt::Reboot);
    if reboots {
        log::warn!(
            "the SCR gives this package a reboot interrupt, but this node's /etc does not survive a reboot ({why}): \
             the reboot wipes these settings, and applying them again asks for another reboot, in a loop. These \
             settings apply live: use no interrupt, or {} when USE_CONTAINERD is true",
            Interrupt::service(["containerd"])
        );
    }
    Ok(())
}

/// config.
pub fn config(step: &Step) -> Result<Outcome> {
    let p = prepare(step)?;
    optional::warn_missing(&step.host, &p.optional);
    warn_reboot_on_stateless_etc(step)?;
    tuning::run_with_input(step, KIND, p.input)
}

// SPDX-License-Identifier: Apache-2.0
//! config: the configMap made true on the node. Every value is validated (and the
//! boot tool found) before anything changes; unchanged input writes nothing and runs
//! nothing. Ends by saying which interrupt the change needs: a reboot when the
//! crashkernel value changed, a restart of the kdump service when only its
//! configuration did.

use skyhook_core::boot::BootConfig;
use skyhook_core::{Interrupt, Outcome, Result, Step};

use crate::boot::Boot;
use crate::input::Input;
use crate::platform::Platform;
use crate::service;
use crate::state::State;

/// config.
pub fn config(step: &Step) -> Result<Outcome> {
    let platform = Platform::detect(step)?;
    let input = Input::for_config(&step.configmaps, &platform, &step.host)?;
    let store = step.state();
    let mut state: State = store.load()?;
    let boot = if input.crashkernel.is_some() || state.boot.is_some() {
        Some(Boot::new(
            &step.host,
            BootConfig::detect(&step.host, platform.family)?,
            &store,
        ))
    } else {
        None
    };

    let boot_changed = match (&boot, &input.crashkernel) {
        (Some(boot), Some(ck)) => {
            let changed = boot.set(&mut state, ck)?;
            if !changed {
                log::info!("{} is already on the boot configuration", ck.token());
            }
            changed
        }
        (Some(boot), None) => {
            log::info!("the configMap has no crashkernel key any more: putting the distribution's setting back");
            let restored = boot.restore(&mut state, true)?;
            if restored {
                log::warn!(
                    "{}",
                    skyhook_core::runtime::interrupt::removed_key_keeps_until_reboot(
                        crate::input::CRASHKERNEL_KEY,
                        "this package's crashkernel argument (the memory stays reserved for a crash kernel)"
                    )
                );
            }
            restored
        }
        (None, _) => {
            log::info!("no crashkernel key: the kernel command line stays as the distribution set it");
            false
        }
    };

    let conf_changed = service::deploy(&step.host, &platform, &mut state, &store, input.kdump_conf.as_deref())?;
    if conf_changed {
        service::restart_if_running(&step.host, &platform)?;
    }

    let interrupt = if boot_changed {
        Interrupt::Reboot
    } else if conf_changed {
        Interrupt::service([platform.service()])
    } else {
        Interrupt::NoOp
    };
    Ok(Outcome::needs(interrupt))
}

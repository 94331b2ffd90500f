// SPDX-License-Identifier: Apache-2.0
//! config: the configMap made true on the node. Every value is validated (and the
//! boot tool found) before anything changes; unchanged input writes nothing and runs
//! nothing but a read-only `grubby --info=ALL` on grubby hosts (the entries, not the
//! record, say whether kdumpctl reset crashkernel behind our back). kdump.conf goes
//! first, so on RHEL-like hosts `auto_reset_crashkernel no` is there before our
//! crashkernel. Ends by saying which interrupt the change needs: a reboot when the
//! crashkernel value changed, a restart of the kdump service when only its
//! configuration did.

use skyhook_core::boot::BootConfig;
use skyhook_core::records::state::StateStore;
use skyhook_core::{Interrupt, Outcome, Result, Step};

use crate::autoreset::{self, Overridden, Support};
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

    // Everything validated before anything changes: a value this boot tool cannot carry too.
    if let (Some(boot), Some(ck)) = (&boot, &input.crashkernel) {
        boot.can_carry(ck)?;
    }

    // kdump.conf first: on RHEL-like hosts it stops kdumpctl resetting the
    // crashkernel= about to go on (a kernel installed in between keeps it).
    let service_changed = deploy_conf(step, &platform, &input, &mut state, &store)?;

    let boot_changed = match (&boot, &input.crashkernel) {
        (Some(boot), Some(ck)) => {
            let changed = boot.set(&mut state, ck)?;
            if !changed {
                log::info!("{} is already on the boot configuration", ck.tokens().join(" "));
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

    let interrupt = if boot_changed {
        Interrupt::Reboot
    } else if service_changed {
        Interrupt::service([platform.service()])
    } else {
        Interrupt::NoOp
    };
    Ok(Outcome::needs(interrupt))
}

/// Deploys the service configuration config makes true ([`service::desired`]) and
/// restarts the service when it runs and more than the `auto_reset_crashkernel`
/// line changed (a kdumpctl that knows the line reads it only when it resets
/// crashkernel; one that does not know it refuses to start with it); returns whether
/// the service needs the new configuration.
fn deploy_conf(step: &Step, platform: &Platform, input: &Input, state: &mut State, store: &StateStore) -> Result<bool> {
    let desired = service::desired(
        &step.host,
        platform,
        state,
        input.kdump_conf.as_deref(),
        input.crashkernel.is_some(),
    )?;
    let before = step.host.read(platform.kdump_conf())?.unwrap_or_default();
    let conf_changed = service::deploy(&step.host, platform, state, store, desired.text.as_deref())?;
    let after = step.host.read(platform.kdump_conf())?.unwrap_or_default();
    let knows = desired.support.as_ref().is_none_or(Support::known);
    let option_only = knows && autoreset::strip(&before).0 == autoreset::strip(&after).0;
    let service_changed = conf_changed && !option_only;
    if let Some(o) = &desired.overridden
        && (input.kdump_conf.is_some() || conf_changed)
    {
        report_override(platform, o, input.kdump_conf.is_some());
    }
    if let Some(support) = desired.support.as_ref().filter(|s| !s.known())
        && input.crashkernel.is_some()
    {
        log::info!(
            "not writing `{}` to {}: {}",
            autoreset::PINNED_LINE,
            platform.kdump_conf(),
            support.why_not()
        );
    }
    if let Some(support) = &desired.support
        && !desired.dropped.is_empty()
    {
        log::warn!(
            "configMap key {:?} line(s) {}: {} is left out of {}: {}; remove it from the configMap (it applies to \
             kdumpctl of kexec-tools 2.0.23-2 and later, and kdump-utils)",
            crate::input::KDUMP_CONF_KEY,
            desired
                .dropped
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            autoreset::OPTION,
            platform.kdump_conf(),
            support.why_not()
        );
    }
    if service_changed {
        service::restart_if_running(&step.host, platform)?;
    }
    Ok(service_changed)
}

/// Says why the `auto_reset_crashkernel` value `o` is replaced by `no`: a warning
/// when it is the configMap's (`from_configmap`), else a note about the node's file.
fn report_override(platform: &Platform, o: &Overridden, from_configmap: bool) {
    let value: String = o.value.chars().take(40).collect();
    let why = format!(
        "with it kdumpctl resets crashkernel= on the boot entries to the distribution's default at every kernel \
         install and kexec-tools/kdump-utils update, undoing this package's crashkernel key; {} says `no` while \
         the package sets crashkernel, and goes back when it stops",
        platform.kdump_conf()
    );
    if from_configmap {
        log::warn!(
            "configMap key {:?} line {}: {} {value:?} is overridden with `{}`: {why}",
            crate::input::KDUMP_CONF_KEY,
            o.line,
            autoreset::OPTION,
            autoreset::PINNED_LINE
        );
    } else {
        log::info!(
            "{} line {}: {} {value:?} becomes `{}`: {why}",
            platform.kdump_conf(),
            o.line,
            autoreset::OPTION,
            autoreset::PINNED_LINE
        );
    }
}

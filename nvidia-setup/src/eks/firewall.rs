// SPDX-License-Identifier: Apache-2.0
//! The host firewall (upstream's `system_node_settings.sh`, UPSTREAM.md §10): Ubuntu's
//! `ufw.service` stopped, disabled and masked, so that no rule set it loads filters
//! the pod network or EFA's traffic. Named in the log, and reversible: what ufw was
//! (enabled, running) is recorded before the change, and uninstall unmasks it and
//! gives back exactly that. A node without ufw is left alone.

use std::path::Path;

use serde::{Deserialize, Serialize};
use skyhook_core::host::systemd::Systemd;
use skyhook_core::{Host, Result, Step};

use crate::record::Record;

/// The unit.
const UNIT: &str = "ufw.service";
/// The link `systemctl mask` makes.
const MASK: &str = "/etc/systemd/system/ufw.service";

/// ufw as it was before apply masked it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UfwRecord {
    /// It was enabled.
    pub enabled: bool,
    /// It was running.
    pub active: bool,
}

/// Whether ufw is masked.
fn masked(host: &Host) -> Result<bool> {
    Ok(host.read_link(MASK)?.as_deref() == Some(Path::new("/dev/null")))
}

/// Stops, disables and masks ufw where it is installed, recording first.
pub fn apply(step: &Step, record: &mut Record) -> Result<()> {
    let host = &step.host;
    let systemd = Systemd::new(host);
    if masked(host)? {
        return Ok(());
    }
    if !systemd.is_installed(UNIT)? {
        log::info!("firewall: no {UNIT} on this node; nothing to mask");
        return Ok(());
    }
    if record.ufw.is_none() {
        record.ufw = Some(UfwRecord {
            enabled: systemd.is_enabled(UNIT)?,
            active: systemd.is_active(UNIT)? == Some(true),
        });
        record.save(step)?;
    }
    systemd.stop(UNIT)?;
    systemd.disable(UNIT)?;
    systemd.mask(UNIT)?;
    log::info!(
        "firewall: {UNIT} stopped, disabled and masked (as upstream: no host rule set filters the pod network or \
         EFA's traffic); uninstall gives it back as it was"
    );
    Ok(())
}

/// What is unmet: ufw installed and not masked.
pub fn check(host: &Host) -> Result<Vec<String>> {
    if masked(host)? || !Systemd::new(host).is_installed(UNIT)? {
        return Ok(Vec::new());
    }
    Ok(vec![format!("firewall: {UNIT} is not masked; apply masks it")])
}

/// uninstall's part: ufw unmasked, enabled and started again as it was.
pub fn release(step: &Step, record: &mut Record) -> Result<()> {
    let Some(was) = record.ufw.clone() else {
        return Ok(());
    };
    let host = &step.host;
    let systemd = Systemd::new(host);
    if masked(host)? {
        systemd.unmask(UNIT)?;
    }
    if was.enabled {
        systemd.enable(UNIT)?;
    }
    if was.active {
        systemd.start(UNIT)?;
    }
    record.ufw = None;
    record.save(step)?;
    log::info!(
        "firewall: {UNIT} unmasked{}{}",
        if was.enabled { ", enabled" } else { "" },
        if was.active { " and started" } else { "" }
    );
    Ok(())
}

// SPDX-License-Identifier: Apache-2.0
//! The RDMA VF boot gate (upstream's `install-rdma-vfs-ready`, #108/#111): a oneshot
//! unit ordered before kubelet that waits for the Oracle Cloud Agent to create the
//! RDMA virtual functions, so the SR-IOV device plugin, which enumerates devices once,
//! finds them. Installed and enabled, never started: it acts from the next boot (a
//! reboot). Upstream's paths, so a node that ran the bash package is taken over in
//! place: the unit in `/etc/systemd/system/`, its helper in `/usr/local/sbin/`.

use std::path::Path;

use skyhook_core::host::systemd::Systemd;
use skyhook_core::{Host, Interrupt, Result};

use super::ledger::Ledger;
use crate::catalog::Asset;

/// The step's name in the record and the log.
pub const STEP: &str = "rdma-vfs-ready";
/// The unit.
pub const UNIT: &str = "rdma-vfs-ready.service";
/// Where the unit goes.
pub const UNIT_PATH: &str = "/etc/systemd/system/rdma-vfs-ready.service";
/// Where the helper goes (the unit's `ExecStart`).
pub const HELPER_PATH: &str = "/usr/local/sbin/wait-rdma-vfs.sh";

fn files<'a>(unit: &'a Asset, helper: &'a Asset) -> [(&'static str, &'a [u8], u32); 2] {
    [
        (HELPER_PATH, helper.bytes.as_slice(), 0o755),
        (UNIT_PATH, unit.bytes.as_slice(), 0o644),
    ]
}

/// Installs and enables the gate; a reboot when anything changed.
pub fn apply(ledger: &mut Ledger, unit: &Asset, helper: &Asset) -> Result<Interrupt> {
    let mut changed = false;
    for (path, bytes, mode) in files(unit, helper) {
        changed |= ledger.write(STEP, Path::new(path), bytes, mode, true)?;
    }
    let systemd = Systemd::new(ledger.host());
    if changed {
        systemd.daemon_reload()?;
    }
    if !ledger.changes.units.contains(UNIT) || !systemd.is_enabled(UNIT)? {
        ledger.changes.units.insert(UNIT.to_string());
        ledger.save()?;
        systemd.enable(UNIT)?;
        changed = true;
    }
    if !changed {
        if systemd.is_active(UNIT)? == Some(false) {
            log::info!("rdma-vfs-ready: {UNIT} is enabled but has not run since this boot (needs a reboot)");
            return Ok(Interrupt::Reboot);
        }
        return Ok(Interrupt::NoOp);
    }
    log::info!(
        "rdma-vfs-ready: installed and enabled {UNIT}; it orders kubelet after the RDMA VFs from the next boot \
         (needs a reboot)"
    );
    Ok(Interrupt::Reboot)
}

/// Disables the gate and gives its files back (uninstall, or a pair that ships none).
pub fn remove(ledger: &mut Ledger) -> Result<()> {
    let systemd = Systemd::new(ledger.host());
    let enabled = ledger.changes.units.contains(UNIT);
    if enabled {
        // The unit file may be gone (by hand, or a partial run) with its link left.
        systemd.disable_installed(UNIT, UNIT_PATH)?;
        ledger.changes.units.remove(UNIT);
        ledger.save()?;
    }
    if ledger.give_back_step(STEP, &[])? || enabled {
        systemd.daemon_reload()?;
        log::info!("rdma-vfs-ready: disabled {UNIT} and removed it and {HELPER_PATH}");
    }
    Ok(())
}

/// What is unmet: the files, the enablement, and after the reboot (`booted`) that
/// the unit ran.
pub fn check(host: &Host, unit: &Asset, helper: &Asset, booted: bool, unmet: &mut Vec<String>) -> Result<()> {
    for (path, bytes, mode) in files(unit, helper) {
        if !host.has_content(path, bytes, mode)? {
            unmet.push(format!(
                "rdma-vfs-ready: {path} is not the catalog's file with mode {mode:o}; config installs it"
            ));
        }
    }
    let systemd = Systemd::new(host);
    if !systemd.is_enabled(UNIT)? {
        unmet.push(format!("rdma-vfs-ready: {UNIT} is not enabled; config enables it"));
    } else if booted && systemd.is_active(UNIT)? == Some(false) {
        unmet.push(format!(
            "rdma-vfs-ready: {UNIT} did not run during this boot (the gate holds kubelet until the RDMA VFs \
             exist); reboot the node, or see `systemctl status {UNIT}` and `journalctl -u {UNIT}`"
        ));
    }
    Ok(())
}

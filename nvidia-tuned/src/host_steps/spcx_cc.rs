// SPDX-License-Identifier: Apache-2.0
//! DOCA Spectrum-X congestion control (upstream's `configure-spcx-cc`, 0.7.0): one
//! `doca_spcx_cc -d <rail> -w -1` per RDMA bond (`/sys/class/infiniband/mlx5_bond_*`,
//! `RAIL_GLOB` to override; a device with a `physfn` is a VF and skipped), supervised by
//! the `doca-spcx-cc@.service` template and started again by a udev rule whenever the
//! bond appears. On by default; the configMap key `spcx_cc: off` takes it all back and
//! needs no DOCA. Before anything is written: the DOCA binary, at least one rail, no
//! `doca_spcx_cc` running from something else (the tool wants one process per rail),
//! and each rail's NIC firmware allowing it (`mlxconfig … q`: `USER_PROGRAMMABLE_CC
//! True(1)`; read, never written). Runs at once: no interrupt.

use std::path::Path;

use skyhook_core::host::command::Cmd;
use skyhook_core::host::systemd::Systemd;
use skyhook_core::{Error, Host, Result};

use super::ledger::Ledger;
use crate::catalog::Asset;

/// The step's name in the record and the log.
pub const STEP: &str = "spcx-cc";
/// The DOCA tool.
pub const TOOL: &str = "/opt/mellanox/doca/tools/doca_spcx_cc";
/// Where the unit template goes.
pub const UNIT_PATH: &str = "/etc/systemd/system/doca-spcx-cc@.service";
/// Where the udev rule goes.
pub const RULES_PATH: &str = "/etc/udev/rules.d/99-doca-spcx-cc.rules";
/// The RDMA devices.
const IB: &str = "/sys/class/infiniband";
/// The firmware setting congestion control needs, and its value.
const FIRMWARE: (&str, &str) = ("USER_PROGRAMMABLE_CC", "True(1)");
/// What the daemon logs once congestion control runs on its rail.
pub const READY: &str = "PCC host status Active";
/// How long a check waits for [`READY`], and how often it looks.
const READY_WAIT: (u64, u64) = (60, 2);

/// The unit of `rail`.
pub fn unit(rail: &str) -> String {
    format!("doca-spcx-cc@{rail}.service")
}

/// Whether `name` matches `glob` (`*` any run, `?` one character).
pub fn matches(glob: &str, name: &str) -> bool {
    fn go(g: &[u8], n: &[u8]) -> bool {
        match (g.first(), n.first()) {
            (None, None) => true,
            (Some(b'*'), _) => go(&g[1..], n) || (!n.is_empty() && go(g, &n[1..])),
            (Some(b'?'), Some(_)) => go(&g[1..], &n[1..]),
            (Some(a), Some(b)) if a == b => go(&g[1..], &n[1..]),
            _ => false,
        }
    }
    go(glob.as_bytes(), name.as_bytes())
}

/// The rails: RDMA devices matching `glob` that are not VFs.
pub fn rails(host: &Host, glob: &str) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for dev in host.list_dir(IB)? {
        if !matches(glob, &dev) {
            continue;
        }
        if host.exists(format!("{IB}/{dev}/device/physfn")) {
            log::info!("{STEP}: {dev} matches {glob} but is a virtual function, not a host PF: skipped");
            continue;
        }
        out.push(dev);
    }
    Ok(out)
}

/// `doca_spcx_cc` processes not run by this package's units: (pid, owning unit).
fn foreign_processes(host: &Host) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for pid in host
        .list_dir("/proc")?
        .into_iter()
        .filter(|p| p.bytes().all(|b| b.is_ascii_digit()))
    {
        let comm = host.read_to_string(format!("/proc/{pid}/comm")).ok().flatten();
        if comm.as_deref().map(str::trim) != Some("doca_spcx_cc") {
            continue;
        }
        let cgroup = host
            .read_to_string(format!("/proc/{pid}/cgroup"))
            .ok()
            .flatten()
            .unwrap_or_default();
        let owner = cgroup
            .lines()
            .filter_map(|l| l.rsplit('/').next())
            .find(|u| u.ends_with(".service"))
            .unwrap_or("no systemd unit")
            .to_string();
        if !owner.starts_with("doca-spcx-cc@") {
            out.push((pid, owner));
        }
    }
    Ok(out)
}

/// The firmware value of [`FIRMWARE`] on `rail`, from `mlxconfig -d <pci> q`.
fn firmware(host: &Host, rail: &str) -> Result<Option<String>> {
    let Some(bdf) = host.read_link(format!("{IB}/{rail}/device"))? else {
        return Ok(None);
    };
    let bdf = bdf
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let out = host.run(&Cmd::new("mlxconfig").args(["-d", bdf.as_str(), "q"]))?;
    Ok(out.stdout.lines().find_map(|l| {
        let mut w = l.split_whitespace();
        (w.next() == Some(FIRMWARE.0)).then(|| w.next().unwrap_or("").to_string())
    }))
}

/// Refuses the node before any change when congestion control cannot run.
pub fn preflight(host: &Host, glob: &str) -> Result<Vec<String>> {
    let fix = "or set `spcx_cc: off` in the package's configMap to run this node without congestion control";
    if host.mode(TOOL)?.is_none_or(|m| m & 0o111 == 0) {
        return Err(Error::action(format!(
            "{STEP}: {TOOL} is missing or not executable; it ships with the node image's DOCA. Install DOCA, {fix}"
        )));
    }
    let foreign = foreign_processes(host)?;
    if !foreign.is_empty() {
        let list: Vec<String> = foreign.iter().map(|(p, o)| format!("pid {p} ({o})")).collect();
        return Err(Error::action(format!(
            "{STEP}: doca_spcx_cc already runs outside this package: {}; a rail takes one process. Stop \
             those (`systemctl stop <unit>`; transient units also end at a reboot), {fix}",
            list.join(", ")
        )));
    }
    let rails = rails(host, glob)?;
    if rails.is_empty() {
        return Err(Error::action(format!(
            "{STEP}: no RDMA bond matches {glob} under {IB} (devices: {}); set RAIL_GLOB in the package's env if \
             the bonds are named otherwise, {fix}",
            host.list_dir(IB)?.join(", ")
        )));
    }
    if host.which("mlxconfig").is_none() {
        return Err(Error::action(format!(
            "{STEP}: mlxconfig (NVIDIA firmware tools) is not installed, so the NICs' {} cannot be read; \
             install mft, {fix}",
            FIRMWARE.0
        )));
    }
    let mut wrong = Vec::new();
    for rail in &rails {
        let value = firmware(host, rail)?;
        if value.as_deref() != Some(FIRMWARE.1) {
            wrong.push(format!(
                "{rail}: {} is {}",
                FIRMWARE.0,
                value.as_deref().unwrap_or("unreadable")
            ));
        }
    }
    if !wrong.is_empty() {
        return Err(Error::action(format!(
            "{STEP}: the NIC firmware does not allow user-programmable congestion control ({}); set it with \
             `mlxconfig -d <pci address> set {}=1` and reboot, {fix}",
            wrong.join("; "),
            FIRMWARE.0
        )));
    }
    Ok(rails)
}

/// Installs the template and the rule and starts one unit per rail.
pub fn apply(ledger: &mut Ledger, unit_file: &Asset, rules: &Asset, rails: &[String]) -> Result<()> {
    let mut changed = ledger.write(STEP, Path::new(UNIT_PATH), &unit_file.bytes, 0o644, true)?;
    changed |= ledger.write(STEP, Path::new(RULES_PATH), &rules.bytes, 0o644, true)?;
    let host = ledger.host();
    let systemd = Systemd::new(host);
    if changed {
        systemd.daemon_reload()?;
        reload_udev(host);
    }
    let wanted: Vec<String> = rails.iter().map(|r| unit(r)).collect();
    let gone: Vec<String> = ledger
        .changes
        .units
        .iter()
        .filter(|u| u.starts_with("doca-spcx-cc@") && !wanted.contains(u))
        .cloned()
        .collect();
    for unit in gone {
        systemd.stop(&unit)?;
        systemd.disable(&unit)?;
        ledger.changes.units.remove(&unit);
        ledger.save()?;
        log::info!("{STEP}: stopped {unit}: its rail is no longer there or no longer matches RAIL_GLOB");
    }
    for rail in rails {
        let unit = unit(rail);
        if !ledger.changes.units.contains(&unit) {
            ledger.changes.units.insert(unit.clone());
            ledger.save()?;
        }
        systemd.enable(&unit)?;
        systemd.start(&unit)?;
    }
    log::info!(
        "{STEP}: congestion control runs on {} (no interrupt needed)",
        rails.join(", ")
    );
    Ok(())
}

fn reload_udev(host: &Host) {
    if let Err(e) = host.run_ok(&Cmd::new("udevadm").args(["control", "--reload"])) {
        log::warn!("{STEP}: udevadm control --reload failed ({e}); the rule applies from the next boot");
    }
}

/// Stops and disables the units this package started and gives back the files.
pub fn remove(ledger: &mut Ledger) -> Result<()> {
    let units: Vec<String> = ledger
        .changes
        .units
        .iter()
        .filter(|u| u.starts_with("doca-spcx-cc@"))
        .cloned()
        .collect();
    let systemd = Systemd::new(ledger.host());
    for unit in &units {
        if ledger.host().exists(UNIT_PATH) {
            systemd.stop(unit)?;
            systemd.disable(unit)?;
        }
        ledger.changes.units.remove(unit);
        ledger.save()?;
    }
    if ledger.give_back_step(STEP, &[])? || !units.is_empty() {
        systemd.daemon_reload()?;
        reload_udev(ledger.host());
        log::info!(
            "{STEP}: stopped {} and removed {UNIT_PATH} and {RULES_PATH}",
            if units.is_empty() {
                "nothing".to_string()
            } else {
                units.join(", ")
            }
        );
    }
    Ok(())
}

/// What is unmet: the files, each rail's unit active and reporting [`READY`] in its
/// journal (waiting up to a minute), no foreign process.
pub fn check(host: &Host, unit_file: &Asset, rules: &Asset, glob: &str, unmet: &mut Vec<String>) -> Result<()> {
    for (path, asset) in [(UNIT_PATH, unit_file), (RULES_PATH, rules)] {
        if !host.has_content(path, &asset.bytes, 0o644)? {
            unmet.push(format!("{STEP}: {path} is not the catalog's file; config installs it"));
        }
    }
    let rails = rails(host, glob)?;
    if rails.is_empty() {
        unmet.push(format!("{STEP}: no RDMA bond matches {glob} under {IB}"));
    }
    let systemd = Systemd::new(host);
    for rail in &rails {
        let unit = unit(rail);
        if systemd.is_active(&unit)? == Some(false) {
            unmet.push(format!("{STEP}: {unit} is not active; see `systemctl status {unit}`"));
        } else if systemd.is_running() && !ready(host, &unit)? {
            unmet.push(format!(
                "{STEP}: {unit} did not log {READY:?} within {} s; see `journalctl -u {unit}`",
                READY_WAIT.0
            ));
        }
    }
    for (pid, owner) in foreign_processes(host)? {
        unmet.push(format!(
            "{STEP}: doca_spcx_cc pid {pid} ({owner}) runs outside this package"
        ));
    }
    Ok(())
}

/// Whether `unit`'s journal shows [`READY`], polling while the unit stays active.
fn ready(host: &Host, unit: &str) -> Result<bool> {
    let (limit, every) = READY_WAIT;
    let mut waited = 0;
    loop {
        let log = host.run(&Cmd::new("journalctl").args(["-u", unit, "--no-pager"]))?;
        if log.stdout.contains(READY) {
            return Ok(true);
        }
        if waited >= limit || Systemd::new(host).is_active(unit)? != Some(true) {
            return Ok(false);
        }
        std::thread::sleep(std::time::Duration::from_secs(every));
        waited += every;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rail_glob_matches_as_the_shell_does() {
        assert!(matches("mlx5_bond_*", "mlx5_bond_0"));
        assert!(matches("mlx5_bond_?", "mlx5_bond_3"));
        assert!(!matches("mlx5_bond_*", "mlx5_0"));
        assert!(!matches("mlx5_bond_?", "mlx5_bond_10"));
        assert!(matches("*", "anything"));
    }
}

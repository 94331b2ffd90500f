// SPDX-License-Identifier: Apache-2.0
//! The container runtime's limits in effect, not only its drop-in's bytes: for each
//! systemd drop-in of the chain that sets `Limit*=` (the `LimitSTACK` drop-in of
//! containerd, RKE2 and K3s) and whose unit is installed here, the unit's main process
//! (`systemctl show --property=MainPID`, then `/proc/<pid>/limits`) must run with the
//! drop-in's soft and hard limits.
//!
//! post-interrupt-check runs after the `service` interrupt restarted the unit (or a
//! reboot started it): a running unit with other limits fails it, and so does a
//! runtime none of whose units runs (a unit installed beside the one that runs, RKE2's
//! other unit or a distribution's containerd on an RKE2 node, may be stopped). config-check runs before that interrupt, so it cannot tell a restart still
//! to come from a drop-in that does not take: it says the restart is pending (a
//! warning naming both values) and passes.

use std::collections::BTreeMap;
use std::path::Path;

use skyhook_core::formats::limits::{self, MainProcess, ProcessLimits, RESOURCES, Resource, Rlim};
use skyhook_core::formats::unitfile::{self, SERVICE_SECTIONS};
use skyhook_core::host::systemd::Systemd;
use skyhook_core::{Host, Result};
use tuned::engine::Verify;

use crate::plan::Desired;

/// One `Limit*=` setting of a drop-in: the resource, `(soft, hard)` and the value as written.
type Setting = (Resource, (Rlim, Rlim), String);

/// One unit that got a drop-in: the unit, the drop-in's path and its settings.
type UnitDropIn<'a> = (String, &'a Path, Vec<Setting>);

/// The unit a drop-in at `path` belongs to (`/etc/systemd/system/<unit>.d/x.conf`),
/// when it is a service's drop-in.
fn unit_of(path: &Path) -> Option<String> {
    let dir = path.parent()?.file_name()?.to_str()?;
    dir.strip_suffix(".d")
        .filter(|u| u.ends_with(".service"))
        .map(str::to_string)
}

/// The `Limit*=` settings of a drop-in's text (the last of each in `[Service]`, as
/// systemd reads it). The catalog's drop-ins are ours: a line that does not parse is
/// not a limit and is left out.
fn settings(text: &str) -> Vec<Setting> {
    let Ok(file) = unitfile::parse(text, &SERVICE_SECTIONS) else {
        return Vec::new();
    };
    RESOURCES
        .iter()
        .filter_map(|r| {
            let a = file.last("Service", r.directive)?;
            let parsed = r.parse(&a.value).ok()?;
            Some((*r, parsed, a.value.clone()))
        })
        .collect()
}

/// The unmet expectations about the runtime's running limits (post-interrupt-check),
/// or none with a warning per pending restart (config-check).
pub fn unmet(host: &Host, desired: &Desired, verify: Verify) -> Result<Vec<String>> {
    let systemd = Systemd::new(host);
    // The copies of one catalog drop-in (one per runtime unit installed here) by source.
    let mut runtimes: BTreeMap<&str, Vec<UnitDropIn<'_>>> = BTreeMap::new();
    for (entry, bytes) in &desired.rendered.files {
        let Some(unit) = unit_of(&entry.path) else { continue };
        let wanted = settings(&String::from_utf8_lossy(bytes));
        if wanted.is_empty() {
            continue;
        }
        if !systemd.is_installed(&unit)? {
            log::info!(
                "{unit} is not installed here: {} takes effect when it is installed and started",
                entry.path.display()
            );
            continue;
        }
        runtimes
            .entry(entry.source.as_str())
            .or_default()
            .push((unit, entry.path.as_path(), wanted));
    }
    let mut problems = Vec::new();
    for units in runtimes.values() {
        problems.extend(runtime_problems(host, units)?);
    }
    if verify == Verify::Required {
        return Ok(problems);
    }
    for p in problems {
        log::warn!(
            "{p}. config-check passes: the restart is pending (the service interrupt config asked for, or the \
             next boot); post-interrupt-check requires it. If no restart is pending, look for a drop-in that \
             overrides ours (systemctl cat <unit>)"
        );
    }
    Ok(Vec::new())
}

/// What differs between the running units of one runtime and their drop-ins: every
/// running unit must have the drop-in's limits, and one of them must run (a unit that
/// is installed but stopped, RKE2's other unit or a distribution's containerd beside
/// RKE2, reads its drop-in when it starts).
fn runtime_problems(host: &Host, units: &[UnitDropIn<'_>]) -> Result<Vec<String>> {
    let mut out = Vec::new();
    let mut running = false;
    for (unit, path, wanted) in units {
        match MainProcess::of_unit(host, unit)? {
            MainProcess::NoSystemd => {
                log::info!("{unit} limits: systemd is not running on this host, so no runtime runs to check");
                return Ok(Vec::new());
            }
            MainProcess::NotRunning => {
                log::info!(
                    "{unit} is not running (MainPID 0): it reads {} when it starts",
                    path.display()
                );
            }
            MainProcess::Running { pid, limits } => {
                running = true;
                out.extend(differences(host, unit, pid, &limits, path, wanted));
            }
        }
    }
    if !running {
        let names: Vec<&str> = units.iter().map(|(u, _, _)| u.as_str()).collect();
        let first = names[0].strip_suffix(".service").unwrap_or(names[0]);
        out.push(format!(
            "the container runtime is not running: systemd reports no main process (MainPID 0) for {}, so {} \
             is not in effect: start it (systemctl start {first}) and read why it stopped (journalctl -u {first})",
            names.join(", "),
            units[0].1.display()
        ));
    }
    Ok(out)
}

/// What differs between `unit`'s main process `pid` (its `limits`) and the drop-in at `path`.
fn differences(
    host: &Host,
    unit: &str,
    pid: u32,
    actual: &ProcessLimits,
    path: &Path,
    wanted: &[Setting],
) -> Vec<String> {
    let service = unit.strip_suffix(".service").unwrap_or(unit);
    let nr_open = limits::nr_open(host);
    let mut out = Vec::new();
    for (resource, want, value) in wanted {
        let Some(got) = actual.get(resource) else {
            out.push(format!(
                "/proc/{pid}/limits of {unit} has no readable {:?} row, so {}={value} of {} cannot be confirmed",
                resource.proc_name,
                resource.directive,
                path.display()
            ));
            continue;
        };
        if limits::in_effect(resource, *want, got, nr_open) {
            log::info!(
                "{unit} (main process {pid}) runs with {}={value} of {}",
                resource.directive,
                path.display()
            );
            continue;
        }
        out.push(format!(
            "the container runtime {unit} (main process {pid}) runs with {} soft {} hard {} (/proc/{pid}/limits), \
             but {} sets {}={value} (soft {} hard {}): restart it (interrupt {{type: service, services: [{service}]}})",
            resource.directive,
            limits::show(got.0),
            limits::show(got.1),
            path.display(),
            resource.directive,
            limits::show(want.0),
            limits::show(want.1),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_drop_in_gives_its_unit_and_limits() {
        assert_eq!(
            unit_of(Path::new("/etc/systemd/system/rke2-agent.service.d/containerd.conf")).as_deref(),
            Some("rke2-agent.service")
        );
        assert_eq!(
            unit_of(Path::new("/etc/systemd/network/99-default.link.d/x.conf")),
            None
        );
        assert_eq!(unit_of(Path::new("/etc/default/grub.d/99_tuned.cfg")), None);
        let s = settings("[Service]\nLimitSTACK=1M\nLimitSTACK=67108864\nLimitNOFILE=1024:4096\n");
        let got: Vec<_> = s.iter().map(|(r, v, text)| (r.directive, *v, text.as_str())).collect();
        assert_eq!(
            got,
            [
                ("LimitSTACK", (Some(64 << 20), Some(64 << 20)), "67108864"),
                ("LimitNOFILE", (Some(1024), Some(4096)), "1024:4096"),
            ]
        );
        assert!(settings("[Link]\nMACAddressPolicy=none\n").is_empty());
    }
}

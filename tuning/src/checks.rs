// SPDX-License-Identifier: Apache-2.0
//! The checks. Each lists every unmet expectation.
//!
//! - config-check: every file holds exactly what the configMap asks for; nothing of
//!   an earlier configMap or of the bash package is left; no sysctl file applied
//!   after ours sets one of our keys to another value; pam_limits is in the session
//!   stack; the boot configuration carries the kernel arguments; no modprobe.d file
//!   read before ours installs another command for a module ours keeps out; no work
//!   is pending.
//! - post-interrupt-check: the live values: kernel parameters (field-wise), kernel
//!   arguments on `/proc/cmdline` (whole tokens, in order), and the limits of each
//!   service's main process (`/proc/<pid>/limits`) for its drop-in's `Limit*=`; no
//!   module `modprobe.conf` keeps out is loaded (`/proc/modules`) or built in.
//!
//! The cost is linear in the number of keys: one read per kernel parameter, one pass
//! over each sysctl file, no external process per key.

use std::collections::BTreeMap;
use std::path::PathBuf;

use skyhook_core::boot::OwnArgs;
use skyhook_core::boot::{self, contains_in_order};
use skyhook_core::error::excerpt;
use skyhook_core::formats::limits::{self, MainProcess};
use skyhook_core::formats::sysctl::{self as ksysctl, Key};
use skyhook_core::{Checklist, Host, Outcome, Result, Step};

use crate::dropin::DropIn;
use crate::input::{Desired, WantedFile};
use crate::ledger::{self, Ledger};
use crate::legacy;
use crate::modprobe::{self, ModprobeConf};
use crate::pam;
use crate::paths::Paths;
use crate::state::State;
use crate::{grub, modules, owners, sysctl, ulimit};

/// config-check.
pub fn config_check(step: &Step, paths: &Paths) -> Result<Outcome> {
    let host = &step.host;
    let desired = Desired::parse(&step.configmaps)?;
    let state: State = step.state().load()?;
    let mut c = Checklist::new();
    let files = desired.files(paths);
    check_files(host, &files, &mut c)?;
    check_leftovers(host, paths, &desired, &state, &files, &mut c)?;
    if let Some(conf) = &desired.sysctl {
        check_overrides(host, paths, conf, &mut c)?;
        check_other_holders(host, &paths.entry(), conf, &mut c)?;
    }
    if desired.ulimit.is_some() {
        match pam::missing(host)? {
            None => c.skip("pam_limits: no PAM session stack file on this host"),
            Some(missing) => {
                c.expect(missing.is_empty(), || {
                    format!(
                        "pam_limits is not in the session stack of {}: {} would not apply to those sessions; run config",
                        missing.join(", "),
                        ulimit::KEY
                    )
                });
            }
        }
    }
    check_boot_config(step, paths, &desired, &state, &mut c)?;
    if let Some(m) = &desired.modprobe {
        check_modprobe_overrides(host, paths, m, &mut c)?;
        modules::note_kept_out(host, m, &mut c)?;
    }
    c.expect(!state.pending.daemon_reload, || {
        "systemctl daemon-reload has not run since a drop-in changed (an earlier config was interrupted): run config"
            .into()
    });
    c.expect(!state.pending.boot_config, || {
        "the boot configuration has not been regenerated since the kernel arguments changed (an earlier config \
         was interrupted): run config"
            .into()
    });
    c.finish()?;
    Ok(Outcome::done())
}

/// Every file the configMap asks for holds exactly its content, mode 644.
fn check_files(host: &Host, files: &BTreeMap<PathBuf, WantedFile>, c: &mut Checklist) -> Result<()> {
    for (path, WantedFile { key, content, .. }) in files {
        match host.read(path)? {
            None => c.fail(format!(
                "{} is missing (configMap key {key}): config has not run since the key was added",
                path.display()
            )),
            Some(b) if b != content.as_bytes() => c.fail(format!(
                "{} does not hold what configMap key {key} asks for: it was edited on the node, or config has not \
                 run since the key changed",
                path.display()
            )),
            Some(_) => {
                let mode = host.mode(path)?;
                c.expect(mode == Some(0o644), || {
                    format!("{} has mode {:o}, expected 644", path.display(), mode.unwrap_or(0))
                });
            }
        }
    }
    Ok(())
}

/// No file of an earlier configMap or of the bash package is left.
fn check_leftovers(
    host: &Host,
    paths: &Paths,
    desired: &Desired,
    state: &State,
    files: &BTreeMap<PathBuf, WantedFile>,
    c: &mut Checklist,
) -> Result<()> {
    let mut leftovers: BTreeMap<_, _> = legacy::scan(host, paths)?
        .into_iter()
        .map(|m| (m.path, m.kind))
        .collect();
    for p in state.footprint.files.iter().filter(|p| host.exists(p)) {
        leftovers.entry(p.clone()).or_insert_with(|| paths.managed(p).kind);
    }
    for (path, kind) in leftovers {
        if files.contains_key(&path) || (path == paths.grub() && !desired.grub.is_empty()) {
            continue;
        }
        c.fail(format!(
            "{} ({}) is left over: no configMap key asks for it; run config to remove it",
            path.display(),
            kind.describe()
        ));
    }
    Ok(())
}

/// No sysctl file applied after ours sets one of our keys to another value.
fn check_overrides(host: &Host, paths: &Paths, conf: &sysctl::SysctlConf, c: &mut Checklist) -> Result<()> {
    let ours = paths.sysctl();
    let wanted = conf.wanted();
    let overrides = ksysctl::overrides(host, &ours, &wanted)?;
    c.expect_none(
        overrides
            .into_iter()
            .map(|o| {
                format!(
                    "{} line {} sets {} = {}, and is applied after {}, so it wins over configMap key {} ({} = {}): \
                     remove or change that line",
                    o.file.display(),
                    o.line,
                    o.key,
                    o.value,
                    ours.display(),
                    sysctl::KEY,
                    o.key,
                    wanted.get(&o.key).map_or("", String::as_str)
                )
            })
            .collect(),
    );
    Ok(())
}

/// No modprobe.d file kmod reads before ours installs another command for a module
/// ours keeps out with an `install` line (the first one kmod reads wins).
fn check_modprobe_overrides(host: &Host, paths: &Paths, conf: &ModprobeConf, c: &mut Checklist) -> Result<()> {
    let ours = paths.modprobe();
    let installs: BTreeMap<&str, &modprobe::Line> = conf
        .lines
        .iter()
        .filter(|l| matches!(l.command, modprobe::Command::Install(_)))
        .map(|l| (l.module.as_str(), l))
        .collect();
    let modules = installs.keys().copied().collect();
    let overrides = modprobe::overrides(host, &ours, &modules)?;
    let same = |o: &modprobe::Override| match &installs[o.module.as_str()].command {
        modprobe::Command::Install(ours) => ours.trim() == o.command.trim(),
        _ => false,
    };
    c.expect_none(
        overrides
            .into_iter()
            .filter(|o| !same(o))
            .map(|o| {
                format!(
                    "{} line {} installs {} with {}, and kmod reads it before {}, so it wins over configMap key {} \
                     line {} ({}): remove or change that line",
                    o.file.display(),
                    o.line,
                    o.module,
                    excerpt(&o.command),
                    ours.display(),
                    modprobe::KEY,
                    installs[o.module.as_str()].line,
                    installs[o.module.as_str()].text.trim()
                )
            })
            .collect(),
    );
    Ok(())
}

fn check_boot_config(step: &Step, paths: &Paths, desired: &Desired, state: &State, c: &mut Checklist) -> Result<()> {
    let host = &step.host;
    if desired.grub.is_empty() {
        c.expect(state.grub.is_empty(), || {
            format!(
                "kernel arguments of an earlier configMap ({}) are still in the boot configuration: run config",
                state.grub.args.join(" ")
            )
        });
        return Ok(());
    }
    let boot = match grub::boot_config(step) {
        Ok(b) => b,
        Err(e) => {
            c.fail(format!("{}: {e}", grub::KEY));
            return Ok(());
        }
    };
    let header = paths.header(grub::KEY);
    let grub_path = paths.grub();
    let own = OwnArgs {
        host,
        boot: &boot,
        drop_in: &grub_path,
        header: &header,
    };
    if !own.is_current(&state.grub, &desired.grub)? {
        c.fail(format!(
            "the kernel arguments of configMap key {} ({}) are not applied: run config",
            grub::KEY,
            desired.grub.join(" ")
        ));
        return Ok(());
    }
    match boot.entries(host)?.into_iter().next() {
        None => c.skip("the generated boot configuration has no boot entry to inspect"),
        Some(first) => {
            c.expect(contains_in_order(&first, &desired.grub), || {
                format!(
                    "the default boot entry does not carry {} in this order (it has: {}): the boot configuration \
                     was not regenerated; run config",
                    desired.grub.join(" "),
                    first.join(" ")
                )
            });
        }
    }
    Ok(())
}

/// post-interrupt-check.
pub fn post_interrupt_check(step: &Step, paths: &Paths) -> Result<Outcome> {
    let host = &step.host;
    let desired = Desired::parse(&step.configmaps)?;
    let mut c = Checklist::new();
    if let Some(conf) = &desired.sysctl {
        check_live_sysctl(host, conf, &mut c)?;
        check_other_holders(host, &paths.entry(), conf, &mut c)?;
    }
    if !desired.grub.is_empty() {
        let cmdline = boot::running_cmdline(host)?;
        c.expect(contains_in_order(&cmdline, &desired.grub), || {
            format!(
                "the running kernel was not booted with {} (whole arguments, in this order); /proc/cmdline: {}. \
                 Reboot the node (interrupt {{type: reboot}}) after config",
                desired.grub.join(" "),
                cmdline.join(" ")
            )
        });
        skyhook_core::boot::hugepages::check_reserved(host, grub::KEY, &desired.grub, &mut c)?;
    }
    for d in desired.dropins.values().filter(|d| !d.limits.is_empty()) {
        check_service_limits(host, d, &mut c)?;
    }
    if let Some(m) = &desired.modprobe {
        modules::check_kept_out(host, m, &mut c)?;
    }
    c.finish()?;
    Ok(Outcome::done())
}

/// Keys of ours whose live value another entry of the engine set after us (two
/// packages, or two entries, on one key): named, so the SCR's author keeps one.
fn check_other_holders(host: &Host, me: &str, conf: &sysctl::SysctlConf, c: &mut Checklist) -> Result<()> {
    let ledger: Ledger = ledger::store(host).load()?;
    // Only a key another entry holds too can have been set by it: the live values of
    // those alone are read (usually none, so the check costs no read per key).
    let contested: Vec<_> = conf
        .entries
        .iter()
        .filter(|e| {
            ledger
                .sysctl
                .get(e.a.key.as_path_str())
                .is_some_and(|holders| holders.iter().any(|h| h.entry != me))
        })
        .collect();
    let keys: Vec<&Key> = contested.iter().map(|e| &e.a.key).collect();
    let values = ksysctl::read_many(host, &keys)?;
    for (e, value) in contested.into_iter().zip(values) {
        let a = &e.a;
        let Some(v) = value.filter(|v| !ksysctl::same_value(v, &a.value)) else {
            continue;
        };
        if let Some(other) = owners::setter(ledger.sysctl.get(a.key.as_path_str()), me, &v) {
            c.fail(format!(
                "{} is {v:?}, set by {} after this entry (configMap key {} line {} wants {:?}): two entries set \
                 this key; keep it in one of them. Uninstalling either gives the key to the other, the last \
                 one gives back the original",
                a.key,
                other.entry,
                sysctl::KEY,
                a.line,
                a.value
            ));
        }
    }
    Ok(())
}

fn check_live_sysctl(host: &Host, conf: &sysctl::SysctlConf, c: &mut Checklist) -> Result<()> {
    let keys: Vec<&Key> = conf.entries.iter().map(|e| &e.a.key).collect();
    let values = ksysctl::read_many(host, &keys)?;
    for (e, value) in conf.entries.iter().zip(values) {
        let a = &e.a;
        match value {
            None if a.ignore_failure => c.skip(format!("{}: not in this kernel ('-' prefix)", a.key)),
            None => c.fail(format!(
                "{} does not exist in this kernel (configMap key {} line {})",
                a.key,
                sysctl::KEY,
                a.line
            )),
            Some(v) if ksysctl::same_value(&v, &a.value) => c.pass(format_args!("{} = {v}", a.key)),
            Some(v) if a.ignore_failure => c.skip(format!(
                "{} is {v:?}, not {:?}; its '-' prefix says failures are ignored",
                a.key, a.value
            )),
            Some(v) => c.fail(format!(
                "{} is {v:?} live, configMap key {} line {} wants {:?}",
                a.key,
                sysctl::KEY,
                a.line,
                a.value
            )),
        }
    }
    Ok(())
}

fn check_service_limits(host: &Host, d: &DropIn, c: &mut Checklist) -> Result<()> {
    let unit = format!("{}.service", d.unit);
    let (pid, actual) = match MainProcess::of_unit(host, &unit)? {
        MainProcess::NoSystemd => {
            c.skip(format!("{unit} limits: systemd is not running on this host"));
            return Ok(());
        }
        MainProcess::NotRunning => {
            c.fail(format!(
                "{unit} has no main process (MainPID=0: stopped, or not installed on this node), so the Limit* \
                 settings of configMap key {} are not in effect",
                d.key
            ));
            return Ok(());
        }
        MainProcess::Running { pid, limits } => (pid, limits),
    };
    let nr_open = limits::nr_open(host);
    for l in &d.limits {
        let Some((soft, hard)) = actual.get(&l.resource) else {
            c.fail(format!(
                "/proc/{pid}/limits of {unit} does not list {}",
                l.resource.proc_name
            ));
            continue;
        };
        c.expect(limits::in_effect(&l.resource, (l.soft, l.hard), (soft, hard), nr_open), || {
            format!(
                "{unit} (main process {pid}) runs with {} soft {} hard {} (/proc/{pid}/limits), but configMap key {} \
                 line {} sets {}={} (soft {} hard {}): restart the service (interrupt {{type: service, services: [{}]}}) \
                 or look for a drop-in that overrides it (systemctl cat {unit})",
                l.resource.directive,
                limits::show(soft),
                limits::show(hard),
                d.key,
                l.line,
                l.resource.directive,
                l.value,
                limits::show(l.soft),
                limits::show(l.hard),
                d.unit
            )
        });
    }
    Ok(())
}

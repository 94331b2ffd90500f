// SPDX-License-Identifier: Apache-2.0
//! config-check and post-interrupt-check: the service runs, every deployed profile
//! and script is exactly what the configMap says, nothing removed from the configMap
//! is left, the active profile(s) are `tuned_profile`, and `tuned-adm verify` passes.
//!
//! `INTERRUPT=true` in the package's SCR `env` (the bash package's variable) says the
//! profile needs its interrupt before it can verify: config-check then only warns
//! when verify fails; post-interrupt-check always requires it to pass, and every
//! `hugepages=` pool of the active chain's kernel arguments reserved for its size.

use std::collections::BTreeMap;
use std::path::PathBuf;

use skyhook_core::host::command::Cmd;
use skyhook_core::host::systemd::Systemd;
use skyhook_core::{Checklist, Error, Host, Result, Step};

use crate::activate::{self, Active};
use crate::deploy::State;
use crate::input::{PROFILE_KEY, Request};
use crate::layout::Tuned;
use crate::plan::Item;
use crate::service::TUNED;

/// The environment variable that lets config-check pass a failing verify.
pub const INTERRUPT_VAR: &str = "INTERRUPT";

/// How a failing `tuned-adm verify` counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verify {
    /// config-check: a warning when `INTERRUPT=true`, else a failure.
    InterruptMayExcuse,
    /// post-interrupt-check: always a failure.
    Required,
}

/// Whether `INTERRUPT` is `true` (case-insensitive); any other value is false, and a
/// value that is neither true nor false is pointed out.
pub fn interrupt_declared(value: Option<&str>) -> bool {
    let Some(v) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return false;
    };
    if v.eq_ignore_ascii_case("true") {
        return true;
    }
    if !v.eq_ignore_ascii_case("false") {
        log::warn!("{INTERRUPT_VAR}={v:?} is neither true nor false; treated as false");
    }
    false
}

/// Runs config-check (`Verify::InterruptMayExcuse`) or post-interrupt-check (`Verify::Required`).
pub fn config_check(step: &Step, verify: Verify) -> Result<()> {
    config_check_with(step, verify, &BTreeMap::new())
}

/// [`config_check`] for a package that drives tuned as a library (through
/// [`crate::engine::run`]): the same request as [`crate::apply::config_with`] was given.
pub fn config_check_with(step: &Step, verify: Verify, files: &BTreeMap<PathBuf, Vec<u8>>) -> Result<()> {
    let host = &step.host;
    let mut request = Request::parse(&step.configmaps)?;
    request.files = files.clone();
    let mut c = Checklist::new();
    let tuned = match Tuned::detect(step) {
        Ok(t) => t,
        Err(Error::Action(why)) => {
            c.fail(why);
            return c.finish();
        }
        Err(e) => return Err(e),
    };
    let active = Systemd::new(host).is_active(TUNED)?;
    match active {
        Some(a) => {
            c.expect(a, || {
                "the tuned service is not active (systemctl is-active tuned); see `journalctl -u tuned`".into()
            });
        }
        None => c.skip("tuned service running: systemd is not running on this host (chroot or image build)"),
    }

    check_deployed(step, &request, &tuned, &mut c)?;
    if let Some(names) = &request.active {
        check_active(host, names, active, &mut c)?;
    }

    if verify == Verify::Required {
        check_hugepages(step, &mut c)?;
    }

    match active {
        Some(true) => run_verify(host, verify, &mut c)?,
        Some(false) => c.skip("tuned-adm verify: the tuned service is not running"),
        None => c.skip("tuned-adm verify: it needs the running tuned daemon, and systemd is not running on this host"),
    }
    c.finish()
}

/// post-interrupt-check: every `hugepages=` pool the active chain's bootloader
/// options ask for (as config recorded them) is reserved for its size (core's
/// `boot::hugepages::check_reserved`).
fn check_hugepages(step: &Step, c: &mut Checklist) -> Result<()> {
    let state: State = step.state().load()?;
    let chain = state.bootloader.unwrap_or_default();
    let args = crate::bootloader::kernel_args(&chain);
    skyhook_core::boot::hugepages::check_reserved(&step.host, &crate::bootloader::chain_source(&chain), &args, c)
}

/// Every deployed file as the configMap says, nothing left of a key that is gone.
fn check_deployed(step: &Step, request: &Request, tuned: &Tuned, c: &mut Checklist) -> Result<()> {
    let host = &step.host;
    let items = request.items(tuned);
    for (path, item) in &items {
        let shown = path.display();
        match item {
            Item::File { content, mode } => {
                if !host.exists(path) {
                    c.fail(format!("{shown} is missing; config deploys it from the configMap"));
                } else {
                    c.expect(host.has_content(path, content, *mode)?, || {
                        format!("{shown} differs from the configMap (content, or mode other than {mode:o})")
                    });
                }
            }
            Item::Link { target } => {
                c.expect(host.read_link(path)?.as_deref() == Some(target.as_path()), || {
                    format!("{shown} is not a link to {}", target.display())
                });
            }
        }
    }
    let state: State = step.state().load()?;
    for f in state
        .footprint
        .files
        .iter()
        .filter(|f| !items.contains_key(*f) && host.exists(f))
    {
        c.fail(format!(
            "{} is still on the node, but its configMap key is gone (config removes it)",
            f.display()
        ));
    }
    Ok(())
}

/// The active profile(s) are `names` (running, or recorded for tuned's start).
fn check_active(host: &Host, names: &[String], active: Option<bool>, c: &mut Checklist) -> Result<()> {
    let joined = names.join(" ");
    match active {
        Some(true) => match activate::query(host)? {
            Active::Running(now) => {
                c.expect(now == names, || {
                    format!(
                        "the active tuned profile is {:?}, but {PROFILE_KEY} is {joined:?}",
                        now.join(" ")
                    )
                });
            }
            other => c.fail(format!(
                "tuned has no active profile ({other:?}); {PROFILE_KEY} is {joined:?}"
            )),
        },
        Some(false) => {}
        None => {
            let recorded = activate::recorded(host)?;
            c.expect(recorded.as_deref() == Some(names), || {
                format!(
                    "{} records {:?} for tuned's start, but {PROFILE_KEY} is {joined:?}",
                    activate::ACTIVE_PROFILE,
                    recorded.unwrap_or_default().join(" ")
                )
            });
        }
    }
    Ok(())
}

fn run_verify(host: &Host, verify: Verify, c: &mut Checklist) -> Result<()> {
    let out = host.run(&Cmd::new("tuned-adm").arg("verify"))?;
    if out.success() {
        log::info!("tuned-adm verify: the system settings match the active profile");
        c.pass("tuned-adm verify");
        return Ok(());
    }
    let status = out.status_text();
    for line in out
        .stdout
        .lines()
        .chain(out.stderr.lines())
        .filter(|l| !l.trim().is_empty())
    {
        log::warn!("  tuned-adm: {line}");
    }
    activate::show_log(host, "tuned-adm verify");
    let excused =
        verify == Verify::InterruptMayExcuse && interrupt_declared(std::env::var(INTERRUPT_VAR).ok().as_deref());
    match verify {
        Verify::InterruptMayExcuse if excused => log::warn!(
            "tuned-adm verify failed ({status}); {INTERRUPT_VAR}=true says the profile needs its interrupt before \
             it can verify, so config-check passes. post-interrupt-check requires verify to pass"
        ),
        Verify::InterruptMayExcuse => c.fail(format!(
            "tuned-adm verify failed ({status}): the system settings differ from the profile (tuned's log above \
             says which). If the profile needs an interrupt (e.g. a reboot for [bootloader] options) before it can \
             verify, declare that interrupt in the SCR and set {INTERRUPT_VAR}=true in the package's env"
        )),
        Verify::Required => c.fail(format!(
            "tuned-adm verify failed after the interrupt ({status}): the system settings differ from the profile \
             (tuned's log above says which)"
        )),
    }
    Ok(())
}

/// apply-check and upgrade-check: tuned installed, service enabled and active.
pub fn install_check(step: &Step) -> Result<()> {
    let host = &step.host;
    let mut c = Checklist::new();
    for program in ["tuned", "tuned-adm"] {
        c.expect(host.which(program).is_some(), || {
            format!("{program} is not installed (not found on this host); the apply step installs the tuned package")
        });
    }
    let systemd = Systemd::new(host);
    c.expect(systemd.is_enabled(TUNED)?, || {
        "the tuned service is not enabled (systemctl is-enabled tuned): it would not start at boot".into()
    });
    match systemd.is_active(TUNED)? {
        Some(active) => {
            c.expect(active, || {
                "the tuned service is not active (systemctl is-active tuned); see `journalctl -u tuned` and \
                 /var/log/tuned/tuned.log"
                    .into()
            });
        }
        None => c.skip("tuned service running: systemd is not running on this host (chroot or image build)"),
    }
    c.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interrupt_is_true_only_when_it_says_true() {
        assert!(interrupt_declared(Some("true")));
        assert!(interrupt_declared(Some(" TRUE ")));
        for no in [None, Some(""), Some("false"), Some("yes"), Some("1")] {
            assert!(!interrupt_declared(no), "{no:?}");
        }
    }
}

// SPDX-License-Identifier: Apache-2.0
//! Optional sysctl keys (catalog manifest `optional_sysctls`): where the running
//! kernel lacks one (no `/proc/sys/<key>`), it is skipped with a warning naming the
//! key, the kernel and why, never a failure; where the kernel has it, it is held to
//! its value like any other key.

use skyhook_core::formats::sysctl::{self, Key};
use skyhook_core::{Checklist, Host, Result};

use crate::catalog::Profile;

/// The file that names the running kernel.
pub const OSRELEASE: &str = "/proc/sys/kernel/osrelease";

/// An optional key of a profile with its live value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionalKey {
    /// The key.
    pub key: Key,
    /// The profile's value.
    pub value: String,
    /// The live value (`None`: the kernel lacks it).
    pub live: Option<String>,
    /// Why a kernel may lack it.
    pub reason: String,
}

/// The optional keys of `profile` with their live values.
pub fn read(host: &Host, profile: &Profile<'_>) -> Result<Vec<OptionalKey>> {
    let (assignments, _) = sysctl::parse(profile.sysctl.text);
    let mut out = Vec::new();
    for a in assignments {
        if let Some(reason) = profile.optional_reason(&a.key.dotted()) {
            out.push(OptionalKey {
                live: sysctl::read(host, &a.key)?,
                key: a.key,
                value: a.value,
                reason: reason.to_string(),
            });
        }
    }
    Ok(out)
}

/// The running kernel as `uname -r` names it, for messages.
pub fn kernel(host: &Host) -> String {
    match host.read_to_string(OSRELEASE) {
        Ok(Some(release)) if !release.trim().is_empty() => format!("kernel {}", release.trim()),
        _ => format!("the running kernel ({OSRELEASE} unreadable)"),
    }
}

/// Logs one warning per optional key the kernel lacks; returns how many.
pub fn warn_missing(host: &Host, keys: &[OptionalKey]) -> usize {
    let missing: Vec<&OptionalKey> = keys.iter().filter(|k| k.live.is_none()).collect();
    if !missing.is_empty() {
        let kernel = kernel(host);
        for k in &missing {
            log::warn!(
                "{} is not in {kernel} (no /proc/sys/{}): skipped, not applied; it is {}",
                k.key,
                k.key.as_path_str(),
                k.reason
            );
        }
    }
    missing.len()
}

/// Holds every optional key the kernel has to its value (tuning's check only
/// skips a `-` key that differs).
pub fn check_present(keys: &[OptionalKey], c: &mut Checklist) {
    for k in keys {
        match &k.live {
            None => c.skip(format!("{}: not in this kernel (optional)", k.key)),
            Some(v) if sysctl::same_value(v, &k.value) => c.pass(format_args!("{} = {v}", k.key)),
            Some(v) => c.fail(format!(
                "{} is {v:?} live, the catalog profile wants {:?}: run config (or look for what set it since)",
                k.key, k.value
            )),
        }
    }
}

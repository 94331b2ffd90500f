// SPDX-License-Identifier: Apache-2.0
//! The options nvidia-tuned sets in `/etc/tuned/tuned-main.conf` (the manifest's
//! `tuned_main`: `reapply_sysctl = 0`, as the original sets it, so the profile's
//! sysctls win over `/etc/sysctl.d`). A file we edit but do not own: only the
//! option's line changes (or one line is appended), every other byte is kept, and
//! the original is recorded before the first change and put back by uninstall.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use skyhook_core::records::original::SavedFile;
use skyhook_core::records::state::{Record, StateStore};
use skyhook_core::{Host, Result};

/// tuned's daemon configuration.
pub const MAIN_CONF: &str = "/etc/tuned/tuned-main.conf";
/// The state kind holding the original of [`MAIN_CONF`] (per SCR package name).
pub const STATE_KIND: &str = "nvidia-tuned-main-conf";

/// The original of tuned-main.conf, recorded before the first change.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Saved {
    /// The file as it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original: Option<SavedFile>,
    /// The file changed and tuned has not been restarted since (kept across a kill).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub restart_pending: bool,
}

impl Record for Saved {
    fn is_empty(&self) -> bool {
        self.original.is_none() && !self.restart_pending
    }
}

/// Whether `line` sets `option` (`option = value`, blanks allowed around `=`).
fn sets(line: &[u8], option: &str) -> bool {
    let t = line.trim_ascii_start();
    t.strip_prefix(option.as_bytes())
        .is_some_and(|rest| rest.trim_ascii_start().starts_with(b"="))
}

/// `current` with each option set: its first line replaced, or a line appended.
pub fn desired(current: Option<&[u8]>, options: &BTreeMap<String, String>) -> Vec<u8> {
    let mut out = current.unwrap_or_default().to_vec();
    for (option, value) in options {
        let wanted = format!("{option} = {value}");
        let mut lines: Vec<Vec<u8>> = out.split_inclusive(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
        match lines.iter_mut().find(|l| sets(l, option)) {
            Some(line) => {
                let eol: &[u8] = if line.ends_with(b"\n") { b"\n" } else { b"" };
                let set_to = line.splitn(2, |&b| b == b'=').nth(1).map(<[u8]>::trim_ascii);
                if set_to != Some(value.as_bytes()) {
                    *line = [wanted.as_bytes(), eol].concat();
                }
            }
            None => {
                if lines.last().is_some_and(|l| !l.ends_with(b"\n")) {
                    lines.last_mut().expect("a last line").push(b'\n');
                }
                lines.push(format!("{wanted}\n").into_bytes());
            }
        }
        out = lines.concat();
    }
    out
}

/// Sets the options; returns whether tuned must restart to read them: the file
/// changed now, or changed in a run killed before its restart.
pub fn apply(host: &Host, store: &StateStore, options: &BTreeMap<String, String>) -> Result<bool> {
    let current = host.read(MAIN_CONF)?;
    let wanted = desired(current.as_deref(), options);
    let mut saved: Saved = store.load()?;
    if current.as_deref() == Some(wanted.as_slice()) {
        return Ok(saved.restart_pending);
    }
    if saved.original.is_none() {
        saved.original = Some(SavedFile::capture(host, MAIN_CONF)?);
    }
    saved.restart_pending = true;
    store.save(&saved)?;
    host.write(MAIN_CONF, &wanted, 0o644)?;
    let shown: Vec<String> = options.iter().map(|(k, v)| format!("{k} = {v}")).collect();
    log::info!("set {} in {MAIN_CONF}", shown.join(", "));
    Ok(true)
}

/// Records that tuned has read the options (restarted, or not running).
pub fn restarted(store: &StateStore) -> Result<()> {
    let mut saved: Saved = store.load()?;
    if saved.restart_pending {
        saved.restart_pending = false;
        store.save(&saved)?;
    }
    Ok(())
}

/// Whether the options are set as wanted.
pub fn holds(host: &Host, options: &BTreeMap<String, String>) -> Result<bool> {
    let current = host.read(MAIN_CONF)?;
    Ok(current.is_some() && current.as_deref() == Some(desired(current.as_deref(), options).as_slice()))
}

/// Puts the recorded original back (or removes a file that did not exist) and
/// forgets it; returns whether anything was recorded.
pub fn restore(host: &Host, store: &StateStore) -> Result<bool> {
    let saved: Saved = store.load()?;
    let Some(original) = &saved.original else {
        // Also finishes a clear a killed run began (its empty directories).
        store.clear()?;
        return Ok(false);
    };
    if original.restore(host)? {
        log::info!("restored {MAIN_CONF} as it was before this package");
    }
    store.clear()?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> BTreeMap<String, String> {
        BTreeMap::from([("reapply_sysctl".to_string(), "0".to_string())])
    }

    #[test]
    fn only_the_option_line_changes() {
        let before = b"# comment\r\ndaemon = 1\nreapply_sysctl = 1\n\xe9 latin-1 = x\n";
        let after = desired(Some(before), &opts());
        assert_eq!(
            after,
            b"# comment\r\ndaemon = 1\nreapply_sysctl = 0\n\xe9 latin-1 = x\n"
        );
    }

    #[test]
    fn a_missing_option_is_appended_after_a_missing_final_newline() {
        assert_eq!(
            desired(Some(b"daemon = 1"), &opts()),
            b"daemon = 1\nreapply_sysctl = 0\n"
        );
        assert_eq!(desired(None, &opts()), b"reapply_sysctl = 0\n");
    }

    #[test]
    fn an_option_already_set_is_left_byte_for_byte() {
        let before = b"reapply_sysctl=0\n";
        assert_eq!(desired(Some(before), &opts()), before);
        let exact = b"  reapply_sysctl = 0\n";
        assert_eq!(desired(Some(exact), &opts()), exact);
    }
}

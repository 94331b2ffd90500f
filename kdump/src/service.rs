// SPDX-License-Identifier: Apache-2.0
//! The kdump service and its configuration file (`/etc/default/kdump-tools` or
//! `/etc/kdump.conf`): the configMap's `kdump.conf` deployed atomically with the
//! original kept, put back when the key goes away or on uninstall, and the service
//! restarted when it runs and its configuration changed.

use skyhook_core::host::systemd::{Applied, Systemd};
use skyhook_core::records::original::SavedFile;
use skyhook_core::records::state::StateStore;
use skyhook_core::{Host, Result};

use crate::platform::Platform;
use crate::state::{ConfRecord, State};

/// Makes the service configuration `desired` (`None`: the original), recording in
/// `state`; returns whether the file changed. Unchanged content writes nothing.
pub fn deploy(
    host: &Host,
    platform: &Platform,
    state: &mut State,
    store: &StateStore,
    desired: Option<&str>,
) -> Result<bool> {
    let path = platform.kdump_conf();
    match (desired, state.kdump_conf.clone()) {
        (Some(content), record) => {
            let original = match record {
                Some(r) => r.original,
                None => SavedFile::capture(host, path)?,
            };
            let mode = original.mode.unwrap_or(0o644);
            state.kdump_conf = Some(ConfRecord {
                original,
                deployed: content.to_string(),
            });
            state.store(store)?;
            let changed = host.write(path, content.as_bytes(), mode)?;
            if changed {
                log::info!("deployed the configMap's kdump.conf to {path}");
            }
            Ok(changed)
        }
        (None, Some(record)) => {
            let changed = record.original.restore(host)?;
            if changed {
                log::info!("put the original {path} back");
            }
            state.kdump_conf = None;
            state.store(store)?;
            Ok(changed)
        }
        (None, None) => Ok(false),
    }
}

/// Restarts the service when it is running (after its configuration changed).
pub fn restart_if_running(host: &Host, platform: &Platform) -> Result<()> {
    let unit = platform.service();
    let systemd = Systemd::new(host);
    match systemd.is_active(unit)? {
        Some(true) => {
            if systemd.restart(unit)? == Applied::Done {
                log::info!("restarted {unit}: it runs with the new configuration");
            }
        }
        Some(false) => log::info!("{unit} is not running; it reads the new configuration when it starts"),
        None => log::info!("systemd is not running on this host; {unit} reads the new configuration when it starts"),
    }
    Ok(())
}

/// The first line where `found` differs from `expected`, for check messages.
pub fn first_difference(expected: &str, found: &str) -> String {
    let (mut e, mut f) = (expected.lines(), found.lines());
    let mut n = 1;
    loop {
        match (e.next(), f.next()) {
            (Some(a), Some(b)) if a == b => n += 1,
            (None, None) => {
                return "the same lines, but different line endings or a missing final newline".to_string();
            }
            (a, b) => {
                return format!(
                    "line {n}: expected {}, found {}",
                    a.map_or("the end of the file".to_string(), |l| format!("{l:?}")),
                    b.map_or("the end of the file".to_string(), |l| format!("{l:?}"))
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_first_differing_line() {
        assert_eq!(
            first_difference("a\nb\nc\n", "a\nx\nc\n"),
            "line 2: expected \"b\", found \"x\""
        );
        assert_eq!(
            first_difference("a\nb\n", "a\n"),
            "line 2: expected \"b\", found the end of the file"
        );
        assert!(first_difference("a\n", "a").contains("final newline"));
    }
}

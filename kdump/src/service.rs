// SPDX-License-Identifier: Apache-2.0
//! The kdump service and its configuration file (`/etc/default/kdump-tools` or
//! `/etc/kdump.conf`): the configMap's `kdump.conf` deployed atomically with the
//! original kept, put back when the key goes away or on uninstall, and the service
//! restarted when it runs and its configuration changed. On RHEL-like hosts where
//! the package sets crashkernel and kdumpctl knows the option, the file also says
//! `auto_reset_crashkernel no` ([`autoreset`](crate::autoreset)), so kdumpctl does not
//! put the distribution's default back at the next kernel install.

use skyhook_core::host::systemd::{Applied, Systemd};
use skyhook_core::records::original::SavedFile;
use skyhook_core::records::state::StateStore;
use skyhook_core::{Error, Host, Result};

use crate::autoreset::{self, Overridden, Support};
use crate::input::KDUMP_CONF_KEY;
use crate::platform::Platform;
use crate::state::{ConfRecord, State};

/// The service configuration config makes true, and what it changed of the given text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Desired {
    /// The file's content (`None`: the original).
    pub text: Option<String>,
    /// The value of `auto_reset_crashkernel` it overrides with `no`, if any.
    pub overridden: Option<Overridden>,
    /// The configMap's lines setting `auto_reset_crashkernel` it leaves out, on a
    /// node whose kdumpctl refuses the option (1-based).
    pub dropped: Vec<usize>,
    /// Whether this node's kdumpctl knows `auto_reset_crashkernel`.
    pub support: Option<Support>,
}

/// The service configuration config makes true (see [`Desired`]).
///
/// `user` is the configMap's `kdump.conf`; `sets_crashkernel` whether the package
/// puts crashkernel on the boot configuration. On RHEL-like hosts whose kdumpctl
/// knows `auto_reset_crashkernel` ([`autoreset::kdumpctl_knows_option`]) and where
/// the package sets crashkernel, the option is pinned to `no`: in the configMap's
/// file, or else in the node's own (the original while the file still holds what the
/// package wrote, else the file as someone changed it since, so their edits stay).
/// Where kdumpctl does not know it, the option is never written: the configMap's
/// lines setting it are left out, and a line an earlier run wrote goes with the
/// original put back.
pub fn desired(
    host: &Host,
    platform: &Platform,
    state: &State,
    user: Option<&str>,
    sets_crashkernel: bool,
) -> Result<Desired> {
    let plain = Desired {
        text: user.map(str::to_string),
        ..Desired::default()
    };
    if !platform.has_kdumpctl() {
        return Ok(plain);
    }
    let support = autoreset::kdumpctl_knows_option(host)?;
    if !support.known() {
        let Some(user) = user else {
            return Ok(Desired {
                support: Some(support),
                ..Desired::default()
            });
        };
        let (text, dropped) = autoreset::strip(user.as_bytes());
        let text = String::from_utf8(text).expect("lines of UTF-8 text are UTF-8");
        return Ok(Desired {
            text: Some(text),
            dropped,
            support: Some(support),
            ..Desired::default()
        });
    }
    if !sets_crashkernel {
        return Ok(Desired {
            support: Some(support),
            ..plain
        });
    }
    let path = platform.kdump_conf();
    let base = match (user, &state.kdump_conf) {
        (Some(text), _) => text.as_bytes().to_vec(),
        (None, Some(rec)) if host.read(path)?.as_deref() == Some(rec.deployed.as_bytes()) => {
            rec.original.content()?.unwrap_or_default()
        }
        (None, _) => host.read(path)?.unwrap_or_default(),
    };
    let (pinned, overridden) = autoreset::pin(&base);
    let text = String::from_utf8(pinned).map_err(|e| {
        Error::action(format!(
            "{path} is not UTF-8 text (byte {}): cannot add `{}` to it safely; fix the file, or give its \
             content as the configMap's {KDUMP_CONF_KEY:?} key",
            e.utf8_error().valid_up_to(),
            autoreset::PINNED_LINE
        ))
    })?;
    Ok(Desired {
        text: Some(text),
        overridden,
        dropped: Vec::new(),
        support: Some(support),
    })
}

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

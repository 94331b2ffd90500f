// SPDX-License-Identifier: Apache-2.0
//! chrony: the Amazon Time Sync Service (`169.254.169.123`) as the one preferred
//! source of `/etc/chrony/chrony.conf`, with the distribution's `pool` lines
//! removed, as upstream. Upstream appended its `server` line on every run and never
//! restarted chrony; here the file holds the line once (copies an earlier run of the
//! bash package appended are folded into one), chrony is restarted when the file
//! changed, and the original is recorded first and given back at uninstall
//! (exactly while nobody changed the file since), with a restart again.

use skyhook_core::boot::edited::{Content, undo_edit};
use skyhook_core::host::systemd::Systemd;
use skyhook_core::records::original::SavedFile;
use skyhook_core::{Error, Result, Step};

use crate::record::{Edited, Record};

/// chrony's configuration on Debian-like hosts.
pub const CONF: &str = "/etc/chrony/chrony.conf";
/// The time source line (upstream's).
pub const SERVER: &str = "server 169.254.169.123 prefer iburst minpoll 4 maxpoll 4";
/// chrony's unit on Debian-like hosts.
const UNIT: &str = "chrony";

/// `text` with no `pool` line and [`SERVER`] exactly once, at the end.
pub fn configured(text: &str) -> String {
    let mut out: String = text
        .split_inclusive('\n')
        .filter(|l| !l.starts_with("pool") && l.trim_end() != SERVER)
        .collect();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(SERVER);
    out.push('\n');
    out
}

/// Configures chrony (recording first) and restarts it when the file changed.
pub fn apply(step: &Step, record: &mut Record) -> Result<()> {
    let host = &step.host;
    let Some(current) = host.read_to_string(CONF)? else {
        return Err(Error::action(format!(
            "{CONF} does not exist although chrony is installed; reinstall chrony, then run apply again"
        )));
    };
    let wanted = configured(&current);
    if record.chrony.is_none() {
        record.chrony = Some(Edited {
            original: SavedFile::capture(host, CONF)?,
            written: Content::new(wanted.as_bytes()),
        });
        record.save(step)?;
    }
    if wanted != current {
        record.chrony.as_mut().expect("recorded").written = Content::new(wanted.as_bytes());
        record.chrony_restart_owed = true;
        record.save(step)?;
        host.write(CONF, wanted.as_bytes(), host.mode(CONF)?.unwrap_or(0o644))?;
        log::info!("chrony: {SERVER} in {CONF}, pool lines removed");
    }
    restart_owed(step, record)
}

/// Restarts chrony when the record owes it (skipped, with a warning, where systemd
/// is not running: a chroot, an image being built).
fn restart_owed(step: &Step, record: &mut Record) -> Result<()> {
    if record.chrony_restart_owed {
        Systemd::new(&step.host).restart(UNIT)?;
        record.chrony_restart_owed = false;
        record.save(step)?;
    }
    Ok(())
}

/// The problems of chrony's configuration.
pub fn check(step: &Step) -> Result<Vec<String>> {
    let text = step.host.read_to_string(CONF)?.unwrap_or_default();
    Ok(match text == configured(&text) {
        true => Vec::new(),
        false => vec![format!(
            "chrony: {CONF} does not hold exactly one {SERVER:?} and no pool line; run apply"
        )],
    })
}

/// Gives the configuration back (exactly while untouched since, else only the
/// server line goes) and restarts chrony.
pub fn release(step: &Step, record: &mut Record) -> Result<()> {
    let Some(edited) = record.chrony.clone() else {
        return restart_owed(step, record);
    };
    record.chrony_restart_owed = true;
    record.save(step)?;
    undo_edit(&step.host, CONF, &edited.original, &edited.written, |text| {
        let text = String::from_utf8_lossy(text);
        let without: String = text.split_inclusive('\n').filter(|l| l.trim_end() != SERVER).collect();
        Some(without.into_bytes())
    })?;
    record.chrony = None;
    record.save(step)?;
    restart_owed(step, record)
}

// SPDX-License-Identifier: Apache-2.0
//! pam_limits in the session stack, which `ulimit.conf` needs: added where the
//! distribution does not already use it when the first entry with a `ulimit.conf`
//! needs it, taken back (only what was added) when the last one no longer does, and
//! the line the bash package appended taken over. What was added, and for whom, is
//! in the shared ledger ([`crate::ledger`]).

use std::path::Path;

use skyhook_core::formats::pam::{self, Appended, SESSION_FILES};
use skyhook_core::{Host, Result};

use crate::ledger::{self, Ledger};

/// The PAM module.
pub const MODULE: &str = "pam_limits.so";

/// The comment that marks the lines this package appends.
pub const MARKER: &str = "# Added by the Skyhook package tuning: apply /etc/security/limits.d to sessions";

/// The line the bash package appended to `/etc/pam.d/common-session*`.
pub const BASH_LINE: &str = "session required pam_limits.so";

/// Makes pam_limits active for `name` when it `wanted`s it, else lets `name` go of
/// it. Returns whether a PAM file changed.
pub fn sync(host: &Host, name: &str, wanted: bool) -> Result<bool> {
    if wanted {
        ensure(host, name)
    } else {
        release(host, name)
    }
}

/// The lines appended where pam_limits is missing.
pub fn lines() -> String {
    format!("{MARKER}\nsession required {MODULE}\n")
}

/// Makes pam_limits active in every session stack file that exists, for `name`.
/// Returns whether a PAM file changed.
fn ensure(host: &Host, name: &str) -> Result<bool> {
    let store = ledger::store(host);
    let mut ledger: Ledger = store.load()?;
    ledger.users.insert(name.to_string());
    // Record the intent first: a run killed after appending still knows it did.
    let mut changed = false;
    for file in SESSION_FILES {
        let real = host.resolve_links(file)?;
        let Some(text) = host.read(&real)? else {
            continue;
        };
        if pam::has_session_module(&text, MODULE) {
            continue;
        }
        let intent = Appended {
            file: real.clone(),
            text: format!(
                "{}{}",
                if text.is_empty() || text.ends_with(b"\n") {
                    ""
                } else {
                    "\n"
                },
                lines()
            ),
        };
        if !ledger.added.contains(&intent) {
            ledger.added.push(intent.clone());
        }
        store.save(&ledger)?;
        if let Some(done) = pam::ensure_session_module(host, Path::new(file), MODULE, &lines())? {
            log::info!("pam_limits was not in the session stack of {file}: added it");
            debug_assert_eq!(done, intent);
            changed = true;
        }
    }
    store.save_or_clear(&ledger)?;
    Ok(changed)
}

/// `name` no longer needs pam_limits; when no entry does, what was added is taken
/// back. Returns whether a PAM file changed.
pub fn release(host: &Host, name: &str) -> Result<bool> {
    let store = ledger::store(host);
    if !store.exists() {
        store.clear()?;
        return Ok(false);
    }
    let mut ledger: Ledger = store.load()?;
    ledger.users.remove(name);
    if !ledger.users.is_empty() {
        store.save(&ledger)?;
        return Ok(false);
    }
    let mut changed = false;
    for a in std::mem::take(&mut ledger.added) {
        if pam::remove_appended(host, &a)? {
            log::info!("removed the pam_limits line added to {}", a.file.display());
            changed = true;
        }
    }
    store.save_or_clear(&ledger)?;
    Ok(changed)
}

/// Takes over the line the bash package appended to `/etc/pam.d/common-session*`
/// (it never recorded it): the exact line, alone on its line, is recorded as added
/// for `name`. Returns whether any was found.
pub fn adopt_bash_lines(host: &Host, name: &str) -> Result<bool> {
    let store = ledger::store(host);
    let mut ledger: Ledger = store.load()?;
    let mut found = false;
    for file in host.list_dir("/etc/pam.d")? {
        if !file.starts_with("common-session") {
            continue;
        }
        let path = host.resolve_links(Path::new("/etc/pam.d").join(&file))?;
        let Some(text) = host.read(&path)? else {
            continue;
        };
        let mut previous: &[u8] = b"";
        let bash_line = text.split(|&b| b == b'\n').any(|l| {
            let l = l.strip_suffix(b"\r").unwrap_or(l);
            let hit = l == BASH_LINE.as_bytes() && previous != MARKER.as_bytes();
            previous = l;
            hit
        });
        if !bash_line {
            continue;
        }
        let a = Appended {
            file: path,
            text: format!("{BASH_LINE}\n"),
        };
        if !ledger.added.contains(&a) {
            log::info!(
                "taking over the pam_limits line the bash package appended to {}",
                a.file.display()
            );
            ledger.added.push(a);
        }
        found = true;
    }
    if found {
        ledger.users.insert(name.to_string());
        store.save(&ledger)?;
    }
    Ok(found)
}

/// The session stack files where pam_limits is missing (`None` when none exists).
pub fn missing(host: &Host) -> Result<Option<Vec<String>>> {
    let mut any = false;
    let mut missing = Vec::new();
    for file in SESSION_FILES {
        let real = host.resolve_links(file)?;
        let Some(text) = host.read(&real)? else {
            continue;
        };
        any = true;
        if !pam::has_session_module(&text, MODULE) {
            missing.push(file.to_string());
        }
    }
    Ok(any.then_some(missing))
}

/// The session stack files still holding a line this package marked as its own.
pub fn marked(host: &Host) -> Result<Vec<String>> {
    let mut found = Vec::new();
    for file in SESSION_FILES {
        let real = host.resolve_links(file)?;
        if host
            .read(&real)?
            .is_some_and(|t| pam::find(&t, MARKER.as_bytes()).is_some())
        {
            found.push(file.to_string());
        }
    }
    Ok(found)
}

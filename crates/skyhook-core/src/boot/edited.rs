// SPDX-License-Identifier: Apache-2.0
//! A boot file a package edits but does not own (`/etc/default/grub`, a distribution's
//! drop-in): its original and what the package wrote, recorded before the write, so
//! that undoing is exact while nobody else touched the file, and only takes the
//! package's words off when someone did.

use base64::Engine as _;
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::host::Host;
use crate::records::original::SavedFile;

/// File content kept in a record: text when UTF-8 (readable in `state.json`), else base64.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Content {
    /// UTF-8 content.
    Text(String),
    /// Any other content, base64-encoded.
    Base64 {
        /// The encoded bytes.
        base64: String,
    },
}

impl Content {
    /// Keeps `bytes`.
    pub fn new(bytes: &[u8]) -> Self {
        match std::str::from_utf8(bytes) {
            Ok(t) => Content::Text(t.to_string()),
            Err(_) => Content::Base64 {
                base64: base64::engine::general_purpose::STANDARD.encode(bytes),
            },
        }
    }

    /// The bytes kept (an altered base64 record reads as empty, which matches no file).
    pub fn bytes(&self) -> Vec<u8> {
        match self {
            Content::Text(t) => t.as_bytes().to_vec(),
            Content::Base64 { base64 } => base64::engine::general_purpose::STANDARD
                .decode(base64)
                .unwrap_or_default(),
        }
    }
}

/// Puts `path` back from `saved` when it still holds what the package `written`;
/// when someone changed it since, applies `edit` to its current bytes instead
/// (`None`: leave it, with a warning). Returns whether the file changed.
pub fn undo_edit(
    host: &Host,
    path: &str,
    saved: &SavedFile,
    written: &Content,
    edit: impl Fn(&[u8]) -> Option<Vec<u8>>,
) -> Result<bool> {
    let current = host.read(path)?;
    if current.as_deref() == Some(written.bytes().as_slice()) {
        return saved.restore(host);
    }
    if saved.is_current(host)? {
        return Ok(false);
    }
    let Some(current) = current else {
        log::warn!("{path} is gone; nothing to put back");
        return Ok(false);
    };
    match edit(&current).filter(|new| *new != current) {
        Some(new) => Ok(host.write(path, &new, host.mode(path)?.unwrap_or(0o644))?),
        None => {
            log::warn!(
                "{path} was changed since the package wrote it and no longer holds the package's value; left as it is"
            );
            Ok(false)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::command::RecordingRunner;

    #[test]
    fn undoes_exactly_while_untouched_and_edits_when_someone_changed_the_file() {
        let d = tempfile::tempdir().unwrap();
        let h = Host::new(d.path(), RecordingRunner::succeeding());
        let original = b"A=\xff\nB=1\n";
        h.write("/etc/default/grub", original, 0o600).unwrap();
        let saved = SavedFile::capture(&h, "/etc/default/grub").unwrap();
        let written = Content::new(b"A=\xff\nB=2\n");
        assert!(matches!(written, Content::Base64 { .. }));
        h.write("/etc/default/grub", &written.bytes(), 0o600).unwrap();
        let edit = |t: &[u8]| Some(t.iter().map(|b| if *b == b'2' { b'1' } else { *b }).collect());
        assert!(undo_edit(&h, "/etc/default/grub", &saved, &written, edit).unwrap());
        assert_eq!(h.read("/etc/default/grub").unwrap().unwrap(), original);
        assert!(
            !undo_edit(&h, "/etc/default/grub", &saved, &written, edit).unwrap(),
            "idempotent"
        );
        h.write("/etc/default/grub", b"C=3\nB=2\n", 0o600).unwrap();
        assert!(undo_edit(&h, "/etc/default/grub", &saved, &written, edit).unwrap());
        assert_eq!(
            h.read("/etc/default/grub").unwrap().unwrap(),
            b"C=3\nB=1\n",
            "someone's C=3 stays"
        );
    }
}

// SPDX-License-Identifier: Apache-2.0
//! The original of a file a package takes over (a distribution's configuration file
//! it replaces), kept in the package's state so that uninstall, or a config that no
//! longer asks for the file, can put it back byte for byte, permission bits included,
//! or remove the file when there was none.
//!
//! Text is kept as text (readable in `state.json`); anything that is not UTF-8 is kept
//! base64-encoded.

use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::host::Host;

/// A file as it was before a package changed it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedFile {
    /// The host path.
    pub path: PathBuf,
    /// Whether the file existed.
    pub existed: bool,
    /// Its permission bits, when it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<u32>,
    /// Its content, when it existed and was UTF-8 text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Its content base64-encoded, when it existed and was not UTF-8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base64: Option<String>,
}

impl SavedFile {
    /// Records `path` as it is now on `host`. A path that is, or lies under, a
    /// symbolic link is refused ([`crate::HostError::Symlink`]): an "original" read
    /// through a link could be any file on the node (`/etc/shadow`), later written
    /// back or kept in the package's state.
    pub fn capture(host: &Host, path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let mut saved = SavedFile {
            path: path.to_path_buf(),
            existed: false,
            mode: None,
            text: None,
            base64: None,
        };
        if let Some((bytes, mode)) = host.read_no_follow(path, "capture the original of")? {
            saved.existed = true;
            saved.mode = Some(mode);
            match String::from_utf8(bytes) {
                Ok(text) => saved.text = Some(text),
                Err(e) => saved.base64 = Some(base64::engine::general_purpose::STANDARD.encode(e.as_bytes())),
            }
        }
        Ok(saved)
    }

    /// The original content, `None` when the file did not exist.
    pub fn content(&self) -> Result<Option<Vec<u8>>> {
        if !self.existed {
            return Ok(None);
        }
        if let Some(text) = &self.text {
            return Ok(Some(text.as_bytes().to_vec()));
        }
        let encoded = self.base64.as_deref().unwrap_or("");
        base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .map(Some)
            .map_err(|e| {
                Error::action(format!(
                    "the saved original of {} is not valid base64 ({e}); the package state was altered by hand",
                    self.path.display()
                ))
            })
    }

    /// Whether the file on `host` is exactly the original (content and mode, or absent).
    pub fn is_current(&self, host: &Host) -> Result<bool> {
        Ok(match self.content()? {
            None => !host.exists(&self.path),
            Some(content) => host.has_content(&self.path, &content, self.mode.unwrap_or(0o644))?,
        })
    }

    /// Puts the original back (atomically), or removes the file when there was none;
    /// returns whether anything changed.
    pub fn restore(&self, host: &Host) -> Result<bool> {
        match self.content()? {
            None => Ok(host.remove(&self.path)?),
            Some(content) => Ok(host.write(&self.path, &content, self.mode.unwrap_or(0o644))?),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::command::RecordingRunner;

    #[test]
    fn restores_text_binary_and_absent_files_exactly() {
        let d = tempfile::tempdir().unwrap();
        let h = Host::new(d.path(), RecordingRunner::succeeding());
        h.write("/etc/a.conf", b"x=1\n", 0o600).unwrap();
        h.write("/etc/b.bin", b"\xff\x00\x01", 0o644).unwrap();
        let a = SavedFile::capture(&h, "/etc/a.conf").unwrap();
        let b = SavedFile::capture(&h, "/etc/b.bin").unwrap();
        let c = SavedFile::capture(&h, "/etc/c.conf").unwrap();
        assert_eq!((a.text.as_deref(), a.mode), (Some("x=1\n"), Some(0o600)));
        assert!(b.base64.is_some() && b.text.is_none());
        assert!(!c.existed);
        for s in [&a, &b, &c] {
            assert!(s.is_current(&h).unwrap());
            assert!(!s.restore(&h).unwrap(), "nothing to do while unchanged");
        }
        h.write("/etc/a.conf", b"ours\n", 0o644).unwrap();
        h.write("/etc/b.bin", b"ours\n", 0o644).unwrap();
        h.write("/etc/c.conf", b"ours\n", 0o644).unwrap();
        for s in [&a, &b, &c] {
            assert!(!s.is_current(&h).unwrap());
            assert!(s.restore(&h).unwrap());
            assert!(s.is_current(&h).unwrap());
        }
        assert_eq!(h.read("/etc/b.bin").unwrap().unwrap(), b"\xff\x00\x01");
        assert_eq!(h.mode("/etc/a.conf").unwrap(), Some(0o600));
        assert!(!h.exists("/etc/c.conf"));
        let json = serde_json::to_string(&a).unwrap();
        assert_eq!(serde_json::from_str::<SavedFile>(&json).unwrap(), a);
    }

    #[test]
    fn refuses_to_capture_through_a_symbolic_link() {
        let d = tempfile::tempdir().unwrap();
        let h = Host::new(d.path(), RecordingRunner::succeeding());
        h.write("/etc/shadow", b"root:$6$secret:19000::::::\n", 0o640).unwrap();
        h.symlink("/etc/shadow", "/etc/default/kdump-tools").unwrap();
        h.write("/etc/real/grub", b"x\n", 0o644).unwrap();
        h.symlink("/etc/real", "/etc/linked").unwrap();
        for (path, link) in [
            ("/etc/default/kdump-tools", "/etc/default/kdump-tools"),
            ("/etc/linked/grub", "/etc/linked"),
        ] {
            let e = SavedFile::capture(&h, path).unwrap_err();
            assert_eq!(e.exit_code(), 1, "bad state on the node");
            let msg = e.to_string();
            assert!(
                msg.contains(path) && msg.contains(&format!("{link} is a symbolic link")),
                "{msg}"
            );
            assert!(!msg.contains("secret"), "never echoes the target's content: {msg}");
        }
    }
}

// SPDX-License-Identifier: Apache-2.0
//! PAM session stacks: whether a module (pam_limits, say) is active in the files
//! that sessions include, adding it where a distribution does not, and taking back
//! exactly what was added.
//!
//! Debian-like hosts build sessions from `/etc/pam.d/common-session` and
//! `common-session-noninteractive`; RHEL-like ones from `system-auth` and
//! `password-auth` (often symbolic links into `/etc/authselect`: the link is
//! resolved and its target written, the link itself is left alone).
//!
//! The files are edited as bytes: a Latin-1 comment, CRLF line ends or a missing
//! final newline are kept exactly, and taking back what was added restores the
//! file byte for byte.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::HostError;
use crate::host::Host;

/// The files that login, ssh, cron and systemd user sessions include, on both families.
pub const SESSION_FILES: [&str; 4] = [
    "/etc/pam.d/common-session",
    "/etc/pam.d/common-session-noninteractive",
    "/etc/pam.d/system-auth",
    "/etc/pam.d/password-auth",
];

/// Whether `text` has an active (not commented out) `session` line using `module`
/// (`pam_limits.so`, matched by file name so `/lib/security/pam_limits.so` counts).
/// Bytes that are not UTF-8 (a Latin-1 comment) are tolerated.
pub fn has_session_module(text: impl AsRef<[u8]>, module: &str) -> bool {
    text.as_ref().split(|&b| b == b'\n').any(|l| {
        let l = String::from_utf8_lossy(l);
        let mut words = l.split_whitespace();
        let Some(kind) = words.next() else { return false };
        if kind.starts_with('#') || kind.trim_start_matches('-') != "session" {
            return false;
        }
        // The control is one word or a bracketed list of words.
        let mut control = words.next().unwrap_or("");
        if control.starts_with('[') {
            while !control.ends_with(']') {
                match words.next() {
                    Some(w) => control = w,
                    None => return false,
                }
            }
        }
        words
            .next()
            .is_some_and(|m| Path::new(m).file_name().is_some_and(|f| f == module))
    })
}

/// Text appended to a PAM file, recorded so that it can be taken back exactly.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Appended {
    /// The file written (the target when the stack file is a symbolic link).
    pub file: PathBuf,
    /// The exact text appended.
    pub text: String,
}

/// Makes `module` active in the session stack file `path` by appending `lines`
/// (comment and `session required <module>` line), unless it is already active or
/// the file does not exist (a PAM file is never created: a half-made stack locks
/// users out). Returns what was appended. The file keeps its permission bits.
pub fn ensure_session_module(
    host: &Host,
    path: &Path,
    module: &str,
    lines: &str,
) -> Result<Option<Appended>, HostError> {
    let real = host.resolve_links(path)?;
    let Some(text) = host.read(&real)? else {
        return Ok(None);
    };
    if has_session_module(&text, module) {
        return Ok(None);
    }
    let mut appended = String::new();
    if !text.is_empty() && !text.ends_with(b"\n") {
        appended.push('\n');
    }
    appended.push_str(lines);
    if !appended.ends_with('\n') {
        appended.push('\n');
    }
    let mode = host.mode(&real)?.unwrap_or(0o644);
    host.write(&real, &[text.as_slice(), appended.as_bytes()].concat(), mode)?;
    Ok(Some(Appended {
        file: real,
        text: appended,
    }))
}

/// Takes back `appended`: the text is cut from the end of the file when it is still
/// there, else its first occurrence is removed. Returns whether the file changed.
pub fn remove_appended(host: &Host, appended: &Appended) -> Result<bool, HostError> {
    let Some(text) = host.read(&appended.file)? else {
        return Ok(false);
    };
    let body = appended.text.trim_start_matches('\n').as_bytes();
    let new = if let Some(before) = text.strip_suffix(appended.text.as_bytes()) {
        before.to_vec()
    } else if let Some(i) = find(&text, body) {
        [&text[..i], &text[i + body.len()..]].concat()
    } else {
        return Ok(false);
    };
    let mode = host.mode(&appended.file)?.unwrap_or(0o644);
    host.write(&appended.file, &new, mode)
}

/// Where `needle` first occurs in `haystack` (an empty needle never does).
pub fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return None;
    }
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::command::RecordingRunner;

    const DEBIAN: &str = "session\t[default=1]\t\t\tpam_permit.so\nsession\trequisite\t\t\tpam_deny.so\nsession\trequired\tpam_unix.so\n";

    #[test]
    fn finds_active_session_modules_only() {
        assert!(!has_session_module(DEBIAN, "pam_limits.so"));
        assert!(has_session_module(DEBIAN, "pam_unix.so"));
        assert!(has_session_module(DEBIAN, "pam_permit.so"), "bracketed control");
        assert!(has_session_module(
            "session     required      /lib/security/pam_limits.so\n",
            "pam_limits.so"
        ));
        assert!(has_session_module("-session optional pam_limits.so\n", "pam_limits.so"));
        assert!(!has_session_module(
            "#session required pam_limits.so\n",
            "pam_limits.so"
        ));
        assert!(!has_session_module("auth required pam_limits.so\n", "pam_limits.so"));
        assert!(has_session_module(
            "session [success=1 default=ignore] pam_limits.so\n",
            "pam_limits.so"
        ));
    }

    #[test]
    fn appends_through_links_and_takes_back_exactly() {
        let d = tempfile::tempdir().unwrap();
        let h = Host::new(d.path(), RecordingRunner::succeeding());
        h.write("/etc/authselect/system-auth", b"session required pam_unix.so", 0o600)
            .unwrap();
        h.symlink("/etc/authselect/system-auth", "/etc/pam.d/system-auth")
            .unwrap();
        let lines = "# added\nsession required pam_limits.so\n";
        let a = ensure_session_module(&h, Path::new("/etc/pam.d/system-auth"), "pam_limits.so", lines)
            .unwrap()
            .unwrap();
        assert_eq!(a.file, PathBuf::from("/etc/authselect/system-auth"));
        assert_eq!(
            h.read_link("/etc/pam.d/system-auth").unwrap(),
            Some(PathBuf::from("/etc/authselect/system-auth")),
            "the link stays a link"
        );
        assert_eq!(h.mode(&a.file).unwrap(), Some(0o600));
        let again = ensure_session_module(&h, Path::new("/etc/pam.d/system-auth"), "pam_limits.so", lines).unwrap();
        assert_eq!(again, None, "already active");
        assert!(remove_appended(&h, &a).unwrap());
        assert_eq!(
            h.read_to_string(&a.file).unwrap().unwrap(),
            "session required pam_unix.so"
        );
        assert!(!remove_appended(&h, &a).unwrap());
        assert_eq!(
            ensure_session_module(&h, Path::new("/etc/pam.d/common-session"), "pam_limits.so", lines).unwrap(),
            None,
            "never creates a PAM file"
        );
        assert!(!h.exists("/etc/pam.d/common-session"));
    }

    #[test]
    fn foreign_bytes_crlf_and_a_missing_final_newline_survive_add_and_remove() {
        let d = tempfile::tempdir().unwrap();
        let h = Host::new(d.path(), RecordingRunner::succeeding());
        // A Latin-1 comment (0xe9 is 'é'), CRLF line ends, no final newline.
        let original: &[u8] =
            b"# r\xe9sum\xe9 des sessions\r\nsession required pam_unix.so\r\nsession optional pam_systemd.so";
        h.write("/etc/pam.d/common-session", original, 0o644).unwrap();
        let lines = "# added\nsession required pam_limits.so\n";
        let path = Path::new("/etc/pam.d/common-session");
        let a = ensure_session_module(&h, path, "pam_limits.so", lines)
            .unwrap()
            .unwrap();
        let edited = h.read(path).unwrap().unwrap();
        assert_eq!(&edited[..original.len()], original, "every foreign byte kept");
        assert_eq!(
            &edited[original.len()..],
            b"\n# added\nsession required pam_limits.so\n"
        );
        assert!(has_session_module(&edited, "pam_limits.so"));
        assert!(remove_appended(&h, &a).unwrap());
        assert_eq!(h.read(path).unwrap().unwrap(), original, "byte for byte after removal");
    }

    #[test]
    fn removes_the_first_occurrence_when_not_at_the_end() {
        let d = tempfile::tempdir().unwrap();
        let h = Host::new(d.path(), RecordingRunner::succeeding());
        h.write(
            "/etc/pam.d/common-session",
            b"a\n# added\nsession required pam_limits.so\nb\n",
            0o644,
        )
        .unwrap();
        let a = Appended {
            file: "/etc/pam.d/common-session".into(),
            text: "# added\nsession required pam_limits.so\n".into(),
        };
        assert!(remove_appended(&h, &a).unwrap());
        assert_eq!(h.read_to_string(&a.file).unwrap().unwrap(), "a\nb\n");
    }
}

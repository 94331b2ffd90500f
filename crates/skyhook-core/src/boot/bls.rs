// SPDX-License-Identifier: Apache-2.0
//! What grubby-bls (`grubby` of RHEL 8+, Fedora, Amazon Linux 2023: the script of
//! grubby 8.40) changes besides the entries' arguments, and the entries' own
//! `options` lines, recorded before and after a package's `--update-kernel=ALL`, so
//! that uninstall gives each back exactly.
//!
//! The facts, from Fedora's `grubby-bls` (grubby 8.40-69) and GRUB's Fedora
//! `20-grub.install`:
//!
//! - `--args` removes every argument of each key given and appends the new ones at
//!   the end of the line: putting an original back through grubby cannot restore
//!   where it stood. The entries' `options` lines are therefore put back from the
//!   record, each entry keyed by its file (two entries of one kernel stay apart).
//! - `--update-kernel=ALL` also writes `/etc/kernel/cmdline` (created from the
//!   last-sorted entry, often the rescue one, when missing), which kernels installed
//!   later take their arguments from.
//! - It rewrites every line of `/etc/default/grub` that starts with
//!   `GRUB_CMDLINE_LINUX`, `GRUB_CMDLINE_LINUX_DEFAULT` included, into one
//!   `GRUB_CMDLINE_LINUX="…"` each (skipping the file when `GRUB_CMDLINE_LINUX` is
//!   empty).
//!
//! Both files are kept as files edited but not owned ([`super::edited`]): back byte
//! for byte while they hold what grubby wrote, else only grubby's change taken back.
//! `/etc/default/grub` is put back before `/etc/kernel/cmdline`, so that the latter
//! is not older than the former (20-grub.install regenerates the configuration when
//! it is).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::cmdline::{key_of, split_cmdline};
use super::config::BLS_ENTRIES;
use super::defaults::GRUB_DEFAULTS;
use super::edited::{Content, undo_edit};
use crate::error::Result;
use crate::host::Host;
use crate::records::original::SavedFile;

/// The arguments kernels installed later get (read by GRUB's `20-grub.install`).
pub const KERNEL_CMDLINE: &str = "/etc/kernel/cmdline";

/// The files grubby-bls's `--update-kernel=ALL` rewrites, in the order they are put back.
pub const ALL_EDITS: [&str; 2] = [GRUB_DEFAULTS, KERNEL_CMDLINE];

/// One BLS entry's `options` line before the package's change, and after it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EntryOptions {
    /// The whole line before (`options root=… ro crashkernel=auto`).
    pub before: String,
    /// The whole line grubby left (`None`: not known, the run was interrupted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
}

/// A file grubby rewrites: as it was, and what grubby wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEdit {
    /// The file before.
    pub file: SavedFile,
    /// What grubby wrote (`None`: not known, or grubby left no file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub written: Option<Content>,
}

/// grubby-bls's changes, recorded around a package's `--update-kernel=ALL`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct BlsEdits {
    /// Entry file (`/boot/loader/entries/<id>.conf`) → its `options` line.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub entries: BTreeMap<String, EntryOptions>,
    /// [`ALL_EDITS`], as they were and as grubby left them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<FileEdit>,
}

/// The BLS entry files, sorted by name.
fn entry_files(host: &Host) -> Vec<String> {
    let mut names = host.list_dir(BLS_ENTRIES).unwrap_or_default();
    names.retain(|n| n.ends_with(".conf"));
    names.sort();
    names.into_iter().map(|n| format!("{BLS_ENTRIES}/{n}")).collect()
}

/// The first `options` line of an entry (as grubby reads it: `options` then a blank).
fn options_line(text: &str) -> Option<&str> {
    text.lines()
        .find(|l| l.strip_prefix("options").is_some_and(|r| r.starts_with([' ', '\t'])))
}

/// The arguments of an `options` line.
fn line_args(line: &str) -> Vec<String> {
    split_cmdline(line.strip_prefix("options").unwrap_or(line))
}

/// An entry's text (`None`: absent, or not UTF-8, which no grubby edit produces).
fn read_entry(host: &Host, path: &str) -> Result<Option<String>> {
    Ok(host.read(path)?.and_then(|b| String::from_utf8(b).ok()))
}

/// `text` with its first `options` line replaced by `line`, every other byte kept.
fn with_options_line(text: &str, line: &str) -> String {
    let mut out = String::with_capacity(text.len() + line.len());
    let mut done = false;
    for l in text.split_inclusive('\n') {
        let body = l.strip_suffix('\n').unwrap_or(l);
        let body = body.strip_suffix('\r').unwrap_or(body);
        if !done && options_line(body) == Some(body) {
            out.push_str(line);
            out.push_str(&l[body.len()..]);
            done = true;
        } else {
            out.push_str(l);
        }
    }
    out
}

/// `current` without `ours`, with the `originals` of our keys that are missing
/// appended (where grubby would put them).
fn without_ours(current: &[String], ours: &[String], originals: &[String]) -> Vec<String> {
    let mut args: Vec<String> = current.iter().filter(|a| !ours.contains(a)).cloned().collect();
    let our_keys: Vec<&str> = ours.iter().map(|o| key_of(o)).collect();
    for o in originals.iter().filter(|o| our_keys.contains(&key_of(o))) {
        if !args.contains(o) {
            args.push(o.clone());
        }
    }
    args
}

impl BlsEdits {
    /// Records every BLS entry's `options` line and the files `ALL` rewrites.
    pub fn capture(host: &Host) -> Result<Self> {
        let mut entries = BTreeMap::new();
        for path in entry_files(host) {
            if let Some(text) = read_entry(host, &path)?
                && let Some(line) = options_line(&text)
            {
                entries.insert(
                    path,
                    EntryOptions {
                        before: line.to_string(),
                        after: None,
                    },
                );
            }
        }
        let files = ALL_EDITS
            .iter()
            .map(|p| {
                Ok(FileEdit {
                    file: SavedFile::capture(host, p)?,
                    written: None,
                })
            })
            .collect::<Result<_>>()?;
        Ok(BlsEdits { entries, files })
    }

    /// Whether nothing was recorded (a record of an earlier version, or C grubby).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty() && self.files.is_empty()
    }

    /// Records what grubby left, once its `--update-kernel=ALL` has run.
    pub fn note_written(&mut self, host: &Host) -> Result<()> {
        for (path, e) in &mut self.entries {
            e.after = read_entry(host, path)?.and_then(|t| options_line(&t).map(str::to_string));
        }
        for f in &mut self.files {
            f.written = host.read(&f.file.path)?.map(|b| Content::new(&b));
        }
        Ok(())
    }

    /// Takes `ours` off: each recorded entry gets its own `options` line back while
    /// it holds what grubby left (else `ours` removed and its originals of our keys
    /// appended), an entry created since that carries `ours` gets `defaults` (what
    /// new kernels had) in their place, and the files come back. Returns whether
    /// anything changed.
    pub fn restore(&self, host: &Host, ours: &[String], defaults: &[String]) -> Result<bool> {
        let mut changed = false;
        for path in entry_files(host) {
            let Some(text) = read_entry(host, &path)? else {
                continue;
            };
            let Some(line) = options_line(&text) else {
                continue;
            };
            let recorded = self.entries.get(&path);
            let new_line = match recorded {
                Some(e) if e.after.as_deref() == Some(line) => e.before.clone(),
                _ => {
                    let args = line_args(line);
                    if !ours.iter().all(|o| args.contains(o)) {
                        continue;
                    }
                    let originals = recorded.map_or_else(|| defaults.to_vec(), |e| line_args(&e.before));
                    let kept = without_ours(&args, ours, &originals);
                    format!("options {}", kept.join(" "))
                }
            };
            if new_line != line {
                log::info!("putting the kernel arguments of {path} back");
                let mode = host.mode(&path)?.unwrap_or(0o644);
                changed |= host.write(&path, with_options_line(&text, &new_line).as_bytes(), mode)?;
            }
        }
        for f in &self.files {
            changed |= restore_file(host, f, ours, defaults)?;
        }
        Ok(changed)
    }
}

/// Puts one of [`ALL_EDITS`] back: exactly while it holds what grubby (or, for
/// `/etc/kernel/cmdline` without grubby, grub2-mkconfig) wrote, else that change
/// taken back from the current bytes.
pub(super) fn restore_file(host: &Host, f: &FileEdit, ours: &[String], defaults: &[String]) -> Result<bool> {
    let path = f.file.path.to_string_lossy().into_owned();
    let before = f.file.content()?;
    let edit = |current: &[u8]| -> Option<Vec<u8>> {
        if path == KERNEL_CMDLINE {
            let text = std::str::from_utf8(current).ok()?;
            let (first, rest) = text.split_once('\n').map_or((text, ""), |(a, b)| (a, b));
            let args = split_cmdline(first);
            if !ours.iter().all(|o| args.contains(o)) {
                return None;
            }
            let originals = before.as_deref().map_or_else(
                || defaults.to_vec(),
                |b| split_cmdline(String::from_utf8_lossy(b).lines().next().unwrap_or("")),
            );
            let sep = if text.contains('\n') { "\n" } else { "" };
            Some(format!("{}{sep}{rest}", without_ours(&args, ours, &originals).join(" ")).into_bytes())
        } else {
            let written = f.written.as_ref()?.bytes();
            take_back_lines(current, before.as_deref()?, &written)
        }
    };
    match &f.written {
        Some(written) => undo_edit(host, &path, &f.file, written, edit),
        None if f.file.is_current(host)? => Ok(false),
        None => match host.read(&path)?.and_then(|c| edit(&c).filter(|n| *n != c)) {
            Some(new) => Ok(host.write(&path, &new, host.mode(&path)?.unwrap_or(0o644))?),
            None => Ok(false),
        },
    }
}

/// `current` with each line grubby rewrote (a line of `written` that differs from
/// the same line of `before`) put back, in order; `None` when none is found (grubby
/// replaces lines one for one, so `before` and `written` have as many).
fn take_back_lines(current: &[u8], before: &[u8], written: &[u8]) -> Option<Vec<u8>> {
    let lines = |b: &[u8]| -> Vec<Vec<u8>> { b.split_inclusive(|c| *c == b'\n').map(<[u8]>::to_vec).collect() };
    let (before, written) = (lines(before), lines(written));
    if before.len() != written.len() {
        return None;
    }
    let mut pairs = before.iter().zip(&written).filter(|(b, w)| b != w).peekable();
    let mut out = Vec::with_capacity(current.len());
    let mut found = false;
    for line in lines(current) {
        match pairs.peek() {
            Some((b, w)) if trim_nl(&line) == trim_nl(w) => {
                out.extend_from_slice(trim_nl(b));
                out.extend_from_slice(&line[trim_nl(&line).len()..]);
                pairs.next();
                found = true;
            }
            _ => out.extend_from_slice(&line),
        }
    }
    found.then_some(out)
}

fn trim_nl(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\n").unwrap_or(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::command::RecordingRunner;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn entries_come_back_exactly_or_lose_only_ours() {
        let d = tempfile::tempdir().unwrap();
        let h = Host::new(d.path(), RecordingRunner::succeeding());
        let a = "/boot/loader/entries/m-5.14.conf";
        let b = "/boot/loader/entries/m-5.14-debug.conf";
        h.write(a, b"title A\r\noptions ro  crashkernel=auto quiet\r\n", 0o600)
            .unwrap();
        h.write(b, b"title B\noptions ro crashkernel=auto\n", 0o644).unwrap();
        let mut rec = BlsEdits::capture(&h).unwrap();
        // what grubby --update-kernel=ALL --args=crashkernel=1G does
        h.write(a, b"title A\r\noptions ro quiet crashkernel=1G\r\n", 0o600)
            .unwrap();
        h.write(b, b"title B\noptions ro crashkernel=1G\n", 0o644).unwrap();
        rec.note_written(&h).unwrap();
        h.write(b, b"title B\noptions ro crashkernel=1G debug\n", 0o644)
            .unwrap();
        let n = "/boot/loader/entries/m-6.0.conf";
        h.write(n, b"title N\noptions ro quiet crashkernel=1G\n", 0o644)
            .unwrap();
        let ours = s(&["crashkernel=1G"]);
        assert!(rec.restore(&h, &ours, &s(&["crashkernel=auto"])).unwrap());
        assert_eq!(
            h.read(a).unwrap().unwrap(),
            b"title A\r\noptions ro  crashkernel=auto quiet\r\n",
            "order, spacing and CRLF back"
        );
        assert_eq!(h.mode(a).unwrap(), Some(0o600));
        assert_eq!(
            h.read(b).unwrap().unwrap(),
            b"title B\noptions ro debug crashkernel=auto\n",
            "someone's debug stays"
        );
        assert_eq!(
            h.read(n).unwrap().unwrap(),
            b"title N\noptions ro quiet crashkernel=auto\n"
        );
        assert!(!rec.restore(&h, &ours, &[]).unwrap(), "idempotent");
    }

    #[test]
    fn files_come_back_exactly_or_lose_only_grubbys_change() {
        let d = tempfile::tempdir().unwrap();
        let h = Host::new(d.path(), RecordingRunner::succeeding());
        let before = "A=1\nGRUB_CMDLINE_LINUX=\"rhgb\"\nGRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"\n";
        h.write(GRUB_DEFAULTS, before.as_bytes(), 0o644).unwrap();
        let mut rec = BlsEdits::capture(&h).unwrap();
        let written = "A=1\nGRUB_CMDLINE_LINUX=\"rhgb x=1\"\nGRUB_CMDLINE_LINUX=\"rhgb x=1\"\n";
        h.write(GRUB_DEFAULTS, written.as_bytes(), 0o644).unwrap();
        h.write(KERNEL_CMDLINE, b"ro rhgb x=1\n", 0o644).unwrap();
        rec.note_written(&h).unwrap();
        let ours = s(&["x=1"]);
        assert!(rec.restore(&h, &ours, &[]).unwrap());
        assert_eq!(h.read(GRUB_DEFAULTS).unwrap().unwrap(), before.as_bytes());
        assert!(!h.exists(KERNEL_CMDLINE), "absent before, absent after");
        h.write(GRUB_DEFAULTS, format!("B=2\n{written}").as_bytes(), 0o644)
            .unwrap();
        h.write(KERNEL_CMDLINE, b"ro rhgb x=1 mine\n", 0o644).unwrap();
        assert!(rec.restore(&h, &ours, &[]).unwrap());
        assert_eq!(
            h.read(GRUB_DEFAULTS).unwrap().unwrap(),
            format!("B=2\n{before}").as_bytes(),
            "someone's B=2 stays"
        );
        assert_eq!(h.read(KERNEL_CMDLINE).unwrap().unwrap(), b"ro rhgb mine\n");
    }
}

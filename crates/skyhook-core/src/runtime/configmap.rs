// SPDX-License-Identifier: Apache-2.0
//! The package's configMap as the agent lays it out: one file per key under
//! `${SKYHOOK_DIR}/configmaps/`, holding the value verbatim. Read once, key names
//! validated; a missing directory means no keys (the operator mounts it only for a
//! non-empty configMap). A value is a regular file, or a link that resolves inside
//! the directory (`..data/<key>`), of at most 1 MiB: FIFOs, devices, sockets,
//! directories and links leading elsewhere are refused without being read.

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::error::{Error, HostError, Result, excerpt};

/// The largest configMap value read, in bytes (1 MiB, the size limit of a whole
/// Kubernetes ConfigMap). A larger value is bad input; reading stops there.
pub const MAX_VALUE_BYTES: u64 = 1 << 20;

/// The value of key `name` in `dir`: `Ok(Err(why))` when the entry is not one
/// this package accepts as a value (said without ever echoing its content). The one
/// reader of the files the agent lays into the copy dir (configMap values and node
/// metadata alike).
pub(crate) fn read_value(dir: &Path, name: &str) -> Result<std::result::Result<Vec<u8>, String>> {
    let path = dir.join(name);
    let meta = fs::symlink_metadata(&path).map_err(|e| HostError::io("inspect configMap value", &path, e))?;
    let file = if meta.file_type().is_symlink() {
        match resolve_inside(dir, &path)? {
            Ok(target) => target,
            Err(why) => return Ok(Err(why)),
        }
    } else {
        path.clone()
    };
    let meta = fs::symlink_metadata(&file).map_err(|e| HostError::io("inspect configMap value", &file, e))?;
    if let Some(why) = not_a_value(&meta) {
        return Ok(Err(why));
    }
    // O_NOFOLLOW | O_NONBLOCK: a file swapped for a link or a FIFO since the check
    // above fails or returns at once instead of hanging the step.
    let opened = fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(&file)
        .map_err(|e| HostError::io("read configMap value", &file, e))?;
    let meta = opened
        .metadata()
        .map_err(|e| HostError::io("inspect configMap value", &file, e))?;
    if let Some(why) = not_a_value(&meta) {
        return Ok(Err(why));
    }
    let mut value = Vec::new();
    opened
        .take(MAX_VALUE_BYTES + 1)
        .read_to_end(&mut value)
        .map_err(|e| HostError::io("read configMap value", &file, e))?;
    if value.len() as u64 > MAX_VALUE_BYTES {
        return Ok(Err(format!(
            "the value is larger than the limit of {MAX_VALUE_BYTES} bytes (1 MiB)"
        )));
    }
    Ok(Ok(value))
}

/// Why an entry with metadata `meta` is not a value, `None` when it is a regular file.
fn not_a_value(meta: &fs::Metadata) -> Option<String> {
    let kind = meta.file_type();
    let what = if kind.is_file() {
        if meta.len() > MAX_VALUE_BYTES {
            return Some(format!(
                "the value is larger than the limit of {MAX_VALUE_BYTES} bytes (1 MiB): {} bytes",
                meta.len()
            ));
        }
        return None;
    } else if kind.is_dir() {
        // A key with a '/' in it was written out (e.g. "service_../x.conf"), which
        // Kubernetes itself would refuse.
        "a directory: configMap keys are files and cannot contain '/'"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_block_device() || kind.is_char_device() {
        "a device"
    } else {
        "not a regular file"
    };
    Some(format!(
        "is {what}, not a regular file holding the value; it was not read"
    ))
}

/// Where the link `path` leads, when that is inside `dir` (Kubernetes' `..data/<key>`
/// scheme); `Ok(Err(why))` when it leads outside or nowhere.
fn resolve_inside(dir: &Path, path: &Path) -> Result<std::result::Result<PathBuf, String>> {
    let dir = fs::canonicalize(dir).map_err(|e| HostError::io("resolve the configMap directory", dir, e))?;
    let target = match fs::canonicalize(path) {
        Ok(t) => t,
        Err(e) => {
            return Ok(Err(format!(
                "is a symbolic link that does not resolve ({e}); it was not read"
            )));
        }
    };
    if target.starts_with(&dir) {
        Ok(Ok(target))
    } else {
        Ok(Err(format!(
            "is a symbolic link leading outside the configMap directory (to {}); it was not read",
            excerpt(&target.to_string_lossy())
        )))
    }
}

/// All configMap keys and their raw values.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConfigMaps {
    dir: PathBuf,
    entries: BTreeMap<String, Vec<u8>>,
}

/// Whether `name` is an entry Kubernetes itself creates in a mounted ConfigMap
/// volume: `..data`, `..data_tmp` (while the kubelet swaps it) and the timestamped
/// `..2024_01_01_00_00_00.123456789` directory.
fn is_kubernetes_entry(name: &str) -> bool {
    name == "..data"
        || name == "..data_tmp"
        || name
            .strip_prefix("..")
            .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
}

/// Whether `key` is a valid Kubernetes ConfigMap key (`[-._a-zA-Z0-9]+`, not `.` or `..`).
pub fn is_valid_key(key: &str) -> bool {
    !key.is_empty()
        && key != "."
        && key != ".."
        && key.len() <= 253
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'))
}

impl ConfigMaps {
    /// Reads every key in `dir`. Entries that Kubernetes itself creates when a
    /// ConfigMap is mounted as a volume (`..data`, `..2024_01_01…`) are skipped.
    /// Each key must be a regular file, or a symbolic link resolving inside `dir` to
    /// one, of at most [`MAX_VALUE_BYTES`]; anything else is bad input naming the
    /// key, refused without being opened for reading.
    pub fn load(dir: &Path) -> Result<Self> {
        let mut entries = BTreeMap::new();
        let read_dir = match fs::read_dir(dir) {
            Ok(r) => r,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Ok(ConfigMaps {
                    dir: dir.to_path_buf(),
                    entries,
                });
            }
            Err(e) => return Err(HostError::io("read the configMap directory", dir, e).into()),
        };
        let mut bad = Vec::new();
        for entry in read_dir {
            let entry = entry.map_err(|e| HostError::io("read the configMap directory", dir, e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if is_kubernetes_entry(&name) {
                continue;
            }
            if name.starts_with("..") {
                bad.push(format!(
                    "configMap key {} in {} starts with '..', which Kubernetes refuses in a key name and \
                     reserves for its own entries (..data, ..<timestamp>); rename the key",
                    excerpt(&name),
                    dir.display()
                ));
                continue;
            }
            if !is_valid_key(&name) {
                bad.push(format!(
                    "configMap key {} in {} is not a valid key name (allowed: letters, digits, '-', '.', '_')",
                    excerpt(&name),
                    dir.display()
                ));
                continue;
            }
            match read_value(dir, &name)? {
                Ok(value) => {
                    entries.insert(name, value);
                }
                Err(why) => bad.push(format!("configMap key {name:?} in {}: {why}", dir.display())),
            }
        }
        if !bad.is_empty() {
            return Err(Error::Input(bad));
        }
        Ok(ConfigMaps {
            dir: dir.to_path_buf(),
            entries,
        })
    }

    /// A map built in memory (tests and tools).
    pub fn from_entries<K: Into<String>, V: Into<Vec<u8>>>(entries: impl IntoIterator<Item = (K, V)>) -> Self {
        ConfigMaps {
            dir: PathBuf::new(),
            entries: entries.into_iter().map(|(k, v)| (k.into(), v.into())).collect(),
        }
    }

    /// The directory the keys were read from.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file holding `key` (whether or not it exists).
    pub fn path(&self, key: &str) -> PathBuf {
        self.dir.join(key)
    }

    /// Whether `key` is present.
    pub fn contains(&self, key: &str) -> bool {
        self.entries.contains_key(key)
    }

    /// The raw value of `key`.
    pub fn bytes(&self, key: &str) -> Option<&[u8]> {
        self.entries.get(key).map(Vec::as_slice)
    }

    /// The value of `key` as text; a value that is not UTF-8 is bad input, reported
    /// with the key and the line holding the first invalid byte.
    pub fn text(&self, key: &str) -> Result<Option<&str>> {
        match self.entries.get(key) {
            None => Ok(None),
            Some(raw) => std::str::from_utf8(raw).map(Some).map_err(|e| {
                let line = raw[..e.valid_up_to()].iter().filter(|&&b| b == b'\n').count() + 1;
                Error::input(format!(
                    "configMap key {key:?} line {line}: the value is not valid UTF-8 (invalid byte at offset {})",
                    e.valid_up_to()
                ))
            }),
        }
    }

    /// The one word `key` holds, trimmed (as a shell's `xargs` reads it): `None` when
    /// the key is absent, `Some("")` when its value is blank. A value of more than one
    /// word is bad input naming the key, the line of the second word and an excerpt of
    /// it; a value that is not UTF-8 is refused as [`ConfigMaps::text`] refuses it.
    pub fn word(&self, key: &str) -> Result<Option<&str>> {
        let Some(text) = self.text(key)? else {
            return Ok(None);
        };
        let mut words = text.split_whitespace();
        let first = words.next().unwrap_or_default();
        match words.next() {
            None => Ok(Some(first)),
            Some(second) => {
                let offset = second.as_ptr() as usize - text.as_ptr() as usize;
                let line = text[..offset].matches('\n').count() + 1;
                Err(Error::bad_line(key, line, second, "the value must be one word"))
            }
        }
    }

    /// The one word of required key `key` ([`ConfigMaps::word`]); when it is missing,
    /// blank or not one word, `None` with a problem added to `problems` naming the key
    /// and `what` it must hold, so that a package reports every problem at once.
    pub fn required_word(&self, key: &str, what: &str, problems: &mut Vec<String>) -> Option<String> {
        let bad = |why: &str| format!("configMap key {key:?} {why}; it must be {what} (fix the SCR's configMap)");
        match self.word(key) {
            Ok(Some("")) => problems.push(bad("is empty")),
            Ok(Some(word)) => return Some(word.to_string()),
            Ok(None) => problems.push(bad("is missing")),
            Err(Error::Input(p)) => problems.extend(p),
            Err(e) => problems.push(e.to_string()),
        }
        None
    }

    /// The keys that are not among `read`, sorted.
    pub fn unread<'a>(&'a self, read: &'a [&str]) -> impl Iterator<Item = &'a str> {
        self.keys().filter(move |k| !read.contains(k))
    }

    /// Logs one warning naming the keys that are not among `read` (`reads` says what
    /// the package reads instead), however many there are: at most
    /// [`MAX_LISTED`](crate::error::MAX_LISTED) are named, each bounded, then how many more.
    pub fn warn_unread(&self, read: &[&str], reads: &str) {
        let unread: Vec<String> = self.unread(read).map(excerpt).collect();
        if unread.is_empty() {
            return;
        }
        log::warn!(
            "{} configMap key(s) this package does not read ({reads}), ignored: {}",
            unread.len(),
            crate::error::bounded_list(&unread).join(", ")
        );
    }

    /// All keys, sorted.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.entries.keys().map(String::as_str)
    }

    /// All keys with their raw values, sorted by key.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &[u8])> {
        self.entries.iter().map(|(k, v)| (k.as_str(), v.as_slice()))
    }

    /// Whether there are no keys at all.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unread_keys_are_one_bounded_list() {
        let cm = ConfigMaps::from_entries(
            (0..5000)
                .map(|i| (format!("key-{i:04}"), "x"))
                .chain([("accelerator".to_string(), "h100")]),
        );
        assert_eq!(cm.unread(&["accelerator"]).count(), 5000);
        let unread: Vec<String> = cm.unread(&["accelerator"]).map(excerpt).collect();
        let line = crate::error::bounded_list(&unread).join(", ");
        assert!(line.len() < 1024 && line.ends_with("… and 4980 more"), "{line}");
    }

    #[test]
    fn key_names_follow_kubernetes_rules() {
        for good in ["sysctl.conf", "service_containerd.conf", "a-b.c_d", "apply.sh", "X"] {
            assert!(is_valid_key(good), "{good}");
        }
        for bad in ["", ".", "..", "a/b", "a b", "é", "a\nb", &"x".repeat(254)] {
            assert!(!is_valid_key(bad), "{bad}");
        }
    }

    #[test]
    fn missing_directory_means_no_keys() {
        let d = tempfile::tempdir().unwrap();
        let m = ConfigMaps::load(&d.path().join("configmaps")).unwrap();
        assert!(m.is_empty());
    }

    #[test]
    fn reads_every_key_verbatim_and_skips_kubernetes_internals() {
        let d = tempfile::tempdir().unwrap();
        fs::write(d.path().join("apply.sh"), "echo hi\r\n").unwrap();
        fs::write(d.path().join("empty"), "").unwrap();
        fs::create_dir(d.path().join("..2024_01_01")).unwrap();
        std::os::unix::fs::symlink("..2024_01_01", d.path().join("..data")).unwrap();
        let m = ConfigMaps::load(d.path()).unwrap();
        assert_eq!(m.keys().collect::<Vec<_>>(), ["apply.sh", "empty"]);
        assert_eq!(m.text("apply.sh").unwrap(), Some("echo hi\r\n"));
        assert_eq!(m.text("empty").unwrap(), Some(""));
        assert_eq!(m.text("absent").unwrap(), None);
        assert_eq!(m.path("x"), d.path().join("x"));
    }

    #[test]
    fn refuses_other_names_starting_with_two_dots_naming_the_key() {
        let d = tempfile::tempdir().unwrap();
        fs::write(d.path().join(".._script"), "#!/bin/sh\n").unwrap();
        fs::write(d.path().join("..data_tmp"), "").unwrap();
        let e = ConfigMaps::load(d.path()).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let shown = e.to_string();
        assert!(
            shown.contains("\".._script\"") && shown.contains("starts with '..'"),
            "{shown}"
        );
        assert!(
            !shown.contains("..data_tmp"),
            "Kubernetes' own entry is skipped: {shown}"
        );
    }

    #[test]
    fn rejects_directories_as_keys() {
        let d = tempfile::tempdir().unwrap();
        fs::create_dir(d.path().join("service_..")).unwrap();
        fs::write(d.path().join("service_..").join("x.conf"), "[Service]\n").unwrap();
        let e = ConfigMaps::load(d.path()).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(
            e.to_string().contains("\"service_..\"") && e.to_string().contains("directory"),
            "{e}"
        );
    }

    #[test]
    fn values_are_regular_files_inside_the_directory_under_one_mib() {
        let d = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("shadow"), "root:$6$secret").unwrap();
        let maps = d.path().join("configmaps");
        let data = maps.join("..2024_01_01_00_00_00.1");
        fs::create_dir_all(&data).unwrap();
        fs::write(data.join("sysctl.conf"), "a=1\n").unwrap();
        std::os::unix::fs::symlink("..2024_01_01_00_00_00.1", maps.join("..data")).unwrap();
        std::os::unix::fs::symlink("..data/sysctl.conf", maps.join("sysctl.conf")).unwrap();
        assert_eq!(
            ConfigMaps::load(&maps).unwrap().bytes("sysctl.conf"),
            Some(&b"a=1\n"[..]),
            "Kubernetes' links"
        );
        fs::write(maps.join("big"), vec![b'x'; (MAX_VALUE_BYTES + 1) as usize]).unwrap();
        fs::write(maps.join("limit"), vec![b'x'; MAX_VALUE_BYTES as usize]).unwrap();
        nix::unistd::mkfifo(&maps.join("fifo"), nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        std::os::unix::fs::symlink("/dev/zero", maps.join("zero")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("shadow"), maps.join("shadow")).unwrap();
        std::os::unix::fs::symlink("nowhere", maps.join("dangling")).unwrap();
        let _socket = std::os::unix::net::UnixListener::bind(maps.join("socket")).unwrap();
        let e = ConfigMaps::load(&maps).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let msg = e.to_string();
        for (key, why) in [
            ("big", "larger than the limit of 1048576 bytes"),
            ("fifo", "is a FIFO"),
            ("zero", "leading outside the configMap directory (to \"/dev/zero\")"),
            ("shadow", "leading outside the configMap directory"),
            ("dangling", "does not resolve"),
            ("socket", "is a socket"),
        ] {
            assert!(
                msg.contains(&format!("configMap key {key:?} in {}: ", maps.display())),
                "{key}: {msg}"
            );
            let line = msg.lines().find(|l| l.contains(&format!("{key:?}"))).unwrap();
            assert!(line.contains(why), "{key}: {line}");
        }
        assert!(!msg.contains("\"limit\"") && !msg.contains("\"sysctl.conf\""), "{msg}");
        assert!(!msg.contains("secret"), "never echoes a value: {msg}");
    }

    #[test]
    fn rejects_invalid_key_names() {
        let d = tempfile::tempdir().unwrap();
        fs::write(d.path().join("bad key"), "x").unwrap();
        let e = ConfigMaps::load(d.path()).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("\"bad key\""), "{e}");
    }

    #[test]
    fn a_word_is_trimmed_and_a_second_word_is_refused_naming_its_line() {
        let cm = ConfigMaps::from_entries([
            ("one", " gb200\n"),
            ("blank", " \n\t"),
            ("two", "h100\n  gb200\n"),
            ("same", "a a"),
        ]);
        assert_eq!(cm.word("one").unwrap(), Some("gb200"));
        assert_eq!(cm.word("blank").unwrap(), Some(""));
        assert_eq!(cm.word("absent").unwrap(), None);
        assert_eq!(
            cm.word("two").unwrap_err().to_string(),
            "configMap key \"two\" line 2 (\"gb200\"): the value must be one word"
        );
        assert!(cm.word("same").unwrap_err().to_string().contains("line 1 (\"a\")"));
        let binary = ConfigMaps::from_entries([("bad", b"h1\xff0".to_vec())]);
        assert!(
            cm.word("bad").unwrap().is_none()
                && binary.word("bad").unwrap_err().to_string().contains("not valid UTF-8")
        );
    }

    #[test]
    fn non_utf8_value_names_key_and_line() {
        let m = ConfigMaps::from_entries([("sysctl.conf", b"a=1\nb=\xff\n".to_vec())]);
        let e = m.text("sysctl.conf").unwrap_err().to_string();
        assert!(
            e.contains("\"sysctl.conf\" line 2") && e.contains("not valid UTF-8"),
            "{e}"
        );
        assert_eq!(m.bytes("sysctl.conf").unwrap().len(), 8);
    }
}

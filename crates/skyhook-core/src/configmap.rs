// SPDX-License-Identifier: Apache-2.0
//! The package's configMap as the agent lays it out: one file per key under
//! `${SKYHOOK_DIR}/configmaps/`, holding the value verbatim. Read once, key names
//! validated; a missing directory means no keys.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::error::{Error, HostError, Result};

/// All configMap keys and their raw values.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConfigMaps {
    dir: PathBuf,
    entries: BTreeMap<String, Vec<u8>>,
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
            if name.starts_with("..") {
                continue;
            }
            if !is_valid_key(&name) {
                bad.push(format!(
                    "configMap key {name:?} in {} is not a valid key name (allowed: letters, digits, '-', '.', '_')",
                    dir.display()
                ));
                continue;
            }
            let path = entry.path();
            if path.is_dir() {
                // A ConfigMap key is always a file; a directory here means a key with a
                // '/' in it was written out (e.g. "service_../x.conf"), which Kubernetes
                // itself would refuse. Refuse it rather than silently ignore it.
                bad.push(format!(
                    "configMap entry {name:?} in {} is a directory, not a key: ConfigMap keys are files                      and cannot contain '/' (allowed: letters, digits, '-', '.', '_')",
                    dir.display()
                ));
                continue;
            }
            let value = fs::read(&path).map_err(|e| HostError::io("read configMap value", &path, e))?;
            entries.insert(name, value);
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
    fn rejects_invalid_key_names() {
        let d = tempfile::tempdir().unwrap();
        fs::write(d.path().join("bad key"), "x").unwrap();
        let e = ConfigMaps::load(d.path()).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("\"bad key\""), "{e}");
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

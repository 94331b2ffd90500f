// SPDX-License-Identifier: Apache-2.0
//! The configMap: `source` and `target` (required), `expected-source-fstype` and
//! `expected-source-device-prefix` (optional, fail-closed). Every problem is
//! collected and reported together (exit 2) before anything is read from the node.

use skyhook_core::error::excerpt;
use skyhook_core::formats::mountinfo::is_under;
use skyhook_core::{ConfigMaps, Error, Result};

use crate::escape::mount_unit;

/// The keys the package reads.
pub const KEYS: [&str; 4] = [
    "source",
    "target",
    "expected-source-fstype",
    "expected-source-device-prefix",
];

/// The longest path accepted (PATH_MAX less its terminating NUL).
pub const MAX_PATH: usize = 4095;

/// Kernel interface file systems: never storage, refused as source or target (a
/// choice where upstream is silent: a bind of `/proc` or over `/dev` is never what
/// a storage package means).
pub const API_DIRS: [&str; 3] = ["/proc", "/sys", "/dev"];

/// The desired bind mount.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input {
    /// The existing mount point to expose.
    pub source: String,
    /// Where to expose it.
    pub target: String,
    /// The source's file system type must be this one.
    pub fstype: Option<String>,
    /// The source's device must start with this.
    pub device_prefix: Option<String>,
    /// The mount unit of `target`.
    pub unit: String,
}

/// Why `path` (the value of `what`) is not an absolute, lexically normal path of the
/// accepted characters, or is `/` or a kernel interface directory.
pub fn path_problem(what: &str, path: &str) -> Option<String> {
    let bad = |why: &str| Some(format!("{what} {}: {why}", excerpt(path)));
    if path.len() > MAX_PATH {
        return bad(&format!("the path is {} bytes long; at most {MAX_PATH}", path.len()));
    }
    if !path.starts_with('/') {
        return bad("must be an absolute path");
    }
    if !path
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'/'))
    {
        return bad("may hold only letters, digits, '.', '_', '-' and '/'");
    }
    if path == "/" {
        return bad("must not be the file system root");
    }
    if path.ends_with('/') || path[1..].split('/').any(|c| c.is_empty() || c == "." || c == "..") {
        return bad("must be lexically normal: no '//', no '.' or '..' component, no trailing '/'");
    }
    if let Some(c) = path.split('/').find(|c| c.len() > 255) {
        return bad(&format!(
            "a component of {} bytes; file names hold at most 255",
            c.len()
        ));
    }
    if let Some(api) = API_DIRS.iter().find(|d| is_under(path, d)) {
        return bad(&format!("lies in {api}, a kernel interface file system, not storage"));
    }
    None
}

impl Input {
    /// Reads and validates the configMap; `Ok(None)` when neither required key is
    /// present (an uninstall without its configMap).
    pub fn read(maps: &ConfigMaps) -> Result<Option<Input>> {
        if !maps.contains("source") && !maps.contains("target") {
            return Ok(None);
        }
        Input::parse(maps).map(Some)
    }

    /// Reads and validates the configMap; both required keys must be there.
    pub fn parse(maps: &ConfigMaps) -> Result<Input> {
        let mut problems = Vec::new();
        let mut word = |key: &str| match maps.word(key) {
            Ok(v) => v.map(str::to_string),
            Err(e) => {
                problems.push(e.to_string());
                None
            }
        };
        let source = word("source");
        let target = word("target");
        let fstype = word("expected-source-fstype").filter(|v| !v.is_empty());
        let device_prefix = word("expected-source-device-prefix").filter(|v| !v.is_empty());
        for (key, value) in [("source", &source), ("target", &target)] {
            match value.as_deref() {
                None if !maps.contains(key) => problems.push(format!(
                    "configMap key {key:?} is missing: the package needs both source and target"
                )),
                None => {}
                Some("") => problems.push(format!("configMap key {key:?} is empty")),
                Some(v) => problems.extend(path_problem(&format!("configMap key {key:?}:"), v)),
            }
        }
        if let Some(f) = &fstype
            && !f
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        {
            problems.push(format!(
                "configMap key \"expected-source-fstype\": {} may hold only letters, digits, '.', '_' and '-'",
                excerpt(f)
            ));
        }
        if let Some(p) = &device_prefix {
            let ok = p.strip_prefix("/dev/").is_some_and(|rest| {
                !rest.is_empty()
                    && rest
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'/'))
            }) && !p.split('/').any(|c| c == "..");
            if !ok {
                problems.push(format!(
                    "configMap key \"expected-source-device-prefix\": {} must be a /dev path prefix \
                     (letters, digits, '.', '_', '-', '/'; no '..'), e.g. /dev/md",
                    excerpt(p)
                ));
            }
        }
        let (Some(source), Some(target)) = (source, target) else {
            return Err(Error::Input(problems));
        };
        if problems.is_empty() {
            if source == target {
                problems.push(format!(
                    "configMap keys \"source\" and \"target\" are both {}: they must differ",
                    excerpt(&source)
                ));
            } else if is_under(&target, &source) || is_under(&source, &target) {
                problems.push(format!(
                    "configMap keys \"source\" {} and \"target\" {} must be disjoint: neither may contain the other",
                    excerpt(&source),
                    excerpt(&target)
                ));
            }
        }
        let unit = match mount_unit(&target) {
            Ok(u) => u,
            Err(why) => {
                problems.push(format!(
                    "configMap key \"target\": no systemd mount unit can be named for it: {why}"
                ));
                String::new()
            }
        };
        if !problems.is_empty() {
            return Err(Error::Input(problems));
        }
        Ok(Input {
            source,
            target,
            fstype,
            device_prefix,
            unit,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn maps(entries: &[(&str, &str)]) -> ConfigMaps {
        ConfigMaps::from_entries(entries.iter().map(|(k, v)| (k.to_string(), v.as_bytes().to_vec())))
    }

    #[test]
    fn a_good_configmap_reads_with_its_unit() {
        let i = Input::parse(&maps(&[("source", "/mnt/k8s-disks/0\n"), ("target", "/mnt/data")])).unwrap();
        assert_eq!(
            (i.source.as_str(), i.target.as_str(), i.unit.as_str()),
            ("/mnt/k8s-disks/0", "/mnt/data", "mnt-data.mount")
        );
        assert_eq!((i.fstype, i.device_prefix), (None, None));
    }

    #[test]
    fn paths_must_be_absolute_normal_and_not_kernel_interfaces() {
        for bad in [
            "mnt/x",
            "/mnt/../etc",
            "/mnt//x",
            "/mnt/x/",
            "/mnt/./x",
            "/",
            "/proc",
            "/sys/fs",
            "/dev/shm",
            "/mnt/a b",
            "/mnt/$x",
        ] {
            assert!(path_problem("t", bad).is_some(), "{bad}");
        }
        for good in ["/mnt/data", "/var/lib/k.8-s_x", "/procx", "/developer"] {
            assert_eq!(path_problem("t", good), None, "{good}");
        }
    }

    #[test]
    fn source_and_target_must_be_disjoint() {
        for (s, t) in [("/mnt/a", "/mnt/a"), ("/mnt/a", "/mnt/a/b"), ("/mnt/a/b", "/mnt/a")] {
            let e = Input::parse(&maps(&[("source", s), ("target", t)])).unwrap_err();
            assert_eq!(e.exit_code(), 2);
        }
        assert!(Input::parse(&maps(&[("source", "/mnt/a"), ("target", "/mnt/ab")])).is_ok());
    }

    #[test]
    fn every_missing_key_is_named() {
        let e = Input::parse(&maps(&[("expected-source-fstype", "xfs")]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("\"source\" is missing") && e.contains("\"target\" is missing"),
            "{e}"
        );
        assert_eq!(Input::read(&maps(&[])).unwrap(), None);
    }

    #[test]
    fn assertions_are_checked_for_shape() {
        let base = [("source", "/mnt/a"), ("target", "/mnt/b")];
        for (k, v) in [
            ("expected-source-fstype", "x;y"),
            ("expected-source-device-prefix", "/dev/../etc"),
            ("expected-source-device-prefix", "md"),
        ] {
            let mut e = base.to_vec();
            e.push((k, v));
            assert!(Input::parse(&maps(&e)).unwrap_err().to_string().contains(k), "{k}={v}");
        }
    }
}

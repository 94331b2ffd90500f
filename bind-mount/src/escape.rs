// SPDX-License-Identifier: Apache-2.0
//! systemd's path escaping (`systemd-escape --path`, systemd.unit(5) "String
//! Escaping for Inclusion in Unit Names"): the name of the mount unit for a mount
//! point. Redundant slashes and `.` components are dropped, the leading and trailing
//! `/` removed (`/` alone is `-`), each remaining `/` becomes `-`; every byte outside
//! letters, digits, `:`, `_` and `.` (so `-` and `\` too), and a leading `.`, is
//! written as `\xNN`.

use skyhook_core::formats::unitfile::check_unit_name;

/// The escaped form of the absolute path `path` (`/mnt/my-data` → `mnt-my\x2ddata`).
pub fn escape_path(path: &str) -> String {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty() && *p != ".").collect();
    if parts.is_empty() {
        return "-".into();
    }
    let joined = parts.join("/");
    let mut out = String::with_capacity(joined.len());
    for (i, b) in joined.bytes().enumerate() {
        match b {
            b'/' => out.push('-'),
            b'.' if i == 0 => out.push_str("\\x2e"),
            b if b.is_ascii_alphanumeric() || matches!(b, b':' | b'_' | b'.') => out.push(b as char),
            b => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out
}

/// The mount unit for mount point `path` (`/mnt/data` → `mnt-data.mount`), or why
/// systemd could not name it (longer than 255 bytes).
pub fn mount_unit(path: &str) -> Result<String, String> {
    let name = format!("{}.mount", escape_path(path));
    check_unit_name(&name)?;
    Ok(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_as_systemd_escape_path_does() {
        for (path, unit) in [
            ("/mnt/data", "mnt-data"),
            ("/", "-"),
            ("/mnt/k8s-disks/0", "mnt-k8s\\x2ddisks-0"),
            ("//mnt///data/", "mnt-data"),
            ("/mnt/./data", "mnt-data"),
            ("/.hidden/x", "\\x2ehidden-x"),
            ("/a/.b", "a-.b"),
            ("/a b/c\\d", "a\\x20b-c\\x5cd"),
            ("/x:y_z.w", "x:y_z.w"),
        ] {
            assert_eq!(escape_path(path), unit, "{path}");
        }
    }

    #[test]
    fn a_unit_name_over_255_bytes_is_refused() {
        assert_eq!(mount_unit("/mnt/data").unwrap(), "mnt-data.mount");
        let long = format!("/{}", "a".repeat(250));
        assert!(mount_unit(&long).unwrap_err().contains("255"));
    }

    /// The machine's own `systemd-escape`, where it exists, agrees (it only prints).
    #[test]
    fn agrees_with_systemd_escape_where_installed() {
        for path in ["/mnt/data", "/mnt/k8s-disks/0", "/.x/y-z", "/a:b/c_d.e", "/srv/a b"] {
            let Ok(out) = std::process::Command::new("systemd-escape")
                .args(["--path", path])
                .output()
            else {
                eprintln!("systemd-escape is not installed here: compared with the table only");
                return;
            };
            assert!(out.status.success(), "systemd-escape --path {path}");
            assert_eq!(
                String::from_utf8_lossy(&out.stdout).trim_end(),
                escape_path(path),
                "{path}"
            );
        }
    }
}

// SPDX-License-Identifier: Apache-2.0
//! Figures the test campaigns and benches measure (hostile cases, kill points per
//! signal, fault and concurrency trials, bench timings), collected for the one
//! generated figures file. When `SKYHOOK_FIGURES` names a directory, each figure is
//! appended as one JSON line to `figures.jsonl` there (one `write` with `O_APPEND`,
//! so parallel tests never interleave); `skyhook-pkg figures` renders the file with
//! the machine and the date. Unset, nothing is written.

use std::io::Write;

/// The environment variable naming the directory figures are collected in.
pub const FIGURES_VAR: &str = "SKYHOOK_FIGURES";

/// The file figures are appended to, in the directory [`FIGURES_VAR`] names.
pub const FIGURES_FILE: &str = "figures.jsonl";

/// Records `value` for `what` under `section` (`kill points`, `hostile input`…),
/// prefixed with the package under test and the test's name (its thread's).
pub fn record(section: &str, what: &str, value: impl std::fmt::Display) {
    let test = std::thread::current().name().unwrap_or("").to_string();
    record_as(section, &test, what, value);
}

/// [`record`] under the name `test` (a bench's, whose work runs on `main`).
pub fn record_as(section: &str, test: &str, what: &str, value: impl std::fmt::Display) {
    let Some(dir) = std::env::var_os(FIGURES_VAR).filter(|d| !d.is_empty()) else {
        return;
    };
    let package = std::env::var("CARGO_PKG_NAME").unwrap_or_default();
    let line = serde_json::json!({
        "section": section,
        "package": package,
        "test": test,
        "what": what,
        "value": value.to_string(),
    });
    let mut text = line.to_string();
    text.push('\n');
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(std::path::Path::new(&dir).join(FIGURES_FILE))
        .and_then(|mut f| f.write_all(text.as_bytes()));
    if let Err(e) = written {
        eprintln!(
            "cannot record a figure in {}: {e}",
            std::path::Path::new(&dir).display()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_are_json_lines_in_the_named_directory() {
        let d = tempfile::tempdir().unwrap();
        // SAFETY: set for this test's own figure only; no other test of this
        // binary records figures.
        unsafe { std::env::set_var(FIGURES_VAR, d.path()) };
        record("kill points", "config", "12 points × 2 signals");
        unsafe { std::env::remove_var(FIGURES_VAR) };
        record("kill points", "not recorded", 1);
        let text = std::fs::read_to_string(d.path().join(FIGURES_FILE)).unwrap();
        let lines: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0]["what"], "config");
        assert_eq!(lines[0]["value"], "12 points × 2 signals");
    }
}

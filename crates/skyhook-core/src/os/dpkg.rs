// SPDX-License-Identifier: Apache-2.0
//! dpkg's own record of a run that did not finish: what `dpkg --audit` and apt's
//! "dpkg was interrupted, you must manually run 'dpkg --configure -a'" read, taken
//! from the database files themselves so that asking costs no process.
//!
//! Read from dpkg 1.22 (`src/main/archives.c`, `lib/dpkg/dbmodify.c`,
//! `lib/dpkg/parse.c`): every status change is first appended to a numbered file
//! under `<admindir>/updates/` (`0000`, `0001`, …) and folded into `status` at the
//! next checkpoint, so a numbered file there means a run stopped before its
//! checkpoint; a package whose `Status:` is `half-installed`, `unpacked`,
//! `half-configured`, `triggers-awaited` or `triggers-pending` was left in the middle
//! of its installation or configuration.

use crate::error::{Error, Result};
use crate::host::Host;
use crate::host::command::Cmd;

/// dpkg's database directory.
pub const ADMINDIR: &str = "/var/lib/dpkg";

/// The package states of an installation or configuration that did not finish.
const UNFINISHED: [&str; 5] = [
    "half-installed",
    "unpacked",
    "half-configured",
    "triggers-awaited",
    "triggers-pending",
];

/// What dpkg left unfinished on `host`; empty when dpkg is healthy (or absent).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Unfinished {
    /// Journal files not yet folded into `status` (`updates/0003`).
    pub journal: Vec<String>,
    /// Packages in an unfinished state, as `name (state)`.
    pub packages: Vec<String>,
}

impl Unfinished {
    /// Reads `<admindir>/updates/` and `<admindir>/status` on `host`.
    pub fn read(host: &Host, admindir: &str) -> Result<Self> {
        let mut journal: Vec<String> = host
            .list_dir(format!("{admindir}/updates"))
            .unwrap_or_default()
            .into_iter()
            .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            .map(|n| format!("{admindir}/updates/{n}"))
            .collect();
        journal.sort();
        let status = host.read(format!("{admindir}/status"))?.unwrap_or_default();
        Ok(Unfinished {
            journal,
            packages: unfinished_packages(&String::from_utf8_lossy(&status)),
        })
    }

    /// Whether dpkg finished everything it started.
    pub fn is_empty(&self) -> bool {
        self.journal.is_empty() && self.packages.is_empty()
    }
}

impl std::fmt::Display for Unfinished {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts = Vec::new();
        if !self.packages.is_empty() {
            parts.push(format!(
                "packages left unfinished: {}",
                crate::error::bounded_list(&self.packages).join(", ")
            ));
        }
        if !self.journal.is_empty() {
            parts.push(format!(
                "journal not checkpointed: {}",
                crate::error::bounded_list(&self.journal).join(", ")
            ));
        }
        f.write_str(&parts.join("; "))
    }
}

/// Finishes what an interrupted dpkg run left (`dpkg --configure -a`) before a step
/// installs anything, or fails naming it: an install over a half-configured package
/// fails half way and can leave dpkg wedged for every later package. A healthy dpkg
/// costs two file reads and no process.
pub fn finish_unfinished(host: &Host) -> Result<()> {
    let unfinished = Unfinished::read(host, ADMINDIR)?;
    if unfinished.is_empty() {
        return Ok(());
    }
    log::warn!("dpkg did not finish an earlier run ({unfinished}); running dpkg --configure -a first");
    let configure = Cmd::new("dpkg")
        .args(["--configure", "-a"])
        .env("DEBIAN_FRONTEND", "noninteractive")
        .echo();
    let out = host.run(&configure)?;
    let left = Unfinished::read(host, ADMINDIR)?;
    if out.success() && left.is_empty() {
        return Ok(());
    }
    Err(Error::action(format!(
        "dpkg is left unfinished by an earlier run and `dpkg --configure -a` did not finish it ({}; {}): repair \
         dpkg on the node (see `dpkg --audit`), then run the package again; nothing was installed",
        out.status_text(),
        if left.is_empty() { unfinished } else { left }
    )))
}

/// `name (state)` of every stanza of a dpkg `status` file in an unfinished state.
fn unfinished_packages(status: &str) -> Vec<String> {
    let mut found = Vec::new();
    for stanza in status.split("\n\n") {
        let field = |name: &str| {
            stanza
                .lines()
                .find_map(|l| l.strip_prefix(name).and_then(|r| r.strip_prefix(':')).map(str::trim))
        };
        let (Some(package), Some(state)) = (field("Package"), field("Status").and_then(|s| s.split(' ').nth(2))) else {
            continue;
        };
        if UNFINISHED.contains(&state) {
            found.push(format!("{package} ({state})"));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::command::RecordingRunner;

    #[test]
    fn a_healthy_or_absent_database_has_nothing_unfinished() {
        let d = tempfile::tempdir().unwrap();
        let h = Host::new(d.path(), RecordingRunner::succeeding());
        assert!(Unfinished::read(&h, ADMINDIR).unwrap().is_empty());
        h.write(
            "/var/lib/dpkg/status",
            b"Package: a\nStatus: install ok installed\n\nPackage: b\nStatus: deinstall ok config-files\n",
            0o644,
        )
        .unwrap();
        h.write("/var/lib/dpkg/updates/tmp.i", b"", 0o644).unwrap();
        assert!(Unfinished::read(&h, ADMINDIR).unwrap().is_empty());
    }

    #[test]
    fn a_dpkg_left_unfinished_after_configure_is_reported_naming_the_package() {
        let d = tempfile::tempdir().unwrap();
        let h = Host::new(d.path(), RecordingRunner::succeeding());
        finish_unfinished(&h).unwrap();
        h.write(
            "/var/lib/dpkg/status",
            b"Package: efa\nStatus: install ok half-configured\n",
            0o644,
        )
        .unwrap();
        let e = finish_unfinished(&h).unwrap_err().to_string();
        assert!(e.contains("efa (half-configured)") && e.contains("dpkg --audit"), "{e}");
    }

    #[test]
    fn an_interrupted_run_is_named_by_package_state_and_journal_file() {
        let d = tempfile::tempdir().unwrap();
        let h = Host::new(d.path(), RecordingRunner::succeeding());
        h.write(
            "/var/lib/dpkg/status",
            b"Package: linux-image-6.17.0-1019-aws\nStatus: install ok half-configured\nVersion: 1\n\n\
              Package: efa\nStatus: install ok unpacked\n\nPackage: ok\nStatus: install ok installed\n",
            0o644,
        )
        .unwrap();
        h.write("/var/lib/dpkg/updates/0003", b"", 0o644).unwrap();
        let u = Unfinished::read(&h, ADMINDIR).unwrap();
        assert_eq!(
            u.packages,
            ["linux-image-6.17.0-1019-aws (half-configured)", "efa (unpacked)"]
        );
        assert_eq!(u.journal, ["/var/lib/dpkg/updates/0003"]);
        assert!(u.to_string().contains("efa (unpacked)"), "{u}");
    }
}

// SPDX-License-Identifier: Apache-2.0
//! SELinux labels of the files a package creates. A file created by rename gets the
//! type its directory's policy transition gives (`etc_t` under `/etc`), not the one
//! the policy's file contexts name for its path (`/etc/kdump.conf`: `kdump_etc_t`).
//! On a node with SELinux enabled, [`crate::host::Host::write`] therefore runs the
//! policy's own tool on a file it created, after the rename: `restorecon <path>`
//! (policycoreutils, present wherever RHEL enables SELinux), which sets the file's
//! label from the loaded policy's file contexts. A replaced file keeps its old label
//! instead (`nofollow`'s `keep_label`), so a label someone set by hand stays.
//!
//! - SELinux is enabled when its file system is mounted where the kernel mounts it:
//!   `/sys/fs/selinux/enforce` (or `/selinux/enforce`, the old mount point) exists
//!   under the host root, enforcing or permissive alike (a permissive node enforces
//!   the labels once switched).
//! - Without `restorecon` on an SELinux node, the file keeps its directory's type: a
//!   warning names the file, once per run (the next files would only repeat it).
//! - A `restorecon` that fails leaves the file written with its directory's type and
//!   logs a warning naming the file and restorecon's message: the content is what the
//!   step promised, and the label is what it was before this module existed.
//! - Not done: directories created on the way (they take their parent's transition),
//!   symbolic links, and a file whose write was interrupted between the rename and
//!   restorecon (the rerun finds its content in place and writes nothing).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::host::Host;
use crate::host::command::Cmd;

/// The policy's relabelling tool (policycoreutils).
pub const RESTORECON: &str = "restorecon";

/// Where the kernel's SELinux file system says SELinux is on.
pub const ENFORCE_FILES: [&str; 2] = ["/sys/fs/selinux/enforce", "/selinux/enforce"];

/// Whether the missing-restorecon warning was given in this run.
static WARNED_MISSING: AtomicBool = AtomicBool::new(false);

/// Whether SELinux is enabled on `host` (its file system is mounted).
pub fn enabled(host: &Host) -> bool {
    ENFORCE_FILES.iter().any(|f| host.exists(f))
}

/// Gives the file `path` just created on `host` its policy label where SELinux is
/// enabled; nothing elsewhere. Never fails: see the module's notes.
pub(crate) fn label_created(host: &Host, path: &Path) {
    if !enabled(host) {
        return;
    }
    if host.which(RESTORECON).is_none() {
        if !WARNED_MISSING.swap(true, Ordering::Relaxed) {
            log::warn!(
                "SELinux is enabled on this node but {RESTORECON} (policycoreutils) is not installed: {} keeps its \
                 directory's SELinux type, not the policy's for its path; install policycoreutils and run \
                 `restorecon -v {}` (files created later in this run are not named again)",
                path.display(),
                path.display()
            );
        }
        return;
    }
    let cmd = Cmd::new(RESTORECON).arg(path.to_string_lossy());
    match host.run(&cmd) {
        Ok(out) if out.success() => log::debug!("labelled {} with restorecon", path.display()),
        Ok(out) => log::warn!(
            "restorecon {} failed ({}): it keeps its directory's SELinux type. {}",
            path.display(),
            out.status_text(),
            crate::error::excerpt(out.diagnostics())
        ),
        Err(e) => log::warn!(
            "restorecon {} could not run: {e}; it keeps its directory's SELinux type",
            path.display()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::command::{Output, RecordingRunner};
    use std::sync::Arc;

    /// A host whose runner has `restorecon` when `installed`, SELinux on when `on`.
    fn host(on: bool, installed: bool) -> (tempfile::TempDir, Host, Arc<RecordingRunner>) {
        let d = tempfile::tempdir().unwrap();
        if on {
            std::fs::create_dir_all(d.path().join("sys/fs/selinux")).unwrap();
            std::fs::write(d.path().join("sys/fs/selinux/enforce"), "0").unwrap();
        }
        let runner = Arc::new(RecordingRunner::new(move |c| {
            Ok(match c.display().as_str() {
                "which restorecon" if installed => Output::exited(0, "/usr/sbin/restorecon"),
                "which restorecon" => Output::exited(1, ""),
                _ => Output::exited(0, ""),
            })
        }));
        let h = Host::new(d.path(), runner.clone());
        (d, h, runner)
    }

    #[test]
    fn a_created_file_is_relabelled_on_an_selinux_node_only() {
        let (_d, h, runner) = host(true, true);
        assert!(enabled(&h));
        assert!(h.write("/etc/kdump.conf", b"path /var/crash\n", 0o644).unwrap());
        assert_eq!(runner.calls(), ["restorecon /etc/kdump.conf"], "once, after the rename");
        assert!(h.exists("/etc/kdump.conf"));
        // A rewrite keeps the replaced file's label: restorecon is not run.
        assert!(h.write("/etc/kdump.conf", b"path /var/crash2\n", 0o644).unwrap());
        // An unchanged write writes nothing.
        assert!(!h.write("/etc/kdump.conf", b"path /var/crash2\n", 0o644).unwrap());
        assert_eq!(runner.calls(), ["restorecon /etc/kdump.conf"]);

        let (_d, h, runner) = host(false, true);
        assert!(!enabled(&h));
        assert!(h.write("/etc/kdump.conf", b"x\n", 0o644).unwrap());
        assert!(runner.calls().is_empty(), "no SELinux: restorecon is never run");
    }

    #[test]
    fn without_restorecon_the_file_is_written_and_nothing_runs() {
        let (_d, h, runner) = host(true, false);
        assert!(
            h.write("/etc/sysctl.d/zz-x.conf", b"vm.swappiness = 1\n", 0o644)
                .unwrap()
        );
        assert_eq!(
            h.read("/etc/sysctl.d/zz-x.conf").unwrap().as_deref(),
            Some(&b"vm.swappiness = 1\n"[..])
        );
        assert!(runner.calls().is_empty());
        assert!(WARNED_MISSING.load(Ordering::Relaxed), "the warning was given");
    }

    #[test]
    fn a_failing_restorecon_leaves_the_file_written() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("selinux")).unwrap();
        std::fs::write(d.path().join("selinux/enforce"), "1").unwrap();
        let h = Host::new(
            d.path(),
            RecordingRunner::new(|c| {
                Ok(match c.display().as_str() {
                    "which restorecon" => Output::exited(0, "/sbin/restorecon"),
                    _ => Output::exited(1, "restorecon: Could not set context"),
                })
            }),
        );
        assert!(enabled(&h), "the old mount point counts");
        assert!(h.write("/etc/x.conf", b"x\n", 0o644).unwrap());
        assert!(h.exists("/etc/x.conf"));
    }
}

// SPDX-License-Identifier: Apache-2.0
//! Fault injection: a step run with one host directory on a file system that fails
//! its writes, as a full disk (`ENOSPC`) or a read-only mount (`EROFS`) would. The
//! step runs in a private mount namespace (`unshare --mount`) where a tiny tmpfs,
//! holding a copy of the directory, is mounted over it; the namespace and its mount
//! end with the step, so the node's own directory is never touched and whatever the
//! step managed to write there is gone. What the scenario checks is everything else:
//! the exit code, the message naming the path, and the rest of the node (live values,
//! records, other directories) exactly as before.
//!
//! Needs root (mounts), as the whole test tier does; the scenario is skipped, with a
//! line saying so, where `unshare` cannot make a mount namespace.

use std::path::Path;
use std::process::Command;

use crate::{Node, Run, run_command};

/// Runs `mode` on a fresh node from `node` with each of `dirs` failing each way of
/// `faults` (a full disk fails writes, not removals: a mode that only removes there
/// succeeds): the step must exit 1, name the directory and the error, and
/// leave the node's tree exactly as before (live values and records included), but
/// for the paths under `commands_change`: what a command the step ran before the
/// failure changed (a service stopped, its pid file gone), which the step's undo
/// journal does not undo (see skyhook_core::host::journal).
/// Returns one description per failing combination (empty: all held); skipped
/// (empty, with a line saying so) where mount namespaces cannot be made.
pub fn campaign(
    node: impl Fn() -> Node,
    mode: &str,
    dirs: &[&str],
    faults: &[Fault],
    commands_change: &[&str],
) -> Vec<String> {
    let relative: Vec<&str> = commands_change.iter().map(|p| p.trim_start_matches('/')).collect();
    if !available() {
        eprintln!("fault campaign skipped: this machine cannot make mount namespaces");
        return Vec::new();
    }
    let mut failures = Vec::new();
    for dir in dirs {
        for &fault in faults {
            let n = node();
            std::fs::create_dir_all(n.path(dir)).expect("create the directory to fail");
            let before = crate::Tree::of_except(n.root(), &relative);
            let r = run_with(&n, mode, dir, fault);
            let mut why = Vec::new();
            if r.code != 1 {
                why.push(format!("exit {}", r.code));
            }
            if !r.output().contains(*dir) || !r.output().contains(fault.error_text()) {
                why.push("the message does not name the directory and the error".to_string());
            }
            let d = before.diff(&crate::Tree::of_except(n.root(), &relative));
            if !d.is_empty() {
                why.push(format!("the node changed: {}", d.join(", ")));
            }
            if !why.is_empty() {
                failures.push(format!(
                    "{mode} with {dir} {fault:?}: {}\n{}",
                    why.join("; "),
                    r.output()
                ));
            }
        }
    }
    crate::figures::record(
        "faults",
        mode,
        format!(
            "{} directories × {} faults, {} failed",
            dirs.len(),
            faults.len(),
            failures.len()
        ),
    );
    failures
}

/// How the directory fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Every write fails with `ENOSPC`: the tmpfs is filled before the step starts.
    Full,
    /// Every write fails with `EROFS`: the tmpfs is remounted read-only.
    ReadOnly,
}

impl Fault {
    /// Both faults.
    pub const ALL: [Fault; 2] = [Fault::Full, Fault::ReadOnly];

    /// The error text a message about the fault carries (`strerror`).
    pub fn error_text(self) -> &'static str {
        match self {
            Fault::Full => "No space left on device",
            Fault::ReadOnly => "Read-only file system",
        }
    }
}

/// Whether this machine lets the tests make mount namespaces.
pub fn available() -> bool {
    crate::status_gated(Command::new("unshare").args(["--mount", "--propagation", "private", "true"]))
        .is_ok_and(|s| s.success())
}

/// Runs `node`'s step in `mode` with host directory `dir` failing as `fault` says.
/// The directory is created on the node first when missing (and stays, empty).
pub fn run_with(node: &Node, mode: &str, dir: &str, fault: Fault) -> Run {
    let real = node.path(dir);
    std::fs::create_dir_all(&real).expect("create the directory to fail");
    let step = node.command(mode);
    let mut c = Command::new("unshare");
    c.args(["--mount", "--propagation", "private", "sh", "-ec", SCRIPT, "fault"])
        .arg(&real)
        .arg(match fault {
            Fault::Full => "full",
            Fault::ReadOnly => "ro",
        })
        .arg(step.get_program())
        .args(step.get_args())
        .env_clear()
        .current_dir(step.get_current_dir().unwrap_or(Path::new("/")));
    for (k, v) in step.get_envs() {
        if let Some(v) = v {
            c.env(k, v);
        }
    }
    c.env(
        "PATH",
        std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()),
    );
    run_command(&mut c)
}

/// In the namespace: copy the directory aside, mount a 64 KiB tmpfs over it, copy
/// the content back, then fill it (full) or remount it read-only (ro), and exec the
/// step.
const SCRIPT: &str = r#"dir=$1 fault=$2; shift 2
keep=$(mktemp -d)
cp -a "$dir/." "$keep/"
mount -t tmpfs -o size=64k,nr_inodes=4096 skyhook-fault "$dir"
cp -a "$keep/." "$dir/"
rm -rf "$keep"
case $fault in
  full) dd if=/dev/zero of="$dir/.fill" bs=4k 2>/dev/null || true ;;
  ro) mount -o remount,ro "$dir" ;;
esac
exec "$@""#;

// SPDX-License-Identifier: Apache-2.0
//! The tier's cache directory (`SKYHOOK_VM_CACHE`, default
//! `/var/cache/skyhook-packages/vm`), its lock, and running this machine's commands
//! with errors that say what failed.

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use nix::fcntl::{Flock, FlockArg};

/// The default cache directory.
pub const DEFAULT_CACHE: &str = "/var/cache/skyhook-packages/vm";

/// The cache directory, created when missing.
pub fn dir() -> Result<PathBuf, String> {
    let dir = std::env::var_os("SKYHOOK_VM_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_CACHE));
    fs::create_dir_all(&dir).map_err(|e| format!("cannot create the cache directory {}: {e}", dir.display()))?;
    Ok(dir)
}

/// Takes the cache's exclusive lock, waiting for another run of the tier to finish:
/// one run at a time per machine (they share the cache, and two would share 2 cores).
pub fn lock(dir: &Path) -> Result<Flock<File>, String> {
    let path = dir.join("lock");
    let file = File::create(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(lock) => Ok(lock),
        Err((file, _)) => {
            eprintln!(
                "vm: another run of the VM tier holds {}; waiting for it",
                path.display()
            );
            Flock::lock(file, FlockArg::LockExclusive).map_err(|(_, e)| format!("{}: flock: {e}", path.display()))
        }
    }
}

/// Runs `cmd`, returning its stdout; a failure names the command and shows its output.
pub fn run(cmd: &mut Command) -> Result<String, String> {
    let shown = show(cmd);
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {shown}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{shown} failed ({}):\n{}{}",
            out.status,
            tail(&String::from_utf8_lossy(&out.stdout), 30),
            tail(&String::from_utf8_lossy(&out.stderr), 30)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A command as a shell line, for messages.
pub fn show(cmd: &Command) -> String {
    std::iter::once(cmd.get_program())
        .chain(cmd.get_args())
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The last `n` lines of `text`.
pub fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut s = lines[lines.len().saturating_sub(n)..].join("\n");
    if !s.is_empty() {
        s.push('\n');
    }
    s
}

/// Where a program is on PATH, with what to install when it is missing.
pub fn need(program: &str, package: &str) -> Result<PathBuf, String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/sbin".into()])
        .map(|d| d.join(program))
        .find(|p| p.is_file())
        .ok_or_else(|| format!("{program} is not installed here: apt-get install {package}"))
}

/// The SHA-256 of `text` in hex (coreutils' sha256sum: stable across Rust versions).
pub fn sha256(text: &str) -> Result<String, String> {
    use std::io::Write;
    let mut child = Command::new("sha256sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run sha256sum: {e}"))?;
    child
        .stdin
        .take()
        .expect("piped stdin")
        .write_all(text.as_bytes())
        .map_err(|e| format!("sha256sum: {e}"))?;
    let out = child.wait_with_output().map_err(|e| format!("sha256sum: {e}"))?;
    let hex = String::from_utf8_lossy(&out.stdout);
    hex.split_whitespace()
        .next()
        .map(str::to_string)
        .ok_or_else(|| "sha256sum printed nothing".into())
}

/// Removes `path` (a file or a tree) when it exists.
pub fn remove(path: &Path) -> Result<(), String> {
    let res = match fs::symlink_metadata(path) {
        Err(_) => return Ok(()),
        Ok(m) if m.is_dir() => fs::remove_dir_all(path),
        Ok(_) => fs::remove_file(path),
    };
    res.map_err(|e| format!("cannot remove {}: {e}", path.display()))
}

/// Removes every entry of the directory `dir` whose name is not in `keep` (nothing
/// when `dir` does not exist).
pub fn remove_all_but(dir: &Path, keep: &[&str]) -> Result<(), String> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Ok(());
    };
    for e in entries.flatten() {
        if !keep.iter().any(|k| e.file_name() == *k) {
            remove(&e.path())?;
        }
    }
    Ok(())
}

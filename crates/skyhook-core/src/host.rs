// SPDX-License-Identifier: Apache-2.0
//! The machine being changed. Every path a package touches is resolved under the
//! host root (`/` on a node, a scratch directory in tests and offline use), every
//! write is atomic, and every external command goes through the host's
//! [`Runner`](crate::command::Runner).
//!
//! Environment (never set by the agent; for tests and offline use):
//! - `SKYHOOK_HOST_ROOT`: the host root, default `/`.
//! - `SKYHOOK_HOST_COMMANDS`: a directory of stand-in programs (see
//!   [`StandInRunner`]). Without it, a host root other than `/` runs no commands.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use crate::command::{Cmd, Output, RefusingRunner, Runner, StandInRunner, SystemRunner};
use crate::error::{HostError, Result};
use crate::systemd::Systemd;

/// The host: a root directory and a command runner.
pub struct Host {
    root: PathBuf,
    runner: Box<dyn Runner>,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host").field("root", &self.root).finish_non_exhaustive()
    }
}

/// Environment variable naming the host root (tests and offline use).
pub const HOST_ROOT_VAR: &str = "SKYHOOK_HOST_ROOT";
/// Environment variable naming the directory of stand-in commands (tests).
pub const HOST_COMMANDS_VAR: &str = "SKYHOOK_HOST_COMMANDS";

impl Host {
    /// A host rooted at `root`, running commands with `runner`.
    pub fn new(root: impl Into<PathBuf>, runner: impl Runner + 'static) -> Self {
        Host {
            root: root.into(),
            runner: Box::new(runner),
        }
    }

    /// The host the environment describes: `/` with real commands on a node.
    pub fn from_env() -> Self {
        Self::from_vars(std::env::var_os(HOST_ROOT_VAR), std::env::var_os(HOST_COMMANDS_VAR))
    }

    /// The host for the given values of `SKYHOOK_HOST_ROOT` and `SKYHOOK_HOST_COMMANDS`.
    pub fn from_vars(root: Option<std::ffi::OsString>, stand_ins: Option<std::ffi::OsString>) -> Self {
        let root = root
            .filter(|r| !r.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/"));
        match stand_ins.filter(|d| !d.is_empty()) {
            Some(dir) => Host::new(root, StandInRunner::new(dir)),
            None if root == Path::new("/") => Host::new(root, SystemRunner),
            None => {
                let refusing = RefusingRunner::new(&root);
                Host::new(root, refusing)
            }
        }
    }

    /// The host root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where the host path `path` (absolute, without `..`) lives on this machine.
    pub fn path(&self, path: impl AsRef<Path>) -> Result<PathBuf, HostError> {
        let path = path.as_ref();
        if !path.is_absolute() || path.components().any(|c| c == Component::ParentDir) {
            return Err(HostError::BadPath(path.to_path_buf()));
        }
        Ok(self.root.join(path.strip_prefix("/").unwrap_or(path)))
    }

    /// The contents of `path`, or `None` when it does not exist.
    pub fn read(&self, path: impl AsRef<Path>) -> Result<Option<Vec<u8>>, HostError> {
        let real = self.path(&path)?;
        match fs::read(&real) {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(HostError::io("read", path.as_ref(), e)),
        }
    }

    /// The contents of `path` as text (invalid UTF-8 replaced), or `None` when missing.
    pub fn read_to_string(&self, path: impl AsRef<Path>) -> Result<Option<String>, HostError> {
        Ok(self
            .read(path)?
            .map(|b| String::from_utf8(b).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())))
    }

    /// Whether `path` exists (a dangling symlink counts as existing).
    pub fn exists(&self, path: impl AsRef<Path>) -> bool {
        self.path(path).is_ok_and(|p| p.symlink_metadata().is_ok())
    }

    /// The permission bits of `path` (e.g. `0o644`), `None` when missing.
    pub fn mode(&self, path: impl AsRef<Path>) -> Result<Option<u32>, HostError> {
        let real = self.path(&path)?;
        match real.metadata() {
            Ok(m) => Ok(Some(m.permissions().mode() & 0o7777)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(HostError::io("inspect", path.as_ref(), e)),
        }
    }

    /// Whether `path` holds exactly `content` with permission bits `mode`.
    pub fn has_content(&self, path: impl AsRef<Path>, content: &[u8], mode: u32) -> Result<bool, HostError> {
        let path = path.as_ref();
        Ok(self.read(path)?.is_some_and(|c| c == content) && self.mode(path)? == Some(mode))
    }

    /// Makes `path` hold `content` with permission bits `mode`, atomically (temporary
    /// file in the same directory, fsync, rename), creating parent directories (0755).
    /// Does nothing when the file already matches; returns whether it wrote.
    pub fn write(&self, path: impl AsRef<Path>, content: &[u8], mode: u32) -> Result<bool, HostError> {
        let path = path.as_ref();
        if self.has_content(path, content, mode)? {
            return Ok(false);
        }
        let real = self.path(path)?;
        write_atomic(&real, content, mode).map_err(|e| HostError::io("write", path, e))?;
        log::debug!("wrote {}", path.display());
        Ok(true)
    }

    /// Removes the file or symlink `path` if present; returns whether it was there.
    pub fn remove(&self, path: impl AsRef<Path>) -> Result<bool, HostError> {
        let real = self.path(&path)?;
        match fs::remove_file(&real) {
            Ok(()) => {
                log::debug!("removed {}", path.as_ref().display());
                Ok(true)
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(HostError::io("remove", path.as_ref(), e)),
        }
    }

    /// Removes the directory `path` if it exists and is empty; returns whether it did.
    pub fn remove_empty_dir(&self, path: impl AsRef<Path>) -> Result<bool, HostError> {
        let real = self.path(&path)?;
        match fs::remove_dir(&real) {
            Ok(()) => Ok(true),
            Err(e) if matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::DirectoryNotEmpty) => Ok(false),
            Err(e) if e.raw_os_error() == Some(nix::libc::ENOTEMPTY) => Ok(false),
            Err(e) => Err(HostError::io("remove directory", path.as_ref(), e)),
        }
    }

    /// Makes `link` a symbolic link to `target` (replacing a file or a different
    /// link atomically); returns whether it changed anything.
    pub fn symlink(&self, target: impl AsRef<Path>, link: impl AsRef<Path>) -> Result<bool, HostError> {
        let (target, link) = (target.as_ref(), link.as_ref());
        let real = self.path(link)?;
        if fs::read_link(&real).is_ok_and(|t| t == target) {
            return Ok(false);
        }
        let result = (|| {
            if let Some(parent) = real.parent() {
                fs::create_dir_all(parent)?;
            }
            let tmp = temp_sibling(&real);
            let _ = fs::remove_file(&tmp);
            std::os::unix::fs::symlink(target, &tmp)?;
            fs::rename(&tmp, &real)
        })();
        result.map_err(|e| HostError::io("create symlink", link, e))?;
        Ok(true)
    }

    /// The target of the symlink `path`, `None` when it is not a symlink.
    pub fn read_link(&self, path: impl AsRef<Path>) -> Result<Option<PathBuf>, HostError> {
        Ok(fs::read_link(self.path(path)?).ok())
    }

    /// Whether `path` is a directory (following symlinks); `false` when missing.
    pub fn is_dir(&self, path: impl AsRef<Path>) -> bool {
        self.path(path).is_ok_and(|p| p.is_dir())
    }

    /// Where `path` leads after following its symbolic links (up to 16) the way the
    /// host would: absolute targets resolve under the host root, so a scratch root
    /// never reaches this machine's own files. Only the last component is followed.
    pub fn resolve_links(&self, path: impl AsRef<Path>) -> Result<PathBuf, HostError> {
        let mut current = path.as_ref().to_path_buf();
        for _ in 0..16 {
            let Some(target) = self.read_link(&current)? else {
                return Ok(current);
            };
            let joined = if target.is_absolute() {
                target
            } else {
                current.parent().unwrap_or(Path::new("/")).join(target)
            };
            let mut clean = PathBuf::from("/");
            for c in joined.components() {
                match c {
                    Component::ParentDir => {
                        clean.pop();
                    }
                    Component::Normal(n) => clean.push(n),
                    _ => {}
                }
            }
            current = clean;
        }
        Err(HostError::io(
            "resolve",
            path.as_ref(),
            io::Error::other("too many levels of symbolic links"),
        ))
    }

    /// The names in directory `path`, sorted; empty when it does not exist.
    pub fn list_dir(&self, path: impl AsRef<Path>) -> Result<Vec<String>, HostError> {
        let real = self.path(&path)?;
        let entries = match fs::read_dir(&real) {
            Ok(r) => r,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(HostError::io("list", path.as_ref(), e)),
        };
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| HostError::io("list", path.as_ref(), e))?;
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
        names.sort();
        Ok(names)
    }

    /// Runs `cmd` and returns how it ended, whatever the exit code.
    pub fn run(&self, cmd: &Cmd) -> Result<Output, HostError> {
        log::debug!("running {}", cmd.display());
        self.runner.run(cmd).map_err(|source| HostError::Spawn {
            command: cmd.display(),
            source,
        })
    }

    /// Runs `cmd`; a non-zero exit is an error carrying the end of its output.
    pub fn run_ok(&self, cmd: &Cmd) -> Result<Output, HostError> {
        let out = self.run(cmd)?;
        if out.success() {
            Ok(out)
        } else {
            Err(HostError::Command {
                command: cmd.display(),
                status: out.status_text(),
                stderr: out.diagnostics().to_string(),
            })
        }
    }

    /// Where `program` would be found on the host, `None` when it is absent.
    pub fn which(&self, program: &str) -> Option<PathBuf> {
        self.runner.find(&self.root, program)
    }

    /// systemd on this host.
    pub fn systemd(&self) -> Systemd<'_> {
        Systemd::new(self)
    }

    /// The host's total memory in bytes: sysinfo on a real root; `MemTotal` of the
    /// root's `/proc/meminfo` on a scratch root (tests put a fake one there).
    pub fn total_memory(&self) -> Result<u64, HostError> {
        if self.root == Path::new("/") {
            if let Ok(mut sys) = sysinfo::System::new() {
                sys.refresh_memory();
                let total = sys.total_memory();
                if total > 0 {
                    return Ok(total);
                }
            }
        }
        let text = self.read_to_string("/proc/meminfo")?.unwrap_or_default();
        parse_meminfo_total(&text).ok_or_else(|| {
            HostError::io(
                "read the total memory from",
                "/proc/meminfo",
                io::Error::new(io::ErrorKind::InvalidData, "no MemTotal line"),
            )
        })
    }
}

/// `MemTotal` from /proc/meminfo text, in bytes.
pub fn parse_meminfo_total(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let mut words = line["MemTotal:".len()..].split_whitespace();
    let n: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") | None => n.checked_mul(1024),
        Some(_) => None,
    }
}

fn temp_sibling(path: &Path) -> PathBuf {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    path.with_file_name(format!(".{name}.skyhook-tmp.{}", std::process::id()))
}

/// Writes `content` to `path` through a temporary sibling, fsyncs it, sets `mode`,
/// renames it over `path` and fsyncs the directory: readers see the old file or
/// the new one, never a partial one.
pub fn write_atomic(path: &Path, content: &[u8], mode: u32) -> io::Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| io::Error::other("path has no parent directory"))?;
    if !dir.exists() {
        fs::DirBuilder::new().recursive(true).mode(0o755).create(dir)?;
    }
    let tmp = temp_sibling(path);
    let result = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(mode)
            .open(&tmp)?;
        file.write_all(content)?;
        file.set_permissions(fs::Permissions::from_mode(mode))?;
        file.sync_all()?;
        fs::rename(&tmp, path)?;
        fs::File::open(dir)?.sync_all()
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::RecordingRunner;

    fn scratch() -> (tempfile::TempDir, Host) {
        let d = tempfile::tempdir().unwrap();
        let h = Host::new(d.path(), RecordingRunner::succeeding());
        (d, h)
    }

    #[test]
    fn paths_resolve_under_the_root_and_never_escape_it() {
        let (d, h) = scratch();
        assert_eq!(
            h.path("/etc/sysctl.d/x.conf").unwrap(),
            d.path().join("etc/sysctl.d/x.conf")
        );
        for bad in ["etc/x", "/etc/../../x", "/.."] {
            assert!(matches!(h.path(bad), Err(HostError::BadPath(_))), "{bad}");
        }
    }

    #[test]
    fn resolves_links_under_the_root() {
        let (_d, h) = scratch();
        h.write("/etc/authselect/system-auth", b"x", 0o644).unwrap();
        h.symlink("/etc/authselect/system-auth", "/etc/pam.d/system-auth")
            .unwrap();
        h.symlink("../sysctl.conf", "/etc/sysctl.d/99-sysctl.conf").unwrap();
        h.symlink("loop", "/etc/loop").unwrap();
        assert_eq!(
            h.resolve_links("/etc/pam.d/system-auth").unwrap(),
            PathBuf::from("/etc/authselect/system-auth")
        );
        assert_eq!(
            h.resolve_links("/etc/sysctl.d/99-sysctl.conf").unwrap(),
            PathBuf::from("/etc/sysctl.conf")
        );
        assert_eq!(h.resolve_links("/etc/plain").unwrap(), PathBuf::from("/etc/plain"));
        assert!(h.resolve_links("/etc/loop").is_err());
    }

    #[test]
    fn write_creates_parents_sets_mode_and_skips_identical_content() {
        let (_d, h) = scratch();
        assert!(h.write("/etc/a/b/c.conf", b"x=1\n", 0o640).unwrap());
        assert_eq!(h.read("/etc/a/b/c.conf").unwrap().unwrap(), b"x=1\n");
        assert_eq!(h.mode("/etc/a/b/c.conf").unwrap(), Some(0o640));
        assert!(
            !h.write("/etc/a/b/c.conf", b"x=1\n", 0o640).unwrap(),
            "unchanged: no write"
        );
        assert!(
            h.write("/etc/a/b/c.conf", b"x=1\n", 0o644).unwrap(),
            "mode differs: write"
        );
        assert_eq!(h.mode("/etc/a/b/c.conf").unwrap(), Some(0o644));
        assert_eq!(h.list_dir("/etc/a/b").unwrap(), ["c.conf"], "no temporary file left");
    }

    #[test]
    fn is_dir_tells_directories_from_files_and_missing_paths() {
        let (_d, h) = scratch();
        h.write("/etc/tuned/active_profile", b"balanced\n", 0o644).unwrap();
        assert!(h.is_dir("/etc/tuned"));
        assert!(!h.is_dir("/etc/tuned/active_profile"));
        assert!(!h.is_dir("/etc/missing"));
        assert!(!h.is_dir("relative"), "a bad path is not a directory");
    }

    #[test]
    fn atomic_write_leaves_the_old_or_the_new_file_never_a_partial_one() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("f");
        let old = vec![b'o'; 1 << 20];
        let new = vec![b'n'; 1 << 20];
        write_atomic(&path, &old, 0o644).unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let reader = {
            let (path, stop) = (path.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut seen = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let c = fs::read(&path).unwrap();
                    assert!(
                        c == vec![b'o'; 1 << 20] || c == vec![b'n'; 1 << 20],
                        "partial file seen"
                    );
                    seen += 1;
                }
                seen
            })
        };
        for i in 0..50 {
            write_atomic(&path, if i % 2 == 0 { &new } else { &old }, 0o600).unwrap();
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        assert!(reader.join().unwrap() > 0);
        assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    }

    #[test]
    fn failed_write_keeps_the_old_file() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("dir-in-the-way");
        fs::create_dir(&path).unwrap();
        fs::write(path.join("keep"), "k").unwrap();
        assert!(write_atomic(&path, b"new", 0o644).is_err());
        assert_eq!(fs::read(path.join("keep")).unwrap(), b"k");
        assert_eq!(fs::read_dir(d.path()).unwrap().count(), 1, "temporary file cleaned up");
    }

    #[test]
    fn remove_and_symlink_are_idempotent() {
        let (_d, h) = scratch();
        h.write("/etc/x", b"1", 0o644).unwrap();
        assert!(h.remove("/etc/x").unwrap());
        assert!(!h.remove("/etc/x").unwrap());
        assert!(h.symlink("b", "/etc/tuned/scripts/a").unwrap());
        assert!(!h.symlink("b", "/etc/tuned/scripts/a").unwrap());
        assert_eq!(h.read_link("/etc/tuned/scripts/a").unwrap(), Some(PathBuf::from("b")));
        assert!(h.exists("/etc/tuned/scripts/a"), "dangling link still exists");
        assert!(h.symlink("c", "/etc/tuned/scripts/a").unwrap());
        assert!(!h.remove_empty_dir("/etc/tuned/scripts").unwrap());
        h.remove("/etc/tuned/scripts/a").unwrap();
        assert!(h.remove_empty_dir("/etc/tuned/scripts").unwrap());
        assert!(!h.remove_empty_dir("/etc/tuned/scripts").unwrap());
    }

    #[test]
    fn total_memory_of_a_scratch_root_comes_from_its_meminfo() {
        let (_d, h) = scratch();
        assert!(h.total_memory().is_err());
        h.write("/proc/meminfo", b"MemTotal:       16384000 kB\nMemFree: 1 kB\n", 0o444)
            .unwrap();
        assert_eq!(h.total_memory().unwrap(), 16_384_000 * 1024);
        assert_eq!(parse_meminfo_total("MemTotal: 12 MB"), None);
    }

    #[test]
    fn a_scratch_root_never_runs_the_machines_own_commands() {
        let d = tempfile::tempdir().unwrap();
        let h = Host::from_vars(Some(d.path().into()), None);
        let e = h.run(&Cmd::new("true")).unwrap_err().to_string();
        assert!(e.contains("SKYHOOK_HOST_COMMANDS"), "{e}");
        assert_eq!(h.which("sh"), None);
        let h = Host::from_vars(Some(d.path().into()), Some(d.path().into()));
        assert!(h.run(&Cmd::new("true")).is_err(), "no stand-in for true");
        assert!(d.path().join("calls.log").exists());
        let h = Host::from_vars(None, None);
        assert_eq!(h.root(), Path::new("/"));
        assert!(h.run(&Cmd::new("true")).unwrap().success());
    }
}

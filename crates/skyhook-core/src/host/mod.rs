// SPDX-License-Identifier: Apache-2.0
//! The machine being changed. Every path a package touches is resolved under the
//! host root (`/` on a node, a scratch directory in tests and offline use), every
//! write is atomic, and every external command goes through the host's
//! [`Runner`](crate::host::command::Runner).
//!
//! File operations never follow a symbolic link below the root and never leave a
//! temporary file (see [`crate::host::nofollow`]).
//!
//! Environment, read only by builds with the `test-hooks` feature (the test kit
//! enables it; `skyhook-pkg dist` binaries are built without it and ignore both):
//! - `SKYHOOK_HOST_ROOT`: the host root, default `/`.
//! - `SKYHOOK_HOST_COMMANDS`: a directory of stand-in programs (see
//!   [`StandInRunner`]). Without it, a host root other than `/` runs no commands.

pub mod bounded;
pub mod command;
mod journal;
pub mod nofollow;
pub mod process;
pub mod selinux;
pub mod systemd;

use std::ffi::OsStr;
use std::fs;
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

use crate::error::{HostError, Result};
use crate::host::command::{Cmd, Output, RefusingRunner, Runner, StandInRunner, SystemRunner};
use crate::host::nofollow::{Dir, Missing};

/// The host: a root directory and a command runner. A clone is the same host (it
/// shares the runner), for a package that hands a step to another package's engine.
#[derive(Clone)]
pub struct Host {
    root: PathBuf,
    runner: std::sync::Arc<dyn Runner>,
    journal: std::sync::Arc<journal::Journal>,
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
            runner: std::sync::Arc::new(runner),
            journal: Default::default(),
        }
    }

    /// The host the step runs on: `/` with real commands. Only builds with the
    /// `test-hooks` feature (test builds, through skyhook-testkit) read
    /// `SKYHOOK_HOST_ROOT` and `SKYHOOK_HOST_COMMANDS`; a release binary never does.
    pub fn from_env() -> Self {
        #[cfg(feature = "test-hooks")]
        return Self::from_vars(std::env::var_os(HOST_ROOT_VAR), std::env::var_os(HOST_COMMANDS_VAR));
        #[cfg(not(feature = "test-hooks"))]
        Host::new("/", SystemRunner)
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

    /// The contents of the regular file `path` (read through the distribution's
    /// links), or `None` when it does not exist. A FIFO, device, socket or directory,
    /// or a file over [`bounded::MAX_FILE_BYTES`], is an error naming it, never a
    /// hang or a memory blow-up (see [`bounded`]).
    pub fn read(&self, path: impl AsRef<Path>) -> Result<Option<Vec<u8>>, HostError> {
        let real = self.path(&path)?;
        bounded::read_regular(&real, bounded::MAX_FILE_BYTES, bounded::Links::Follow)
            .map_err(|e| HostError::io("read", path.as_ref(), e))
    }

    /// The last `bytes` bytes of the regular file `path` (a log), `None` when missing.
    pub fn read_tail(&self, path: impl AsRef<Path>, bytes: u64) -> Result<Option<Vec<u8>>, HostError> {
        let real = self.path(&path)?;
        bounded::read_tail(&real, bytes, bounded::Links::Follow).map_err(|e| HostError::io("read", path.as_ref(), e))
    }

    /// The contents of `path` as text, or `None` when missing. A file that is not
    /// UTF-8 is an error naming it and the offset of the first bad byte: no byte is
    /// ever replaced (callers that edit foreign files byte for byte use [`Host::read`]).
    pub fn read_to_string(&self, path: impl AsRef<Path>) -> Result<Option<String>, HostError> {
        let path = path.as_ref();
        self.read(path)?
            .map(|b| {
                String::from_utf8(b).map_err(|e| HostError::NotText {
                    path: path.to_path_buf(),
                    offset: e.utf8_error().valid_up_to(),
                })
            })
            .transpose()
    }

    /// The contents and permission bits of the regular file `path`, read without
    /// following a symbolic link on the way (a link is refused with
    /// [`HostError::Symlink`]); `None` when missing. For files whose content a
    /// package keeps (saved originals).
    pub fn read_no_follow(
        &self,
        path: impl AsRef<Path>,
        op: &'static str,
    ) -> Result<Option<(Vec<u8>, u32)>, HostError> {
        let path = path.as_ref();
        let (dir, name) = split(path)?;
        match Dir::open(&self.root, dir, Missing::Absent, op, path)? {
            Some(dir) => dir.read(name, op, path),
            None => Ok(None),
        }
    }

    /// The directory holding `path` and the file name, opened without following links.
    fn parent<'p>(
        &self,
        path: &'p Path,
        missing: Missing,
        op: &'static str,
    ) -> Result<Option<(Dir, &'p OsStr)>, HostError> {
        self.path(path)?;
        let (dir, name) = split(path)?;
        let created: Vec<&Path> = match missing {
            Missing::Create if self.journal.is_open() => {
                let mut absent: Vec<&Path> = dir.ancestors().take_while(|a| !self.exists(a)).collect();
                absent.reverse();
                absent
            }
            _ => Vec::new(),
        };
        let opened = Dir::open(&self.root, dir, missing, op, path)?;
        for d in created {
            self.journal.push(journal::Undo::DirCreated(d.to_path_buf()));
        }
        Ok(opened.map(|d| (d, name)))
    }

    /// Records what `path` is before a change, when a journal is open.
    fn journal_before(&self, path: &Path) -> Result<(), HostError> {
        if self.journal.is_open()
            && let Some(before) = self.before(path)?
        {
            self.journal.push(journal::Undo::Path(path.to_path_buf(), before));
        }
        Ok(())
    }

    /// Makes `path` a directory with permission bits `mode` (its parents 0755),
    /// refusing links on the way; nothing when it exists.
    pub fn create_dir(&self, path: impl AsRef<Path>, mode: u32) -> Result<(), HostError> {
        let path = path.as_ref();
        let existed = self.is_dir(path);
        let (dir, name) = self
            .parent(path, Missing::Create, "create directory")?
            .expect("created");
        if !existed {
            match nix::sys::stat::mkdirat(dir.fd(), name, nix::sys::stat::Mode::from_bits_truncate(mode)) {
                Ok(()) => self.journal.push(journal::Undo::DirCreated(path.to_path_buf())),
                Err(nix::errno::Errno::EEXIST) => {}
                Err(e) => return Err(HostError::io("create directory", path, e.into())),
            }
        }
        Ok(())
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

    /// Makes `path` hold `content` with permission bits `mode`, atomically (exclusive
    /// temporary in the same directory, fsync, rename), creating parent directories
    /// (0755). Refuses a path that is, or lies under, a symbolic link (see
    /// [`crate::host::nofollow`]); removes stale temporaries of `path` first. A replaced
    /// file's SELinux label goes to its successor; a created one gets the policy's
    /// label where SELinux is enabled ([`selinux`]). Does nothing when the file already
    /// matches; returns whether it wrote.
    pub fn write(&self, path: impl AsRef<Path>, content: &[u8], mode: u32) -> Result<bool, HostError> {
        let path = path.as_ref();
        let (dir, name) = self.parent(path, Missing::Create, "write")?.expect("created");
        dir.sweep_temporaries(name)?;
        let existing = dir.read(name, "write", path)?;
        if existing.as_ref().is_some_and(|(c, m)| c == content && *m == mode) {
            return Ok(false);
        }
        self.journal_before(path)?;
        dir.write_file(name, content, mode)
            .map_err(|e| HostError::io("write", path, e))?;
        log::debug!("wrote {}", path.display());
        if existing.is_none() {
            selinux::label_created(self, path);
        }
        Ok(true)
    }

    /// Removes the file or symlink `path` if present (a link itself, never what it
    /// points to) and any stale temporaries of it; returns whether it was there.
    /// Refuses a path under a symbolic link.
    pub fn remove(&self, path: impl AsRef<Path>) -> Result<bool, HostError> {
        let path = path.as_ref();
        let Some((dir, name)) = self.parent(path, Missing::Absent, "remove")? else {
            return Ok(false);
        };
        dir.sweep_temporaries(name)?;
        self.journal_before(path)?;
        let removed = dir.unlink(name).map_err(|e| HostError::io("remove", path, e))?;
        if removed {
            log::debug!("removed {}", path.display());
        }
        Ok(removed)
    }

    /// Removes the directory `path` and everything in it, if it exists (links removed,
    /// never followed); returns whether it was there. Only for a package's own
    /// scratch tree (an unpacked installer) strictly inside `within`, its state
    /// directory: nothing of it is journaled for a rollback, and a path not inside
    /// `within`, or under a symbolic link, is refused.
    pub fn remove_scratch_tree(&self, within: &Path, path: impl AsRef<Path>) -> Result<bool, HostError> {
        let path = path.as_ref();
        let parent_dir = path.components().any(|c| c == Component::ParentDir);
        if !path.starts_with(within) || path == within || !within.is_absolute() || parent_dir {
            return Err(HostError::io(
                "remove scratch tree",
                path,
                io::Error::other(format!("not a scratch tree inside {}", within.display())),
            ));
        }
        let Some((dir, name)) = self.parent(path, Missing::Absent, "remove directory")? else {
            return Ok(false);
        };
        dir.refuse_link(name, "remove directory", path)?;
        let full = self.path(path)?;
        match fs::remove_dir_all(&full) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(HostError::io("remove directory", path, e)),
        }
    }

    /// Gives the directory or file `from` its final name `to`, a name beside it (a
    /// tree built under a scratch name, finished): never replaces what is at `to`,
    /// and refuses a path under a symbolic link. Not journaled: only for a package's
    /// own scratch trees.
    pub fn rename_sibling(&self, from: impl AsRef<Path>, to: impl AsRef<Path>) -> Result<(), HostError> {
        let (from, to) = (from.as_ref(), to.as_ref());
        let (Some(to_name), true) = (to.file_name(), from.parent() == to.parent()) else {
            return Err(HostError::io(
                "rename",
                from,
                io::Error::other(format!("{} is not a name beside it", to.display())),
            ));
        };
        let Some((dir, name)) = self.parent(from, Missing::Absent, "rename")? else {
            return Err(HostError::io("rename", from, io::Error::from(io::ErrorKind::NotFound)));
        };
        dir.refuse_link(name, "rename", from)?;
        dir.rename_no_replace(name, to_name)
            .map_err(|e| HostError::io("rename", from, e))
    }

    /// Removes the directory `path` if it exists and is empty; returns whether it did.
    /// Refuses a path under a symbolic link.
    pub fn remove_empty_dir(&self, path: impl AsRef<Path>) -> Result<bool, HostError> {
        let path = path.as_ref();
        let Some((dir, name)) = self.parent(path, Missing::Absent, "remove directory")? else {
            return Ok(false);
        };
        dir.refuse_link(name, "remove directory", path)?;
        let mode = self.mode(path)?;
        let removed = dir
            .remove_empty_dir(name)
            .map_err(|e| HostError::io("remove directory", path, e))?;
        if let (true, Some(mode)) = (removed, mode) {
            self.journal.push(journal::Undo::DirRemoved(path.to_path_buf(), mode));
        }
        Ok(removed)
    }

    /// Makes `link` a symbolic link to `target` (replacing a file or a different
    /// link atomically, through an exclusive temporary); returns whether it changed
    /// anything. Refuses a `link` under a symbolic link.
    pub fn symlink(&self, target: impl AsRef<Path>, link: impl AsRef<Path>) -> Result<bool, HostError> {
        let (target, link) = (target.as_ref(), link.as_ref());
        let (dir, name) = self.parent(link, Missing::Create, "create symlink")?.expect("created");
        dir.sweep_temporaries(name)?;
        if dir.read_link(name)?.is_some_and(|t| t == target.as_os_str()) {
            return Ok(false);
        }
        self.journal_before(link)?;
        dir.write_link(name, target)
            .map_err(|e| HostError::io("create symlink", link, e))?;
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

    /// The host's total memory in bytes: `MemTotal` of the root's `/proc/meminfo`
    /// (the kernel's on a node, a fake one on a scratch root).
    pub fn total_memory(&self) -> Result<u64, HostError> {
        let Some(text) = self.read_to_string("/proc/meminfo")? else {
            return Err(HostError::io(
                "read the total memory from",
                "/proc/meminfo",
                io::Error::new(io::ErrorKind::NotFound, "the file is missing (is /proc mounted?)"),
            ));
        };
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

/// The parent directory and file name of the host path `path`.
fn split(path: &Path) -> Result<(&Path, &OsStr), HostError> {
    match (path.parent(), path.file_name()) {
        (Some(dir), Some(name)) => Ok((dir, name)),
        _ => Err(HostError::BadPath(path.to_path_buf())),
    }
}

/// Writes `content` to `path` (a path on this machine, not under a host root; its
/// directory is trusted and created when missing) the way [`Host::write`] does:
/// stale temporaries swept, exclusive temporary, fsync, rename, fsync of the
/// directory. Readers see the old file or the new one, never a partial one; a
/// symbolic link at `path` is replaced, never followed.
pub fn write_atomic(path: &Path, content: &[u8], mode: u32) -> io::Result<()> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(io::Error::other("path has no parent directory"));
    };
    let dir = Dir::open_trusted(dir)?;
    dir.sweep_temporaries(name).map_err(io::Error::other)?;
    dir.write_file(name, content, mode)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::host::command::RecordingRunner;

    #[test]
    fn a_scratch_tree_goes_whole_without_following_links_and_only_inside_its_base() {
        let d = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("keep"), "x").unwrap();
        let h = Host::new(d.path(), RecordingRunner::succeeding());
        let base = Path::new("/var/lib/skyhook-packages/p/n");
        h.write("/var/lib/skyhook-packages/p/n/efa/a/b/file", b"1", 0o600)
            .unwrap();
        std::os::unix::fs::symlink(
            outside.path(),
            h.path("/var/lib/skyhook-packages/p/n/efa/a/link").unwrap(),
        )
        .unwrap();
        assert!(
            h.remove_scratch_tree(base, "/var/lib/skyhook-packages/p/n/efa")
                .unwrap()
        );
        assert!(!h.exists("/var/lib/skyhook-packages/p/n/efa"));
        assert!(
            outside.path().join("keep").exists(),
            "a link inside is removed, not followed"
        );
        assert!(
            !h.remove_scratch_tree(base, "/var/lib/skyhook-packages/p/n/efa")
                .unwrap()
        );
        for bad in [
            "/etc",
            "/var/lib/skyhook-packages/p/n",
            "/var/lib/skyhook-packages/p/n/../../etc",
        ] {
            assert!(h.remove_scratch_tree(base, bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_finished_scratch_tree_takes_its_name_beside_it_and_never_replaces_one() {
        let (d, h) = scratch();
        h.write("/mnt/a/kubelet.partial/config", b"1", 0o600).unwrap();
        h.rename_sibling("/mnt/a/kubelet.partial", "/mnt/a/kubelet").unwrap();
        assert_eq!(h.read("/mnt/a/kubelet/config").unwrap().as_deref(), Some(&b"1"[..]));
        assert!(!h.exists("/mnt/a/kubelet.partial"));
        h.write("/mnt/a/kubelet.partial/config", b"2", 0o600).unwrap();
        assert!(
            h.rename_sibling("/mnt/a/kubelet.partial", "/mnt/a/kubelet").is_err(),
            "no replace"
        );
        assert_eq!(h.read("/mnt/a/kubelet/config").unwrap().as_deref(), Some(&b"1"[..]));
        assert!(
            h.rename_sibling("/mnt/a/kubelet.partial", "/mnt/b/kubelet").is_err(),
            "beside it only"
        );
        assert!(h.rename_sibling("/mnt/a/missing", "/mnt/a/other").is_err());
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir(outside.path().join("x")).unwrap();
        std::os::unix::fs::symlink(outside.path(), d.path().join("mnt/link")).unwrap();
        assert!(
            h.rename_sibling("/mnt/link/x", "/mnt/link/y").is_err(),
            "not under a link"
        );
        assert!(outside.path().join("x").exists());
    }

    /// One path of a [`tree`]: where, mode, content (files), target (links).
    pub(crate) type TreeEntry = (PathBuf, u32, Option<Vec<u8>>, Option<PathBuf>);

    /// Every path under `root` with its kind, mode and content (for "as before" tests).
    pub(crate) fn tree(root: &Path) -> Vec<TreeEntry> {
        let mut out = Vec::new();
        let mut stack = vec![root.to_path_buf()];
        while let Some(dir) = stack.pop() {
            for e in fs::read_dir(&dir).unwrap().flatten() {
                let p = e.path();
                let m = p.symlink_metadata().unwrap();
                let link = fs::read_link(&p).ok();
                let content = m.is_file().then(|| fs::read(&p).unwrap());
                if m.is_dir() {
                    stack.push(p.clone());
                }
                out.push((
                    p.strip_prefix(root).unwrap().to_path_buf(),
                    m.permissions().mode(),
                    content,
                    link,
                ));
            }
        }
        out.sort();
        out
    }

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
    fn writes_and_removes_sweep_stale_temporaries_and_never_follow_a_planted_link() {
        let (d, h) = scratch();
        h.write("/etc/cron.d/job", b"keep\n", 0o644).unwrap();
        h.write("/etc/sysctl.d/x.conf", b"a=1\n", 0o644).unwrap();
        let dir = d.path().join("etc/sysctl.d");
        fs::write(dir.join(".x.conf.skyhook-tmp.4242"), "stale").unwrap();
        std::os::unix::fs::symlink(d.path().join("etc/cron.d/job"), dir.join(".x.conf.skyhook-tmp.4243.0")).unwrap();
        fs::write(dir.join(".other.conf.skyhook-tmp.1"), "not ours to sweep").unwrap();
        assert!(h.write("/etc/sysctl.d/x.conf", b"a=2\n", 0o644).unwrap());
        assert_eq!(
            h.list_dir("/etc/sysctl.d").unwrap(),
            [".other.conf.skyhook-tmp.1", "x.conf"],
            "only the temporaries of x.conf are swept"
        );
        assert_eq!(
            h.read("/etc/cron.d/job").unwrap().unwrap(),
            b"keep\n",
            "link target untouched"
        );
        assert_eq!(h.mode("/etc/cron.d/job").unwrap(), Some(0o644));
        fs::write(dir.join(".x.conf.skyhook-tmp.4244"), "stale").unwrap();
        assert!(h.remove("/etc/sysctl.d/x.conf").unwrap());
        fs::write(dir.join(".x.conf.skyhook-tmp.4245"), "stale").unwrap();
        assert!(!h.remove("/etc/sysctl.d/x.conf").unwrap(), "already gone, still swept");
        assert_eq!(h.list_dir("/etc/sysctl.d").unwrap(), [".other.conf.skyhook-tmp.1"]);
        fs::write(d.path().join("etc/.l.skyhook-tmp.1"), "stale").unwrap();
        assert!(h.symlink("x", "/etc/l").unwrap());
        assert!(!h.exists("/etc/.l.skyhook-tmp.1"), "symlink() sweeps too");
    }

    #[test]
    fn refuses_to_write_or_remove_through_a_symbolic_link_it_did_not_make() {
        let (d, h) = scratch();
        h.write("/etc/cron.d/job", b"keep\n", 0o644).unwrap();
        std::os::unix::fs::symlink("/etc/cron.d", d.path().join("etc/containerd.service.d")).unwrap();
        std::os::unix::fs::symlink("/etc/cron.d/job", d.path().join("etc/x.conf")).unwrap();
        type Attempt<'a> = Box<dyn Fn() -> Result<bool, HostError> + 'a>;
        let cases: [(&str, &str, Attempt); 5] = [
            (
                "/etc/containerd.service.d/job",
                "/etc/containerd.service.d",
                Box::new(|| h.write("/etc/containerd.service.d/job", b"evil", 0o755)),
            ),
            (
                "/etc/containerd.service.d/new/f",
                "/etc/containerd.service.d",
                Box::new(|| h.write("/etc/containerd.service.d/new/f", b"evil", 0o644)),
            ),
            (
                "/etc/x.conf",
                "/etc/x.conf",
                Box::new(|| h.write("/etc/x.conf", b"evil", 0o755)),
            ),
            (
                "/etc/containerd.service.d/job",
                "/etc/containerd.service.d",
                Box::new(|| h.remove("/etc/containerd.service.d/job")),
            ),
            (
                "/etc/containerd.service.d/l",
                "/etc/containerd.service.d",
                Box::new(|| h.symlink("/x", "/etc/containerd.service.d/l")),
            ),
        ];
        for (path, link, attempt) in cases {
            let e = attempt().unwrap_err();
            assert!(matches!(e, HostError::Symlink { .. }), "{path}: {e}");
            let msg = e.to_string();
            assert!(
                msg.contains(path) && msg.contains(&format!("{link} is a symbolic link to \"/etc/cron.d")),
                "{msg}"
            );
            assert_eq!(crate::Error::from(e).exit_code(), 1);
        }
        assert_eq!(
            h.list_dir("/etc/cron.d").unwrap(),
            ["job"],
            "nothing created through the link"
        );
        assert_eq!(h.read("/etc/cron.d/job").unwrap().unwrap(), b"keep\n");
        assert_eq!(h.mode("/etc/cron.d/job").unwrap(), Some(0o644));
        assert!(h.remove("/etc/x.conf").unwrap(), "a link itself may be removed");
        assert!(h.exists("/etc/cron.d/job"), "its target stays");
    }

    #[test]
    fn read_to_string_never_replaces_bytes() {
        let (_d, h) = scratch();
        h.write("/etc/default/grub", b"GRUB_CMDLINE_LINUX=\"\"\n# caf\xe9\n", 0o644)
            .unwrap();
        let e = h.read_to_string("/etc/default/grub").unwrap_err().to_string();
        assert!(e.contains("/etc/default/grub") && e.contains("byte offset 27"), "{e}");
        assert_eq!(h.read_to_string("/etc/missing").unwrap(), None);
    }

    #[test]
    fn total_memory_of_a_scratch_root_comes_from_its_meminfo() {
        let (_d, h) = scratch();
        let e = h.total_memory().unwrap_err().to_string();
        assert!(e.contains("/proc/meminfo") && e.contains("missing"), "{e}");
        h.write("/proc/meminfo", b"MemFree: 1 kB\n", 0o444).unwrap();
        assert!(h.total_memory().unwrap_err().to_string().contains("no MemTotal line"));
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

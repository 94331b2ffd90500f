// SPDX-License-Identifier: Apache-2.0
//! File operations under a root directory that never follow a symbolic link below
//! it, and never leave a temporary file behind.
//!
//! A host path is reached by walking from the root one component at a time with
//! `openat(O_NOFOLLOW | O_DIRECTORY)`: a directory on the way that is a symbolic
//! link is refused, whatever it points to, and so is a file we would overwrite that
//! is one. Only the root itself may be reached through links (a scratch root under
//! a linked `/tmp`). The rule holds for the top-level links of merged-`/usr` hosts
//! too (`/lib -> usr/lib`): no package writes there; a path under them is named
//! through `/usr`.
//!
//! Temporaries are created exclusively (`O_CREAT | O_EXCL | O_NOFOLLOW`) in the
//! target's own directory, under a name no one can predict:
//! `.NAME.skyhook-tmp.PID.RANDOM`. Every write and every remove of `NAME` first
//! removes the temporaries of `NAME` that a killed earlier run left (a symbolic
//! link at such a name is unlinked, never followed).

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag};
use nix::sys::stat::{FileStat, Mode, SFlag};
use nix::unistd::UnlinkatFlags;

use crate::error::HostError;

/// The infix that marks our temporaries: `.NAME.skyhook-tmp.PID.RANDOM`.
pub const TEMP_INFIX: &str = ".skyhook-tmp.";

/// A directory opened without following symbolic links, with the host path it has.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
    path: PathBuf,
}

/// Whether [`Dir::open`] creates missing directories (mode 0755) on the way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missing {
    /// Create them.
    Create,
    /// Report the directory as absent.
    Absent,
}

const DIR_FLAGS: OFlag = OFlag::O_RDONLY
    .union(OFlag::O_DIRECTORY)
    .union(OFlag::O_NOFOLLOW)
    .union(OFlag::O_CLOEXEC);

impl Dir {
    /// Opens the host directory `dir` (absolute, without `..`) under `root`, for
    /// `op` on `target` (named in errors). `None` when it is missing and `missing`
    /// is [`Missing::Absent`].
    pub fn open(
        root: &Path,
        dir: &Path,
        missing: Missing,
        op: &'static str,
        target: &Path,
    ) -> Result<Option<Dir>, HostError> {
        let fd = nix::fcntl::open(
            root,
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| HostError::io(op, target, e.into()))?;
        let mut current = Dir {
            fd,
            path: PathBuf::from("/"),
        };
        for component in dir.components() {
            match component {
                Component::RootDir | Component::CurDir => continue,
                Component::Normal(name) => match current.child(name, missing, op, target)? {
                    Some(next) => current = next,
                    None => return Ok(None),
                },
                _ => return Err(HostError::BadPath(dir.to_path_buf())),
            }
        }
        Ok(Some(current))
    }

    /// Opens a directory trusted as it is (links followed), e.g. a state directory
    /// the caller resolved itself, creating it when missing.
    pub fn open_trusted(path: &Path) -> io::Result<Dir> {
        if !path.exists() {
            std::fs::DirBuilder::new().recursive(true).create(path)?;
        }
        let fd = nix::fcntl::open(
            path,
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Dir {
            fd,
            path: path.to_path_buf(),
        })
    }

    fn child(&self, name: &OsStr, missing: Missing, op: &'static str, target: &Path) -> Result<Option<Dir>, HostError> {
        let path = self.path.join(name);
        let mut created = false;
        loop {
            match nix::fcntl::openat(self.fd.as_fd(), name, DIR_FLAGS, Mode::empty()) {
                Ok(fd) => return Ok(Some(Dir { fd, path })),
                Err(Errno::ENOENT) if missing == Missing::Absent => return Ok(None),
                Err(Errno::ENOENT) if !created => {
                    match nix::sys::stat::mkdirat(self.fd.as_fd(), name, Mode::from_bits_truncate(0o755)) {
                        Ok(()) | Err(Errno::EEXIST) => created = true,
                        Err(e) => return Err(HostError::io("create directory", path, e.into())),
                    }
                }
                Err(Errno::ELOOP | Errno::ENOTDIR) => {
                    self.refuse_link(name, op, target)?;
                    return Err(HostError::io(
                        op,
                        target,
                        io::Error::other(format!("{} is not a directory", path.display())),
                    ));
                }
                Err(e) => return Err(HostError::io(op, target, e.into())),
            }
        }
    }

    /// The host path of this directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The open directory, for `*at` calls.
    pub fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Opens the file `name` for reading and writing, creating it (mode 0600) when
    /// missing; a link at `name` is refused (`ELOOP`). For a lock file we own.
    pub fn open_private(&self, name: &OsStr) -> io::Result<File> {
        let flags = OFlag::O_RDWR | OFlag::O_CREAT | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let fd = nix::fcntl::openat(self.fd.as_fd(), name, flags, Mode::from_bits_truncate(0o600))?;
        Ok(File::from(fd))
    }

    /// The status of `name` itself (a link is not followed); `None` when missing.
    pub fn lstat(&self, name: &OsStr) -> Result<Option<FileStat>, HostError> {
        match nix::sys::stat::fstatat(self.fd.as_fd(), name, AtFlags::AT_SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some(st)),
            Err(Errno::ENOENT) => Ok(None),
            Err(e) => Err(HostError::io("inspect", self.path.join(name), e.into())),
        }
    }

    /// Fails with [`HostError::Symlink`] when `name` is a symbolic link.
    pub fn refuse_link(&self, name: &OsStr, op: &'static str, target: &Path) -> Result<(), HostError> {
        let Some(st) = self.lstat(name)? else { return Ok(()) };
        if SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT != SFlag::S_IFLNK {
            return Ok(());
        }
        Err(HostError::Symlink {
            op,
            path: target.to_path_buf(),
            link: self.path.join(name),
            points_to: self.read_link(name)?.map(PathBuf::from).unwrap_or_default(),
        })
    }

    /// The target of the symbolic link `name`; `None` when it is missing or not a link.
    pub fn read_link(&self, name: &OsStr) -> Result<Option<OsString>, HostError> {
        match nix::fcntl::readlinkat(self.fd.as_fd(), name) {
            Ok(t) => Ok(Some(t)),
            Err(Errno::ENOENT | Errno::EINVAL) => Ok(None),
            Err(e) => Err(HostError::io("read the link", self.path.join(name), e.into())),
        }
    }

    /// The content and permission bits of the file `name`, opened without following
    /// a link (a link is refused); `None` when missing.
    pub fn read(&self, name: &OsStr, op: &'static str, target: &Path) -> Result<Option<(Vec<u8>, u32)>, HostError> {
        self.refuse_link(name, op, target)?;
        let flags = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | OFlag::O_NONBLOCK;
        let fd = match nix::fcntl::openat(self.fd.as_fd(), name, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::ENOENT) => return Ok(None),
            Err(e) => return Err(HostError::io(op, target, e.into())),
        };
        let st = nix::sys::stat::fstat(fd.as_fd()).map_err(|e| HostError::io(op, target, e.into()))?;
        if SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT != SFlag::S_IFREG {
            return Err(HostError::io(
                op,
                target,
                io::Error::other("it is not a regular file; it was not read"),
            ));
        }
        let limit = crate::host::bounded::MAX_FILE_BYTES;
        let mut content = Vec::new();
        io::Read::read_to_end(&mut io::Read::take(File::from(fd), limit + 1), &mut content)
            .map_err(|e| HostError::io(op, target, e))?;
        if content.len() as u64 > limit {
            let why = format!("it is larger than the limit of {limit} bytes; it was not read");
            return Err(HostError::io(op, target, io::Error::other(why)));
        }
        Ok(Some((content, st.st_mode & 0o7777)))
    }

    /// Removes the temporaries of `name` left by a killed earlier run.
    pub fn sweep_temporaries(&self, name: &OsStr) -> Result<(), HostError> {
        let mut prefix = b".".to_vec();
        prefix.extend_from_slice(name.as_bytes());
        prefix.extend_from_slice(TEMP_INFIX.as_bytes());
        let listing = nix::dir::Dir::openat(
            self.fd.as_fd(),
            ".",
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| HostError::io("list", &self.path, e.into()))?;
        let stale: Vec<OsString> = listing
            .into_iter()
            .filter_map(|entry| entry.ok())
            .map(|entry| OsStr::from_bytes(entry.file_name().to_bytes()).to_os_string())
            .filter(|entry| entry.as_bytes().starts_with(&prefix))
            .collect();
        for temp in stale {
            match nix::unistd::unlinkat(self.fd.as_fd(), temp.as_os_str(), UnlinkatFlags::NoRemoveDir) {
                Ok(()) => log::debug!("removed a stale temporary {}", self.path.join(&temp).display()),
                Err(Errno::ENOENT) => {}
                Err(e) => {
                    return Err(HostError::io(
                        "remove the stale temporary",
                        self.path.join(&temp),
                        e.into(),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Makes `name` hold `content` with permission bits `mode`: an exclusive
    /// temporary, fsync, rename over `name`, fsync of the directory.
    pub fn write_file(&self, name: &OsStr, content: &[u8], mode: u32) -> io::Result<()> {
        let flags = OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let (temp, fd) = self.exclusive(name, |temp| {
            nix::fcntl::openat(self.fd.as_fd(), temp, flags, Mode::from_bits_truncate(mode & 0o777))
        })?;
        let result = (|| {
            let mut file = File::from(fd);
            file.write_all(content)?;
            nix::sys::stat::fchmod(file.as_fd(), Mode::from_bits_truncate(mode))?;
            self.keep_label(name, &file)?;
            file.sync_all()?;
            self.replace(&temp, name)
        })();
        if result.is_err() {
            let _ = nix::unistd::unlinkat(self.fd.as_fd(), temp.as_os_str(), UnlinkatFlags::NoRemoveDir);
        }
        result
    }

    /// Gives `successor` the SELinux label (`security.selinux`) of the regular file
    /// `name` it is about to replace, so a rename keeps a file's type
    /// (`/etc/kdump.conf` stays `kdump_etc_t`, not its directory's `etc_t`). Nothing
    /// when `name` is absent or unlabelled, or the file system keeps no labels.
    fn keep_label(&self, name: &OsStr, successor: &File) -> io::Result<()> {
        let flags = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | OFlag::O_NONBLOCK;
        let replaced = match nix::fcntl::openat(self.fd.as_fd(), name, flags, Mode::empty()) {
            Ok(fd) => File::from(fd),
            Err(Errno::ENOENT | Errno::ELOOP) => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        let Some(label) = xattr::get(&replaced, xattr::SELINUX)? else {
            return Ok(());
        };
        xattr::set(successor, xattr::SELINUX, &label)
    }

    /// Makes `name` a symbolic link to `target`, replacing what was there atomically.
    pub fn write_link(&self, name: &OsStr, target: &Path) -> io::Result<()> {
        let (temp, ()) = self.exclusive(name, |temp| nix::unistd::symlinkat(target, self.fd.as_fd(), temp))?;
        let result = self.replace(&temp, name);
        if result.is_err() {
            let _ = nix::unistd::unlinkat(self.fd.as_fd(), temp.as_os_str(), UnlinkatFlags::NoRemoveDir);
        }
        result
    }

    /// Creates a fresh temporary of `name` with `create`, retrying on a name taken.
    fn exclusive<T>(&self, name: &OsStr, create: impl Fn(&OsStr) -> nix::Result<T>) -> io::Result<(OsString, T)> {
        for _ in 0..16 {
            let temp = temp_name(name);
            match create(&temp) {
                Ok(made) => return Ok((temp, made)),
                Err(Errno::EEXIST) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(io::Error::other("could not create a temporary file with a fresh name"))
    }

    fn replace(&self, temp: &OsStr, name: &OsStr) -> io::Result<()> {
        nix::fcntl::renameat(self.fd.as_fd(), temp, self.fd.as_fd(), name)?;
        nix::unistd::fsync(self.fd.as_fd())?;
        Ok(())
    }

    /// Renames `from` to `to`, two names in this directory, refusing to replace
    /// anything at `to` (`renameat2` with `RENAME_NOREPLACE`), then syncs the directory.
    pub fn rename_no_replace(&self, from: &OsStr, to: &OsStr) -> io::Result<()> {
        nix::fcntl::renameat2(
            self.fd.as_fd(),
            from,
            self.fd.as_fd(),
            to,
            nix::fcntl::RenameFlags::RENAME_NOREPLACE,
        )?;
        nix::unistd::fsync(self.fd.as_fd())?;
        Ok(())
    }

    /// Removes the file or link `name` (a link itself, never its target); returns
    /// whether it was there.
    pub fn unlink(&self, name: &OsStr) -> io::Result<bool> {
        match nix::unistd::unlinkat(self.fd.as_fd(), name, UnlinkatFlags::NoRemoveDir) {
            Ok(()) => Ok(true),
            Err(Errno::ENOENT) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Removes the directory `name` if it is empty; returns whether it did.
    pub fn remove_empty_dir(&self, name: &OsStr) -> io::Result<bool> {
        match nix::unistd::unlinkat(self.fd.as_fd(), name, UnlinkatFlags::RemoveDir) {
            Ok(()) => Ok(true),
            Err(Errno::ENOENT | Errno::ENOTEMPTY | Errno::EEXIST) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }
}

/// Extended attributes of an open file (libc's `fgetxattr`/`fsetxattr`).
mod xattr {
    use std::ffi::CStr;
    use std::fs::File;
    use std::io;
    use std::os::fd::AsRawFd;

    /// The SELinux label.
    pub const SELINUX: &CStr = c"security.selinux";

    /// The value of `attr`, `None` when the file has none or its file system keeps none.
    pub fn get(file: &File, attr: &CStr) -> io::Result<Option<Vec<u8>>> {
        let mut buf = vec![0u8; 256];
        loop {
            // SAFETY: the buffer is valid for its length; the name is NUL-terminated.
            let n =
                unsafe { nix::libc::fgetxattr(file.as_raw_fd(), attr.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
            if n >= 0 {
                buf.truncate(n as usize);
                return Ok(Some(buf));
            }
            let e = io::Error::last_os_error();
            match e.raw_os_error() {
                Some(nix::libc::ENODATA | nix::libc::ENOTSUP) => return Ok(None),
                Some(nix::libc::ERANGE) if buf.len() < 1 << 16 => buf.resize(buf.len() * 4, 0),
                _ => return Err(e),
            }
        }
    }

    /// Sets `attr` to `value`.
    pub fn set(file: &File, attr: &CStr, value: &[u8]) -> io::Result<()> {
        // SAFETY: the value is valid for its length; the name is NUL-terminated.
        let rc =
            unsafe { nix::libc::fsetxattr(file.as_raw_fd(), attr.as_ptr(), value.as_ptr().cast(), value.len(), 0) };
        if rc == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }
}

/// `.NAME.skyhook-tmp.PID.RANDOM`, a name no other process can guess.
fn temp_name(name: &OsStr) -> OsString {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    // RandomState is seeded from the OS's random source.
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    hasher.write_u128(nanos);
    let mut temp = OsString::from(".");
    temp.push(name);
    temp.push(format!("{TEMP_INFIX}{}.{:016x}", std::process::id(), hasher.finish()));
    temp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rewrite_keeps_the_replaced_files_selinux_label() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("kdump.conf");
        std::fs::write(&path, "old\n").unwrap();
        let label = b"system_u:object_r:kdump_etc_t:s0\0";
        let file = File::open(&path).unwrap();
        if let Err(e) = xattr::set(&file, xattr::SELINUX, label) {
            eprintln!("skipped: this file system keeps no security.selinux label here ({e})");
            return;
        }
        let dir = Dir::open_trusted(d.path()).unwrap();
        dir.write_file(OsStr::new("kdump.conf"), b"new\n", 0o644).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new\n");
        let got = xattr::get(&File::open(&path).unwrap(), xattr::SELINUX).unwrap();
        assert_eq!(
            got.as_deref(),
            Some(&label[..]),
            "the successor has the replaced file's label"
        );
        dir.write_file(OsStr::new("fresh.conf"), b"x", 0o644).unwrap();
        assert_eq!(
            xattr::get(&File::open(d.path().join("fresh.conf")).unwrap(), xattr::SELINUX).unwrap(),
            None
        );
    }

    #[test]
    fn temporary_names_are_hidden_unique_and_carry_the_file_name() {
        let a = temp_name(OsStr::new("x.conf"));
        let b = temp_name(OsStr::new("x.conf"));
        assert_ne!(a, b);
        let a = a.to_string_lossy();
        assert!(a.starts_with(".x.conf.skyhook-tmp."), "{a}");
        assert!(a.contains(&format!(".{}.", std::process::id())), "{a}");
    }
}

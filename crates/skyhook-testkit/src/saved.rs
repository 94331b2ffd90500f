// SPDX-License-Identifier: Apache-2.0
//! A saved copy of a [`Node`]'s directories (host root, copy dir, stand-ins), put
//! back before every kill point or corpus case so each starts from the same tree at
//! the same absolute paths. Contents, modes and symlinks are kept; timestamps are not
//! (no test compares them).

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::Node;

/// The directories of one node as they were when saved.
pub(crate) struct Saved {
    _copies: tempfile::TempDir,
    pairs: Vec<(PathBuf, PathBuf)>,
}

impl Saved {
    /// Copies the node's three directories aside.
    pub(crate) fn of(node: &Node) -> Saved {
        let copies = tempfile::tempdir().expect("temporary directory for the saved node");
        let mut pairs = Vec::new();
        // The copies include executables (stand-ins, scripts): written while no
        // process starts, as a stand-in is.
        crate::while_no_process_starts(|| {
            for (i, live) in [node.root(), node.copy_dir(), node.commands_dir()]
                .into_iter()
                .enumerate()
            {
                let copy = copies.path().join(i.to_string());
                copy_tree(live, &copy);
                pairs.push((live.to_path_buf(), copy));
            }
        });
        Saved { _copies: copies, pairs }
    }

    /// Makes the node's directories exactly what they were when saved.
    pub(crate) fn restore(&self) {
        crate::while_no_process_starts(|| {
            for (live, copy) in &self.pairs {
                make_writable(live);
                fs::remove_dir_all(live).expect("remove the node's directory");
                copy_tree(copy, live);
            }
        });
    }
}

/// Copies the tree `src` to `dst` (which must not exist): directories, regular files
/// and symlinks with their modes; FIFOs are recreated, other special files refused.
fn copy_tree(src: &Path, dst: &Path) {
    let meta = src.symlink_metadata().expect("stat a saved path");
    let kind = meta.file_type();
    if kind.is_symlink() {
        std::os::unix::fs::symlink(fs::read_link(src).expect("readlink"), dst).expect("copy a symlink");
        return;
    }
    if kind.is_dir() {
        fs::create_dir(dst).expect("copy a directory");
        for e in fs::read_dir(src).expect("read a saved directory").flatten() {
            copy_tree(&e.path(), &dst.join(e.file_name()));
        }
    } else if kind.is_file() {
        fs::copy(src, dst).expect("copy a file");
    } else {
        use std::os::unix::fs::FileTypeExt;
        assert!(kind.is_fifo(), "cannot save {}: a device or socket", src.display());
        nix::unistd::mkfifo(dst, nix::sys::stat::Mode::from_bits_truncate(0o600))
            .unwrap_or_else(|e| panic!("mkfifo {}: {e}", dst.display()));
    }
    fs::set_permissions(dst, meta.permissions()).expect("copy a mode");
}

/// Gives every directory under `dir` its owner's write bit, so a tree the package
/// left read-only can be removed.
fn make_writable(dir: &Path) {
    let Ok(meta) = dir.symlink_metadata() else { return };
    if !meta.is_dir() {
        return;
    }
    let mut perms = meta.permissions();
    perms.set_mode(perms.mode() | 0o700);
    let _ = fs::set_permissions(dir, perms);
    for e in fs::read_dir(dir).into_iter().flatten().flatten() {
        make_writable(&e.path());
    }
}

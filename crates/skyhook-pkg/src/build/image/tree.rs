// SPDX-License-Identifier: Apache-2.0
//! File trees compared byte for byte: what the init container copied onto the node
//! against the dist tree plus the configMaps, and the architecture of every ELF file
//! an image holds.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::build::elf;
use crate::error::ToolError;

/// One entry of a tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    /// A directory and its permission bits.
    Dir(u32),
    /// A regular file: permission bits and content.
    File(u32, Vec<u8>),
    /// A symbolic link and where it points.
    Link(PathBuf),
    /// Anything else (device, FIFO, socket).
    Other,
}

/// A tree: each entry by its path relative to the root (the root itself left out).
pub type Snapshot = BTreeMap<PathBuf, Entry>;

/// Reads the tree under `root`, links not followed.
pub fn snapshot(root: &Path) -> Result<Snapshot, ToolError> {
    let mut out = Snapshot::new();
    walk(root, Path::new(""), &mut out)?;
    Ok(out)
}

fn walk(root: &Path, rel: &Path, out: &mut Snapshot) -> Result<(), ToolError> {
    let dir = root.join(rel);
    let entries = fs::read_dir(&dir).map_err(|e| ToolError::io("read the directory", &dir, e))?;
    for e in entries {
        let e = e.map_err(|e| ToolError::io("read the directory", &dir, e))?;
        let path = e.path();
        let rel = rel.join(e.file_name());
        let meta = fs::symlink_metadata(&path).map_err(|e| ToolError::io("stat", &path, e))?;
        let mode = meta.permissions().mode() & 0o7777;
        let t = meta.file_type();
        let entry = if t.is_symlink() {
            Entry::Link(fs::read_link(&path).map_err(|e| ToolError::io("read the link", &path, e))?)
        } else if t.is_dir() {
            walk(root, &rel, out)?;
            Entry::Dir(mode)
        } else if t.is_file() {
            Entry::File(mode, fs::read(&path).map_err(|e| ToolError::io("read", &path, e))?)
        } else {
            Entry::Other
        };
        out.insert(rel, entry);
    }
    Ok(())
}

/// `tree` as found under the directory `under` of a bigger tree (with that
/// directory's own entry, mode `dir_mode`).
pub fn nest(tree: Snapshot, under: &str, dir_mode: u32) -> Snapshot {
    let mut out: Snapshot = tree.into_iter().map(|(p, e)| (Path::new(under).join(p), e)).collect();
    out.insert(PathBuf::from(under), Entry::Dir(dir_mode));
    out
}

fn describe(e: &Entry) -> String {
    match e {
        Entry::Dir(m) => format!("directory {m:04o}"),
        Entry::File(m, bytes) => format!("file {m:04o}, {} bytes", bytes.len()),
        Entry::Link(t) => format!("link to {}", t.display()),
        Entry::Other => "special file".into(),
    }
}

/// Every difference of `actual` from `expected`, one line each, naming the path and
/// both sides; empty when they are the same.
pub fn differences(actual: &Snapshot, expected: &Snapshot) -> Vec<String> {
    let mut out = Vec::new();
    for (path, want) in expected {
        match actual.get(path) {
            None => out.push(format!("{}: missing (expected {})", path.display(), describe(want))),
            Some(got) if got != want => out.push(format!(
                "{}: {} (expected {}{})",
                path.display(),
                describe(got),
                describe(want),
                match (got, want) {
                    (Entry::File(a, x), Entry::File(b, y)) if a == b && x.len() == y.len() => ", other bytes",
                    _ => "",
                }
            )),
            Some(_) => {}
        }
    }
    for (path, got) in actual {
        if !expected.contains_key(path) {
            out.push(format!("{}: unexpected {}", path.display(), describe(got)));
        }
    }
    out
}

/// The ELF files of a tree whose architecture is not `arch` (`x86_64`, `aarch64`),
/// with the one they are of; and how many ELF files it holds.
pub fn foreign_elf(tree: &Snapshot, arch: &str) -> (Vec<String>, usize) {
    let mut wrong = Vec::new();
    let mut count = 0;
    for (path, entry) in tree {
        if let Entry::File(_, bytes) = entry
            && let Some(info) = elf::parse(bytes)
        {
            count += 1;
            if info.arch != arch {
                wrong.push(format!("{} is {}, not {arch}", path.display(), info.arch));
            }
        }
    }
    (wrong, count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differences_name_each_path_and_both_sides() {
        let d = tempfile::tempdir().unwrap();
        fs::create_dir(d.path().join("a")).unwrap();
        fs::write(d.path().join("a/f"), "x").unwrap();
        std::os::unix::fs::symlink("f", d.path().join("a/l")).unwrap();
        let a = snapshot(d.path()).unwrap();
        assert_eq!(differences(&a, &a), Vec::<String>::new());
        let mut b = a.clone();
        b.insert("a/f".into(), Entry::File(0o755, b"x".to_vec()));
        b.insert("a/l".into(), Entry::Link("g".into()));
        b.insert("a/n".into(), Entry::Dir(0o755));
        b.remove(Path::new("a"));
        let diff = differences(&a, &b).join("\n");
        for want in [
            "a/f: file 0644",
            "expected file 0755",
            "a/l: link to f (expected link to g)",
            "a/n: missing",
            "a: unexpected directory",
        ] {
            assert!(diff.contains(want), "{want}:\n{diff}");
        }
        let nested = nest(a.clone(), "x/y", 0o755);
        assert!(nested.contains_key(Path::new("x/y/a/f")) && nested.contains_key(Path::new("x/y")));
    }

    #[test]
    fn elf_files_of_another_architecture_are_named() {
        let mut t = Snapshot::new();
        let own = fs::read("/bin/sh").unwrap();
        t.insert("bin/sh".into(), Entry::File(0o755, own));
        t.insert("README".into(), Entry::File(0o644, b"text".to_vec()));
        let arch = std::env::consts::ARCH;
        assert_eq!(foreign_elf(&t, arch), (vec![], 1));
        let other = if arch == "x86_64" { "aarch64" } else { "x86_64" };
        let (wrong, n) = foreign_elf(&t, other);
        assert_eq!(n, 1);
        assert_eq!(wrong, [format!("bin/sh is {arch}, not {other}")]);
    }
}

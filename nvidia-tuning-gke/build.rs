// SPDX-License-Identifier: Apache-2.0
//! Embeds the catalog (`catalog/`: the manifest and every profile file) at build
//! time: writes `$OUT_DIR/catalog_files.rs`, a table of (path relative to
//! `catalog/`, `include_str!` of the file), so that a new profile file is a data
//! change only.

use std::fs;
use std::path::{Path, PathBuf};

fn main() {
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let catalog = root.join("catalog");
    println!("cargo:rerun-if-changed={}", catalog.display());
    let mut files = Vec::new();
    walk(&catalog, &mut files);
    files.sort();
    let mut out =
        String::from("/// Every file of `catalog/`, by path relative to it.\npub const FILES: &[(&str, &str)] = &[\n");
    for file in &files {
        println!("cargo:rerun-if-changed={}", file.display());
        let relative = file.strip_prefix(&catalog).expect("walked below catalog/");
        out.push_str(&format!(
            "    ({:?}, include_str!({:?})),\n",
            relative.display().to_string(),
            file.display().to_string()
        ));
    }
    out.push_str("];\n");
    let dest = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("catalog_files.rs");
    fs::write(dest, out).expect("write catalog_files.rs");
}

/// Every regular file below `dir`, and the directories for cargo to watch.
fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
    let entries = fs::read_dir(dir).unwrap_or_else(|e| panic!("read {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("read a catalog entry").path();
        if path.is_dir() {
            println!("cargo:rerun-if-changed={}", path.display());
            walk(&path, files);
        } else {
            files.push(path);
        }
    }
}

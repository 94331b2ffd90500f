// SPDX-License-Identifier: Apache-2.0
//! `skyhook-pkg dist-self`: builds skyhook-pkg itself exactly as `dist` builds the
//! package binaries (release profile, fully static for the chosen target) and copies
//! it to `--out`: a local agent that runs on any Linux host of that architecture,
//! such as the VM test tier's guest.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::build::{dist, elf};
use crate::error::ToolError;
use crate::workspace;

/// `skyhook-pkg dist-self [--target] --out FILE`: true when the binary is static.
pub fn run(target: Option<&str>, out: &Path) -> Result<bool, ToolError> {
    let root = workspace::root();
    let target = match target {
        Some(t) => t.to_string(),
        None => dist::host_triple()?,
    };
    let built = dist::build(&root, &["skyhook-pkg".to_string()], &target, dist::Build::Plain)?.join("skyhook-pkg");
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent).map_err(|e| ToolError::io("create the --out directory", parent, e))?;
    }
    fs::copy(&built, out).map_err(|e| ToolError::io(format!("copy the built {} to --out", built.display()), out, e))?;
    fs::set_permissions(out, fs::Permissions::from_mode(0o755))
        .map_err(|e| ToolError::io("make the binary executable", out, e))?;
    let info = elf::inspect(out).map_err(|e| ToolError::io("read the ELF header of the binary", out, e))?;
    outln!(
        "{}: skyhook-pkg for {target}, {}, {}",
        out.display(),
        info.arch,
        if info.is_static { "static" } else { "NOT static" }
    );
    if !info.is_static {
        errln!("error: {} has an ELF interpreter: it is not static", out.display());
    }
    Ok(info.is_static)
}

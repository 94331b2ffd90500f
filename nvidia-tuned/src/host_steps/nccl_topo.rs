// SPDX-License-Identifier: Apache-2.0
//! The NCCL topology file (upstream's `write-nccl-topo`): the catalog's file for the
//! pair installed at `TOPO_PATH` (mode 0644), for workloads whose `NCCL_TOPO_FILE`
//! points there. A path that is, or lies under, a symbolic link is refused before any
//! change; a new `TOPO_PATH` moves the file (the old path given back); no interrupt.

use std::path::Path;

use skyhook_core::{Error, Host, Result};

use super::ledger::Ledger;

/// The step's name in the record and the log.
pub const STEP: &str = "nccl-topo";
/// The file's mode.
const MODE: u32 = 0o644;

/// Refuses a `path` that is a link or lies under one (nothing changed yet).
pub fn check_path(host: &Host, path: &Path) -> Result<()> {
    let mut at = Some(path);
    while let Some(p) = at {
        if p == Path::new("/") {
            break;
        }
        if let Some(target) = host.read_link(p)? {
            return Err(Error::action(format!(
                "nccl-topo: {} is a symbolic link (to {}), which this package did not make and will not \
                 write through; remove the link or set TOPO_PATH to another path",
                p.display(),
                target.display()
            )));
        }
        at = p.parent();
    }
    Ok(())
}

/// Installs `bytes` at `path`, giving back the file of an earlier `TOPO_PATH`.
pub fn apply(ledger: &mut Ledger, path: &Path, bytes: &[u8]) -> Result<()> {
    ledger.give_back_step(STEP, &[path])?;
    // A file already holding the catalog's bytes is an earlier copy (the bash
    // version's): taken over, and removed by uninstall. Any other file is restored.
    let own = ledger.host().read(path)?.as_deref() == Some(bytes);
    if ledger.write(STEP, path, bytes, MODE, own)? {
        log::info!(
            "nccl-topo: installed the NCCL topology file at {}; point NCCL_TOPO_FILE there (no interrupt needed)",
            path.display()
        );
    }
    Ok(())
}

/// What is unmet: the file missing or different.
pub fn check(host: &Host, path: &Path, bytes: &[u8], unmet: &mut Vec<String>) -> Result<()> {
    if !host.has_content(path, bytes, MODE)? {
        unmet.push(format!(
            "nccl-topo: {} does not hold the catalog's NCCL topology file (mode 0644); config installs it",
            path.display()
        ));
    }
    Ok(())
}

// SPDX-License-Identifier: Apache-2.0
//! The InfiniBand user-space access modules of aks-h100: `ib_umad` (required) and
//! `rdma_ucm` loaded with `modprobe`, and both listed in
//! `/etc/modules-load.d/ib-umad.conf` (upstream's file and content) so systemd
//! loads them at every boot. `ib_ucm`, which upstream also tried and never
//! persisted, left the kernel in 5.3 and is not asked for.
//!
//! The file's original is recorded before it is written (an original equal to
//! upstream's counts as absent: the file is this package's own, from its bash
//! version) and given back at uninstall; loaded modules stay loaded until the
//! next boot, as unloading a module an RDMA user holds is not safe.

use skyhook_core::host::command::Cmd;
use skyhook_core::{Error, Result, Step};

use crate::record::{Record, original_unless_upstreams};

/// The modules-load.d file (upstream's path).
pub const FILE: &str = "/etc/modules-load.d/ib-umad.conf";
/// Its content (upstream's).
pub const CONTENT: &str = "ib_umad\nrdma_ucm\n";
/// The module without which the step fails.
const REQUIRED: &str = "ib_umad";
/// The module loaded when the kernel has it.
const OPTIONAL: &str = "rdma_ucm";

/// Loads the modules and lists them for the boot, recording first.
pub fn apply(step: &Step) -> Result<()> {
    let host = &step.host;
    let out = host.run(&Cmd::new("modprobe").arg(REQUIRED).echo())?;
    if !out.success() {
        return Err(Error::action(format!(
            "modprobe {REQUIRED} failed ({}): {}; this kernel has no InfiniBand user MAD module (install the \
             node's linux-modules-extra package, or the MLNX_OFED/DOCA driver), then run apply again",
            out.status_text(),
            out.diagnostics()
        )));
    }
    let out = host.run(&Cmd::new("modprobe").arg(OPTIONAL).echo())?;
    if !out.success() {
        log::warn!(
            "modprobe {OPTIONAL} failed ({}); RDMA connection manager access stays off",
            out.diagnostics()
        );
    }
    let mut record = Record::load(step)?;
    if record.modules_load.is_none() {
        record.modules_load = Some(original_unless_upstreams(host, FILE, CONTENT)?);
        record.save(step)?;
    }
    if host.write(FILE, CONTENT.as_bytes(), 0o644)? {
        log::info!("{FILE}: {REQUIRED} and {OPTIONAL} loaded at every boot");
    }
    Ok(())
}

/// The problems of the modules: the file, and `ib_umad` in the running kernel.
pub fn check(step: &Step) -> Result<Vec<String>> {
    let mut problems = Vec::new();
    if step.host.read(FILE)?.as_deref() != Some(CONTENT.as_bytes()) {
        problems.push(format!("{FILE} does not list {REQUIRED} and {OPTIONAL}; run apply"));
    }
    let modules = step.host.read_to_string("/proc/modules")?.unwrap_or_default();
    if !modules.lines().any(|l| l.split(' ').next() == Some(REQUIRED)) {
        problems.push(format!("{REQUIRED} is not loaded (/proc/modules); run apply"));
    }
    Ok(problems)
}

/// Gives the file back (the modules stay loaded until the next boot).
pub fn release(step: &Step, record: &mut Record) -> Result<()> {
    if let Some(original) = record.modules_load.take() {
        original.restore(&step.host)?;
        record.save(step)?;
    }
    Ok(())
}

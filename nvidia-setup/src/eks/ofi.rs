// SPDX-License-Identifier: Apache-2.0
//! OFI: the aws-ofi-nccl plugin EFA installs under `/opt/amazon/ofi-nccl` made
//! visible: its `bin` on every login shell's `PATH` (`/etc/profile.d/ofi-aws.sh`,
//! exported, where upstream's line was not) and its `lib` to the dynamic linker
//! (`/etc/ld.so.conf.d/000_ofi_aws.conf`, then `ldconfig`, which upstream never
//! ran). Both are upstream's paths; the originals are recorded before the writes
//! (a file holding exactly upstream's content counts as this package's own) and
//! given back at uninstall, with `ldconfig` again.

use skyhook_core::host::command::Cmd;
use skyhook_core::{Error, Result, Step};

use crate::record::{Record, original_unless_upstreams};

/// Where EFA installs the plugin.
pub const PREFIX: &str = "/opt/amazon/ofi-nccl";
/// The profile.d file, ours and upstream's content.
const PROFILE: (&str, &str, &str) = (
    "/etc/profile.d/ofi-aws.sh",
    "export PATH=\"$PATH:/opt/amazon/ofi-nccl/bin\"\n",
    "PATH=$PATH:/opt/amazon/ofi-nccl/bin\n",
);
/// The ld.so.conf.d file, ours and upstream's content (the same).
const LD_SO: (&str, &str, &str) = (
    "/etc/ld.so.conf.d/000_ofi_aws.conf",
    "/opt/amazon/ofi-nccl/lib\n",
    "/opt/amazon/ofi-nccl/lib\n",
);

/// The plugin's prefix exists, or the refusal.
pub fn require(step: &Step) -> Result<()> {
    if step.host.is_dir(PREFIX) {
        return Ok(());
    }
    Err(Error::action(format!(
        "{PREFIX} is not a directory: the EFA installation lacks the aws-ofi-nccl plugin; reinstall EFA, then run \
         apply again; nothing was changed"
    )))
}

/// Writes both files (recording first) and runs ldconfig when the linker's changed.
pub fn apply(step: &Step, record: &mut Record) -> Result<()> {
    let host = &step.host;
    if record.ofi.is_empty() {
        record.ofi = [PROFILE, LD_SO]
            .into_iter()
            .map(|(path, _, upstream)| original_unless_upstreams(host, path, upstream))
            .collect::<Result<_>>()?;
        record.save(step)?;
    }
    host.write(PROFILE.0, PROFILE.1.as_bytes(), 0o644)?;
    if !host.has_content(LD_SO.0, LD_SO.1.as_bytes(), 0o644)? {
        record.ldconfig_owed = true;
        record.save(step)?;
        host.write(LD_SO.0, LD_SO.1.as_bytes(), 0o644)?;
    }
    run_owed_ldconfig(step, record)?;
    log::info!(
        "OFI: {PREFIX}/bin on PATH ({}), {PREFIX}/lib linked ({})",
        PROFILE.0,
        LD_SO.0
    );
    Ok(())
}

/// The problems of the OFI files.
pub fn check(step: &Step) -> Result<Vec<String>> {
    let mut problems = Vec::new();
    for (path, content, _) in [PROFILE, LD_SO] {
        if step.host.read(path)?.as_deref() != Some(content.as_bytes()) {
            problems.push(format!("OFI: {path} does not hold {content:?}; run apply"));
        }
    }
    Ok(problems)
}

/// Gives both files back, then ldconfig.
pub fn release(step: &Step, record: &mut Record) -> Result<()> {
    if record.ofi.is_empty() {
        return Ok(());
    }
    record.ldconfig_owed = true;
    record.save(step)?;
    for original in &record.ofi {
        original.restore(&step.host)?;
    }
    record.ofi.clear();
    run_owed_ldconfig(step, record)
}

/// Runs ldconfig when the record owes it (the linker's configuration changed and a
/// step was killed before ldconfig, or is about to run it).
fn run_owed_ldconfig(step: &Step, record: &mut Record) -> Result<()> {
    if record.ldconfig_owed {
        step.host.run_ok(&Cmd::new("ldconfig").echo())?;
        record.ldconfig_owed = false;
        record.save(step)?;
    }
    Ok(())
}

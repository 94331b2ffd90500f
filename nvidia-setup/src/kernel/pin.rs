// SPDX-License-Identifier: Apache-2.0
//! `NVIDIA_PIN_KERNEL=true`: the installed kernel's four packages pinned at their
//! installed versions in `/etc/apt/preferences.d/pin-kernel` (upstream's file, so a
//! node that ran the bash package is taken over) and held with `apt-mark hold`.
//!
//! Upstream pinned `version <release>*`, a pattern that never matches a Debian
//! package version (`6.17.0-1019.19~24.04.1`), wrote the file in the working
//! directory first, and held only when the kernel was not running yet; here the
//! pin names each package's installed version, the file is written atomically, and
//! the holds are made on every run. The file's original and the holds that were
//! not there before are recorded first, and given back when the pin is no longer
//! asked for or at uninstall.

use skyhook_core::boot::edited::{Content, undo_edit};
use skyhook_core::host::command::Cmd;
use skyhook_core::os::pkgmgr::PackageManager;
use skyhook_core::records::original::SavedFile;
use skyhook_core::{Error, Result, Step};

use crate::kernel::Target;
use crate::record::{PinRecord, Record};

/// The pin file (upstream's path).
pub const PIN_FILE: &str = "/etc/apt/preferences.d/pin-kernel";

/// The pin file for `(package, version)` pairs.
pub fn content(versions: &[(String, String)]) -> String {
    let stanzas: Vec<String> = versions
        .iter()
        .map(|(p, v)| format!("Package: {p}\nPin: version {v}\nPin-Priority: 1001\n"))
        .collect();
    format!(
        "# Written by the Skyhook package nvidia-setup (NVIDIA_PIN_KERNEL=true).\n\n{}",
        stanzas.join("\n")
    )
}

/// The packages `apt-mark` holds now.
pub fn held(step: &Step) -> Result<Vec<String>> {
    let out = step.host.run_ok(&Cmd::new("apt-mark").arg("showhold"))?;
    Ok(out
        .stdout
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect())
}

/// The installed version of each of the target's packages; a missing one fails.
pub fn versions(pm: &PackageManager, target: &Target) -> Result<Vec<(String, String)>> {
    target
        .packages()
        .into_iter()
        .map(|p| match pm.installed_version(&p)? {
            Some(v) => Ok((p, v)),
            None => Err(Error::action(format!("{p} is not installed, so it cannot be pinned"))),
        })
        .collect()
}

/// Pins and holds the target's packages, recording first.
pub fn apply(step: &Step, record: &mut Record, pm: &PackageManager, target: &Target) -> Result<()> {
    let versions = versions(pm, target)?;
    let packages: Vec<String> = versions.iter().map(|(p, _)| p.clone()).collect();
    let held_now = held(step)?;
    let wanted = content(&versions);
    if record.pin.is_none() {
        record.pin = Some(PinRecord {
            file: SavedFile::capture(&step.host, PIN_FILE)?,
            written: None,
            held: packages.iter().filter(|p| !held_now.contains(p)).cloned().collect(),
        });
        record.save(step)?;
    }
    let pin = record.pin.as_mut().expect("recorded");
    if pin.written.as_ref().map(Content::bytes).as_deref() != Some(wanted.as_bytes()) {
        pin.written = Some(Content::new(wanted.as_bytes()));
        record.save(step)?;
    }
    if step.host.write(PIN_FILE, wanted.as_bytes(), 0o644)? {
        log::info!("{PIN_FILE}: {} pinned at their installed versions", packages.join(", "));
    }
    let to_hold: Vec<&String> = packages.iter().filter(|p| !held_now.contains(p)).collect();
    if !to_hold.is_empty() {
        step.host
            .run_ok(&Cmd::new("apt-mark").arg("hold").args(to_hold).echo())?;
    }
    Ok(())
}

/// Releases the holds this package made and gives the pin file back.
pub fn release(step: &Step, record: &mut Record) -> Result<()> {
    let Some(pin) = record.pin.clone() else {
        return Ok(());
    };
    let held_now = held(step)?;
    let ours: Vec<&String> = pin.held.iter().filter(|p| held_now.contains(p)).collect();
    if !ours.is_empty() {
        step.host
            .run_ok(&Cmd::new("apt-mark").arg("unhold").args(ours).echo())?;
    }
    if let Some(written) = &pin.written {
        undo_edit(&step.host, PIN_FILE, &pin.file, written, |_| None)?;
    }
    record.pin = None;
    record.save(step)
}

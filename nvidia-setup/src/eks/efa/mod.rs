// SPDX-License-Identifier: Apache-2.0
//! EFA: installed means what upstream's 0.7.0 check means, the dpkg package `efa`
//! installed and its DKMS module `installed` (`dkms status efa`); anything less
//! runs AWS's installer of the entry's version (`NVIDIA_EFA`, else the
//! combination's), as upstream's step did, with what upstream lacked:
//!
//! - the tarball is fetched (`curl -sSfL`, three tries) with its signature and
//!   AWS's signing key, into a scratch directory of this package's own, root-only,
//!   under its state directory, never the working directory; the directory is owed
//!   in the record from before it is made until it is gone, so a killed run's
//!   leftovers go at the next run or at uninstall;
//! - it is unpacked and run only when its signature is valid and by the trusted key
//!   (AWS's published fingerprint, or `NVIDIA_EFA_KEY_FINGERPRINT`: [`signature`]);
//! - the installer runs from its own directory (`efa_installer.sh -y`), and "done"
//!   means the package and the DKMS module both present afterwards, else apply fails
//!   naming what is missing;
//! - no DKMS module is ever removed (upstream's dpkg repair ran `dkms remove --all`).
//!
//! EFA stays installed at uninstall: removing the fabric driver of a GPU node that
//! may be running jobs is not safe.

use std::path::{Path, PathBuf};

use skyhook_core::host::command::Cmd;
use skyhook_core::os::pkgmgr::PackageManager;
use skyhook_core::{Error, Result, Step};

use crate::record::Record;

pub mod armor;
pub mod signature;

/// Where AWS publishes the installer.
pub const URL_BASE: &str = "https://efa-installer.amazonaws.com";
/// AWS's signing key of the installer, beside it.
pub const KEY_FILE: &str = "aws-efa-installer.key";

/// Which installer runs where EFA is missing, and whose signature it must carry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Source {
    /// The installer's version (`1.48.0`).
    pub version: String,
    /// The fingerprint of the key that must sign it (40 upper-case hex digits).
    pub key: String,
}

/// What is missing of EFA (empty: installed).
pub fn missing(step: &Step, pm: &PackageManager) -> Result<Vec<String>> {
    let mut missing = Vec::new();
    if !pm.is_installed("efa")? {
        missing.push("the dpkg package efa is not installed".to_string());
    }
    match step.host.run(&Cmd::new("dkms").args(["status", "efa"])) {
        Ok(out) if out.success() && out.stdout.lines().any(|l| l.trim_end().ends_with("installed")) => {}
        Ok(out) => missing.push(format!("dkms lists no installed efa module ({:?})", out.stdout.trim())),
        Err(e) => missing.push(format!("dkms cannot be run ({e})")),
    }
    Ok(missing)
}

/// The scratch directory of the installer.
fn work_dir(step: &Step) -> (PathBuf, PathBuf) {
    let base = step.state().dir();
    let work = base.join("efa-installer");
    (base, work)
}

/// Installs EFA from `source` unless it is installed.
pub fn install(step: &Step, record: &mut Record, pm: &PackageManager, source: &Source) -> Result<()> {
    let version = source.version.as_str();
    let before = missing(step, pm)?;
    if before.is_empty() {
        log::info!("EFA: installed (package and DKMS module)");
        return remove_work_dir(step, record);
    }
    log::info!("EFA: {}; installing EFA {version}", before.join("; "));
    let host = &step.host;
    let (base, work) = work_dir(step);
    record.efa_work_dir = true;
    record.save(step)?;
    host.remove_scratch_tree(&base, &work)?;
    host.create_dir(&work, 0o700)?;
    let ran = fetch_and_run(step, &work, source);
    remove_work_dir(step, record)?;
    ran?;
    let after = missing(step, pm)?;
    if !after.is_empty() {
        return Err(Error::action(format!(
            "EFA: the installer {version} finished, but {}; see its output above",
            after.join("; ")
        )));
    }
    log::info!("EFA {version}: installed (package and DKMS module)");
    Ok(())
}

/// Fetches the installer of `source`, its signature and AWS's key into `work`,
/// checks the signature, then unpacks the installer there and runs it from its own
/// directory.
fn fetch_and_run(step: &Step, work: &Path, source: &Source) -> Result<()> {
    let host = &step.host;
    let version = &source.version;
    let name = format!("aws-efa-installer-{version}.tar.gz");
    let path = |file: &str| work.join(file).display().to_string();
    let (tarball, sig, key) = (path(&name), path(&format!("{name}.sig")), path(KEY_FILE));
    for (file, dest) in [
        (name.clone(), &tarball),
        (format!("{name}.sig"), &sig),
        (KEY_FILE.to_string(), &key),
    ] {
        fetch(host, &format!("{URL_BASE}/{file}"), dest)?;
    }
    signature::verify(host, work, &tarball, &sig, &key, &source.key)?;
    let unpack = Cmd::new("tar")
        .arg("-xzf")
        .arg(&tarball)
        .arg("-C")
        .arg(work.display().to_string());
    host.run_ok(&unpack)?;
    let dir = work.join("aws-efa-installer");
    let installer = Cmd::new(dir.join("efa_installer.sh").display().to_string())
        .arg("-y")
        .current_dir(dir.display().to_string())
        .echo();
    host.run_ok(&installer)
        .map_err(|e| Error::action(format!("EFA: the installer {version} failed: {e}")))?;
    Ok(())
}

/// Fetches `url` into `dest` (`curl -sSfL`, three tries).
fn fetch(host: &skyhook_core::Host, url: &str, dest: &str) -> Result<()> {
    let cmd = Cmd::new("curl")
        .args(["-sSfL", "--retry", "3", "-o"])
        .arg(dest)
        .arg(url);
    host.run_ok(&cmd.echo()).map_err(|e| {
        Error::action(format!(
            "EFA: cannot fetch {url}: {e}; check the version (NVIDIA_EFA) and the node's access to {URL_BASE}"
        ))
    })?;
    Ok(())
}

/// Removes the installer's scratch directory when the record owes it.
pub fn remove_work_dir(step: &Step, record: &mut Record) -> Result<()> {
    if record.efa_work_dir {
        let (base, work) = work_dir(step);
        step.host.remove_scratch_tree(&base, &work)?;
        record.efa_work_dir = false;
        record.save(step)?;
    }
    Ok(())
}

/// EFA installed, or the check's problem naming what is missing.
pub fn check(step: &Step, pm: &PackageManager) -> Result<Vec<String>> {
    Ok(missing(step, pm)?
        .into_iter()
        .map(|m| format!("EFA: {m}; run apply"))
        .collect())
}

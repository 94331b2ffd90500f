// SPDX-License-Identifier: Apache-2.0
//! EFA: installed means what upstream's 0.7.0 check means, the dpkg package `efa`
//! installed and its DKMS module `installed` (`dkms status efa`). This version does
//! not download and run AWS's installer: a node without EFA is refused before any
//! change, naming the installer version the combination ships with (use an AMI
//! that carries EFA, or install it first). No DKMS module is ever removed.

use skyhook_core::host::command::Cmd;
use skyhook_core::os::pkgmgr::PackageManager;
use skyhook_core::{Error, Result, Step};

/// EFA installed, or the refusal naming what is missing and `version`, the
/// installer version the entry asks for.
pub fn require(step: &Step, pm: &PackageManager, version: &str) -> Result<()> {
    let mut missing = Vec::new();
    if !pm.is_installed("efa")? {
        missing.push("the dpkg package efa is not installed".to_string());
    }
    let dkms = step.host.run(&Cmd::new("dkms").args(["status", "efa"]));
    match dkms {
        Ok(out) if out.success() && out.stdout.lines().any(|l| l.trim_end().ends_with("installed")) => {}
        Ok(out) => missing.push(format!("dkms lists no installed efa module ({})", out.stdout.trim())),
        Err(e) => missing.push(format!("dkms cannot be run ({e})")),
    }
    if missing.is_empty() {
        log::info!("EFA: installed (package and DKMS module)");
        return Ok(());
    }
    Err(Error::action(format!(
        "EFA is not installed on this node ({}); this version of nvidia-setup does not run AWS's EFA installer: \
         install EFA {} first (aws-efa-installer, `efa_installer.sh -y`) or use an AMI that carries it, then run \
         apply again; nothing was changed",
        missing.join("; "),
        version
    )))
}

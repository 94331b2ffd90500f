// SPDX-License-Identifier: Apache-2.0
//! The apt step: a dpkg an earlier run left half-done finished first
//! (`dpkg --configure -a`, as upstream's 0.7.0 heal did, but before any command
//! rather than after one failed), then the tools upstream's later steps and scripts rely on (`curl`,
//! `git`, `wget`, `gpg`) and `chrony`, installed when missing; with
//! `NVIDIA_SETUP_APT_UPGRADE=true` (off by default, as upstream since 0.7.0) an
//! `apt-get upgrade` first, refused before it starts when it would replace the
//! container runtime or kubelet: restarting containerd from inside this step kills
//! the step's own pod and leaves the node NotReady (upstream's GB300 incident).
//! Installed and upgraded packages stay at uninstall (a downgrade is not safe).

use skyhook_core::Host;
use skyhook_core::os::dpkg;
use skyhook_core::os::pkgmgr::PackageManager;
use skyhook_core::{Error, Result};

/// What apply installs when missing.
pub const TOOLS: [&str; 5] = ["curl", "git", "wget", "gpg", "chrony"];

/// Packages whose upgrade restarts the container runtime or kubelet.
pub const RUNTIME: [&str; 6] = [
    "containerd",
    "containerd.io",
    "runc",
    "kubelet",
    "cri-o",
    "nvidia-container-toolkit",
];

/// Finishes what dpkg left unfinished, upgrades when asked (refusing a runtime
/// upgrade), then installs the tools.
pub fn apply(host: &Host, pm: &PackageManager, upgrade: bool) -> Result<()> {
    dpkg::finish_unfinished(host)?;
    if upgrade {
        let upgradable = pm.upgradable()?;
        let runtime: Vec<String> = upgradable
            .iter()
            .filter(|(name, _)| RUNTIME.contains(&name.as_str()))
            .map(|(name, new)| format!("{name} {new}"))
            .collect();
        if !runtime.is_empty() {
            return Err(Error::action(format!(
                "NVIDIA_SETUP_APT_UPGRADE=true, but the upgrade would replace {} and so restart the container \
                 runtime or kubelet under this step's own pod; nothing was upgraded. Hold them (`apt-mark hold`) \
                 or upgrade them in a maintenance window with the node drained, then run apply again",
                runtime.join(", ")
            )));
        }
        if upgradable.is_empty() {
            log::info!("apt: nothing to upgrade");
        } else {
            pm.upgrade()?;
        }
    } else {
        log::info!("apt: no upgrade (NVIDIA_SETUP_APT_UPGRADE is not true)");
    }
    pm.install(&TOOLS)?;
    Ok(())
}

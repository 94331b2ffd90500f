// SPDX-License-Identifier: Apache-2.0
//! The tuned distribution package and its package manager (apply installs it,
//! uninstall removes it).

use skyhook_core::os::pkgmgr::{PackageManager, Retry};
use skyhook_core::{Result, Step};

/// The distribution package and the systemd unit.
pub const TUNED: &str = "tuned";

/// The node's package manager, its retries from the environment.
pub(crate) fn package_manager(step: &Step) -> Result<PackageManager<'_>> {
    let retry = Retry::from_env()?;
    PackageManager::detect(&step.host, step.family()?, retry)
}

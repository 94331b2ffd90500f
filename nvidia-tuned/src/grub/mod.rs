// SPDX-License-Identifier: Apache-2.0
//! GRUB for the services whose drop-ins in `/etc/default/grub.d` hand tuned's kernel
//! arguments (`/etc/tuned/bootcmdline`) to GRUB when its configuration is generated:
//! `eks` and `aks` (`99_tuned.cfg`), `rke2` (`99-nvidia-tuned-cmdline.cfg`).
//!
//! [`bootloader_step`] decides rke2's drop-in as upstream's configure_bootloader step
//! does (its switch, the Debian family only, not where GRUB already expands
//! `$tuned_params`, found by [`native`]); [`regeneration`] regenerates GRUB on
//! Debian-family nodes whenever a drop-in or the arguments it reads change, at config
//! and at uninstall, kill-safe through the host steps' ledger.

pub mod bootloader_step;
pub mod native;
pub mod regeneration;

use std::path::Path;

use skyhook_core::boot::config::DROP_IN_DIR;

/// Whether `path` is a GRUB drop-in (a file directly in `/etc/default/grub.d`).
pub fn is_drop_in(path: &Path) -> bool {
    path.parent() == Some(Path::new(DROP_IN_DIR))
}

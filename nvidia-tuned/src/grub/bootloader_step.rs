// SPDX-License-Identifier: Apache-2.0
//! The services' GRUB drop-ins decided for the node, before any change: eks's and
//! aks's (`99_tuned.cfg`) is left out on a RHEL-like node, whose own way tuned's
//! bootloader plugin takes ([`leave_out_on_rhel_like`]); rke2's
//! (`99-nvidia-tuned-cmdline.cfg`, the catalog file marked `configure_bootloader`) as
//! upstream's configure_bootloader step decides it:
//!
//! - `CONFIGURE_BOOTLOADER=false` (package env): not written, GRUB not regenerated for
//!   it; the operator sets the kernel arguments another way.
//! - Off the Debian family, refused (exit 1) naming the family found: only Debian's
//!   grub-mkconfig reads `/etc/default/grub.d`, so elsewhere the drop-in would be written,
//!   GRUB regenerated, and no argument would reach the kernel. The same configMap is
//!   valid on a Debian node, so this is the node's state, not bad input.
//! - Where GRUB already expands `$tuned_params` ([`super::native`]): not written (the
//!   arguments would appear twice), said in the log.
//!
//! Where it is not written, a file at its path is taken back when it carries
//! [`MARKER`], upstream's line by which its step knows the file as its own (this
//! package's drop-in carries it too): the one this package deployed through tuned's
//! reconcile, one the bash version left by [`marked_leftover`].

use std::path::{Path, PathBuf};

use skyhook_core::os::distro::Family;
use skyhook_core::{Error, Host, Result, Step};

use crate::catalog::{Catalog, Rendered};
use crate::host_steps::switches::{self, CONFIGURE_BOOTLOADER};

/// Upstream's marker line of the drop-in (nodewright-packages' configure_bootloader.sh).
pub const MARKER: &str = "Managed by the nvidia-tuned Skyhook package (configure_bootloader.sh)";

/// Leaves rke2's drop-in out of `rendered` where the switch is off or GRUB already
/// expands `$tuned_params`; refuses a node outside the Debian family (exit 1). Reads
/// the switch from the process environment (bad value: exit 2). Nothing changes.
pub fn decide(step: &Step, rendered: &mut Rendered) -> Result<()> {
    leave_out_on_rhel_like(step, rendered)?;
    decide_with(step, rendered, |name| std::env::var_os(name))
}

/// Leaves eks's and aks's drop-in (`99_tuned.cfg`, a GRUB drop-in not marked
/// `configure_bootloader`) out of `rendered` on a RHEL-like node. The drop-in hands
/// tuned's arguments to Debian's grub-mkconfig, the one GRUB that reads
/// `/etc/default/grub.d`; a RHEL-like node has its own way, which tuned's bootloader
/// plugin takes by itself when the profile is activated: it sets `tuned_params` in the
/// GRUB environment block and has the BLS entries expand `$tuned_params` (tuned's
/// `92-tuned.install`; on a grub.cfg without BLS it patches the file), read from
/// redhat-performance/tuned, `tuned/plugins/plugin_bootloader.py` (2.21 to 2.25).
pub fn leave_out_on_rhel_like(step: &Step, rendered: &mut Rendered) -> Result<()> {
    let is_service_drop_in = |f: &crate::catalog::FileEntry| super::is_drop_in(&f.path) && !f.configure_bootloader;
    if !rendered.files.iter().any(|(f, _)| is_service_drop_in(f)) {
        return Ok(());
    }
    match step.family_if_known()? {
        Some(Family::Rhel) => {}
        Some(Family::Debian) | None => return Ok(()),
    }
    let os = step.os_release()?;
    rendered.files.retain(|(f, _)| {
        if !is_service_drop_in(f) {
            return true;
        }
        log::info!(
            "{} is not written on this RHEL-like node (ID={:?}): only Debian's grub-mkconfig reads \
             /etc/default/grub.d; here tuned's bootloader plugin puts the profile's kernel arguments on the boot \
             entries itself ($tuned_params in the GRUB environment block, which the BLS entries expand)",
            f.path.display(),
            os.id()
        );
        false
    });
    Ok(())
}

/// [`decide`] with the environment read through `var_os`.
pub fn decide_with(
    step: &Step,
    rendered: &mut Rendered,
    var_os: impl Fn(&str) -> Option<std::ffi::OsString>,
) -> Result<()> {
    let Some(index) = rendered.files.iter().position(|(f, _)| f.configure_bootloader) else {
        return Ok(());
    };
    let path = rendered.files[index].0.path.clone();
    if !switches::configure_bootloader(var_os)? {
        log::info!(
            "{CONFIGURE_BOOTLOADER} is off: {} is not written and GRUB is not regenerated for it; the \
             profile's kernel arguments reach the kernel only if something else puts them on the boot line",
            path.display()
        );
        rendered.files.remove(index);
        return Ok(());
    }
    let os = step.os_release()?;
    match step.family_if_known()? {
        Some(Family::Debian) => {}
        found @ (Some(Family::Rhel) | None) => {
            let family = found.map_or_else(
                || "of a family this package does not know".to_string(),
                |f| format!("{f}"),
            );
            return Err(Error::action(format!(
                "service rke2 writes {}, which only the Debian family's grub-mkconfig reads (its \
                 /etc/default/grub.d patch); this node is {family} (ID={:?}, ID_LIKE={:?}), where GRUB would be \
                 regenerated without the drop-in and the profile's kernel arguments would never reach the kernel, \
                 so nothing was changed. Set {CONFIGURE_BOOTLOADER}=false in the package's env to run rke2's \
                 tuning without the drop-in (and set the kernel arguments another way), or run these nodes with a \
                 service whose chain has none (bcm on vr200)",
                path.display(),
                os.id(),
                os.id_like().join(" ")
            )));
        }
    }
    if super::native::expands_tuned_params(&step.host)? {
        log::info!(
            "{} already expands $tuned_params (tuned's bootloader plugin sets it, {} passes it): {} is not \
             written, as its arguments would appear twice on the kernel command line",
            super::native::GRUB_CFG,
            tuned::engine::GRUB_DEFAULTS,
            path.display()
        );
        rendered.files.remove(index);
    }
    Ok(())
}

/// The path of the configure_bootloader drop-in in `catalog`.
pub fn drop_in_path(catalog: &Catalog) -> Option<PathBuf> {
    catalog
        .manifest
        .services
        .values()
        .flat_map(|s| &s.files)
        .find(|f| f.configure_bootloader)
        .map(|f| f.path.clone())
}

/// Whether the file at `path` carries [`MARKER`] (a regular file, read bounded).
pub fn is_marked(host: &Host, path: &Path) -> Result<bool> {
    let marker = MARKER.as_bytes();
    Ok(host
        .read(path)?
        .is_some_and(|bytes| bytes.windows(marker.len()).any(|w| w == marker)))
}

/// The configure_bootloader drop-in of `catalog` when a file carrying [`MARKER`] is at
/// its path and neither this config deploys it (`wanted`) nor tuned's record holds it
/// (`deployed`; tuned's reconcile takes that one back): the bash version's, to be taken back.
pub fn marked_leftover(
    host: &Host,
    catalog: &Catalog,
    wanted: &[PathBuf],
    deployed: &[PathBuf],
) -> Result<Option<PathBuf>> {
    let Some(path) = drop_in_path(catalog) else {
        return Ok(None);
    };
    if wanted.contains(&path) || deployed.contains(&path) || !is_marked(host, &path)? {
        return Ok(None);
    }
    Ok(Some(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catalogs_drop_in_carries_upstreams_marker() {
        let catalog = Catalog::embedded();
        let files: Vec<_> = catalog
            .manifest
            .services
            .values()
            .flat_map(|s| &s.files)
            .filter(|f| f.configure_bootloader)
            .collect();
        assert_eq!(files.len(), 1, "rke2's drop-in, once");
        let text = catalog.file(&format!("files/{}", files[0].source)).unwrap();
        assert!(text.lines().next().unwrap().contains(MARKER), "{text}");
        assert_eq!(
            drop_in_path(&catalog).unwrap(),
            Path::new("/etc/default/grub.d/99-nvidia-tuned-cmdline.cfg")
        );
    }
}

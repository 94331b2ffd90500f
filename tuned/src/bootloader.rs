// SPDX-License-Identifier: Apache-2.0
//! What tuned's bootloader plugin leaves in GRUB's configuration, taken back at
//! uninstall.
//!
//! A profile with `[bootloader]` options makes the tuned daemon append two lines to
//! `/etc/default/grub` (its `$tuned_params` and `$tuned_initrd` variables) and patch
//! `grub.cfg`. Stopping tuned does not undo either, and removing the tuned package
//! leaves them behind: the node would keep the profile's kernel arguments after the
//! next reboot. uninstall removes exactly those two lines (every other byte of the
//! file stays) and regenerates the boot configuration from it.
//!
//! On an ostree-managed host (RHEL CoreOS, RHEL image mode / bootc) the kernel
//! arguments belong to the deployment: config refuses, before any change, to make
//! active a profile chain with bootloader options ([`refuse_on_image_mode`]).
//!
//! The huge pages the active chain's kernel arguments ask for ([`kernel_args`]) go
//! through core's `boot::hugepages`: config refuses, before any change, a
//! `hugepagesz=`/`default_hugepagesz=` the running kernel cannot register
//! ([`refuse_unregistrable_hugepages`]), and post-interrupt-check proves each
//! `hugepages=` pool reserved for its size.

use skyhook_core::boot::config::BootConfig;
use skyhook_core::boot::hugepages;
use skyhook_core::error::bounded_list;
use skyhook_core::os::distro::image_mode;
use skyhook_core::{Error, Host, Result, Step};

/// The GRUB defaults file tuned's bootloader plugin appends to.
pub const GRUB_DEFAULTS: &str = "/etc/default/grub";

/// The lines tuned's bootloader plugin appends to [`GRUB_DEFAULTS`], byte for byte.
pub const TUNED_LINES: [&[u8]; 2] = [
    br#"GRUB_CMDLINE_LINUX_DEFAULT="${GRUB_CMDLINE_LINUX_DEFAULT:+$GRUB_CMDLINE_LINUX_DEFAULT }\$tuned_params""#,
    br#"GRUB_INITRD_OVERLAY="${GRUB_INITRD_OVERLAY:+$GRUB_INITRD_OVERLAY }\$tuned_initrd""#,
];

/// `text` without tuned's lines, or `None` when it holds none of them.
pub fn without_tuned_lines(text: &[u8]) -> Option<Vec<u8>> {
    let mut kept = Vec::with_capacity(text.len());
    let mut found = false;
    for line in text.split_inclusive(|&b| b == b'\n') {
        let bare = line.strip_suffix(b"\n").unwrap_or(line);
        let bare = bare.strip_suffix(b"\r").unwrap_or(bare);
        if TUNED_LINES.contains(&bare) {
            found = true;
        } else {
            kept.extend_from_slice(line);
        }
    }
    found.then_some(kept)
}

/// Refuses (exit 1) a configuration whose active profiles, with what they include,
/// carry bootloader options (`chain`: [`crate::plan::Plan::bootloader`]'s entries,
/// the active ones starting with `active `) on an ostree-managed host: tuned's
/// bootloader plugin would edit `/etc/default/grub` and the boot entries (or run
/// `rpm-ostree kargs`), which the deployment owns (on RHEL CoreOS the Machine Config
/// Operator). Called before any change; options of deployed profiles that are not
/// active reach no boot line and are no reason.
pub fn refuse_on_image_mode(host: &Host, chain: &[String]) -> Result<()> {
    let active: Vec<String> = chain
        .iter()
        .filter_map(|o| o.strip_prefix("active "))
        .map(str::to_string)
        .collect();
    if active.is_empty() {
        return Ok(());
    }
    let Some(evidence) = image_mode(host) else {
        return Ok(());
    };
    Err(Error::action(format!(
        "the tuned profile(s) to activate carry bootloader options ({}), but this node's kernel arguments are \
         managed by ostree ({evidence}): tuned's bootloader plugin would edit /etc/default/grub and the boot \
         entries, which the deployment overwrites or which break it, so nothing was changed. Set these kernel \
         arguments with a MachineConfig (`kernelArguments`, OpenShift) or `rpm-ostree kargs --append=…` (bootc: a \
         `kargs.d` file in the image), and activate a profile without bootloader options on these nodes (or \
         disable the unit in a profile of your own: `[bootloader]` with `enabled=false`)",
        bounded_list(&active).join("; ")
    )))
}

/// The kernel arguments the active profiles' bootloader options put on the boot
/// line, in order (`chain`: [`crate::plan::Plan::bootloader`]'s entries, or the state's
/// record of them; only those starting with `active ` count). The options are merged
/// as tuned merges a profile chain: an including profile's option of the same section
/// and name replaces the included one's, where that one stood; `cmdline` and every
/// `cmdline_<suffix>` reach the line. A token holding a tuned expansion (`${…}`) is
/// known only on the node and is left out, as is one tuned removes (a leading `-`);
/// a leading `+` (append) is dropped.
pub fn kernel_args(chain: &[String]) -> Vec<String> {
    let mut merged: Vec<(String, String, String)> = Vec::new();
    for entry in chain {
        let Some(rest) = entry.strip_prefix("active ") else {
            continue;
        };
        let Some((_profile, option)) = rest.split_once(' ') else {
            continue;
        };
        let Some((section, assignment)) = option.strip_prefix('[').and_then(|o| o.split_once("] ")) else {
            continue;
        };
        let Some((name, value)) = assignment.split_once('=') else {
            continue;
        };
        if !(name == "cmdline" || name.starts_with("cmdline_")) {
            continue;
        }
        match merged.iter_mut().find(|(s, n, _)| s == section && n == name) {
            Some(slot) => slot.2 = value.to_string(),
            None => merged.push((section.to_string(), name.to_string(), value.to_string())),
        }
    }
    merged
        .iter()
        .flat_map(|(_, _, value)| value.split_whitespace())
        .filter(|t| !t.contains("${") && !t.starts_with('-'))
        .map(|t| t.strip_prefix('+').unwrap_or(t).to_string())
        .collect()
}

/// Where the active chain's kernel arguments come from, for messages.
pub fn chain_source(chain: &[String]) -> String {
    let mut names: Vec<&str> = Vec::new();
    for name in chain
        .iter()
        .filter_map(|e| e.strip_prefix("active "))
        .filter_map(|r| r.split_once(' ').map(|(n, _)| n))
    {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    format!("the [bootloader] options of tuned profile(s) {}", names.join(", "))
}

/// Refuses (exit 1), before any change, a `hugepagesz=`/`default_hugepagesz=` of the
/// active chain (`chain` as for [`kernel_args`]) the running kernel cannot register
/// (core's `boot::hugepages::refuse_unregistrable`; where the kernel lists no sizes it
/// only warns).
pub fn refuse_unregistrable_hugepages(host: &Host, chain: &[String]) -> Result<()> {
    let args = kernel_args(chain);
    if hugepages::size_args(&args).is_empty() {
        return Ok(());
    }
    hugepages::refuse_unregistrable(host, &chain_source(chain), &args)
}

/// Whether `GRUB_DEFAULTS` on the node still holds one of tuned's lines.
pub fn has_tuned_lines(step: &Step) -> Result<bool> {
    let text = step.host.read(GRUB_DEFAULTS)?.unwrap_or_default();
    Ok(without_tuned_lines(&text).is_some())
}

/// Takes tuned's lines out of `GRUB_DEFAULTS` (they are orphans once tuned is removed)
/// and, when it removed some or `profile_had_options` (a profile with bootloader
/// options was in effect, so tuned patched `grub.cfg`), regenerates the boot
/// configuration. The caller clears its record only afterwards, so a run killed
/// between the two regenerates when run again.
pub fn take_back(step: &Step, profile_had_options: bool) -> Result<()> {
    let host = &step.host;
    let mut removed = false;
    if let Some(kept) = host.read(GRUB_DEFAULTS)?.as_deref().and_then(without_tuned_lines) {
        let mode = host.mode(GRUB_DEFAULTS)?.unwrap_or(0o644);
        host.write(GRUB_DEFAULTS, &kept, mode)?;
        log::info!("{GRUB_DEFAULTS}: removed the $tuned_params/$tuned_initrd lines tuned's bootloader plugin added");
        removed = true;
    }
    if !removed && !profile_had_options {
        return Ok(());
    }
    match BootConfig::detect(host, step.family()?) {
        Ok(boot) => boot.regenerate(host),
        Err(e) => {
            log::warn!("the boot configuration was not regenerated after tuned's bootloader options: {e}");
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_tuneds_own_lines_go_and_every_other_byte_stays() {
        let tuned = format!(
            "{}\n{}\r\n",
            String::from_utf8_lossy(TUNED_LINES[0]),
            String::from_utf8_lossy(TUNED_LINES[1])
        );
        let mine = b"GRUB_DEFAULT=0\n# \xe9t\xe9\nGRUB_CMDLINE_LINUX_DEFAULT=\"quiet $tuned_params\"\nlast";
        let mut text = mine[..15].to_vec();
        text.extend_from_slice(tuned.as_bytes());
        text.extend_from_slice(&mine[15..]);
        assert_eq!(without_tuned_lines(&text).unwrap(), mine);
        assert_eq!(
            without_tuned_lines(mine),
            None,
            "a line merely naming $tuned_params is the admin's"
        );
        assert_eq!(without_tuned_lines(b""), None);
    }
}

#[cfg(test)]
mod hugepage_tests {
    use super::*;

    #[test]
    fn the_chain_merges_as_tuned_merges_it() {
        let chain: Vec<String> = [
            "active base [bootloader] cmdline_hugepages=hugepagesz=1G hugepages=4",
            "active base [bootloader] cmdline_iommu=iommu=pt",
            "deployed other [bootloader] cmdline=hugepagesz=3M",
            "active top [bootloader] cmdline_hugepages=hugepagesz=512M hugepages=4 default_hugepagesz=${f:x}",
            "active top [bootloader] cmdline=+quiet -hugepagesz=2M",
            "active top [bootloader] initrd_add_img=/boot/x.img",
        ]
        .map(str::to_string)
        .into();
        assert_eq!(
            kernel_args(&chain),
            ["hugepagesz=512M", "hugepages=4", "iommu=pt", "quiet"],
            "the including profile's cmdline_hugepages replaces the base's where it stood"
        );
        assert_eq!(
            chain_source(&chain),
            "the [bootloader] options of tuned profile(s) base, top"
        );
    }
}

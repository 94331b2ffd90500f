// SPDX-License-Identifier: Apache-2.0
//! Regenerating GRUB for the services' drop-ins. They source tuned's
//! `/etc/tuned/bootcmdline` when GRUB's configuration is generated, and stock tuned
//! does not regenerate it on Debian-family nodes (tuned pull request #387, Debian bug
//! 988851): without a regeneration the arguments would wait for some later
//! `update-grub`. Upstream runs `update-grub` after writing the drop-in.
//!
//! On a Debian-family node, config owes a regeneration (the host steps' ledger, saved
//! before the change) when it deploys, changes or removes such a drop-in, takes back
//! the bash version's rke2 drop-in, or when the chain's kernel arguments differ from
//! those GRUB was last generated for; after tuned's deploy and activation it also owes
//! one when tuned rewrote `/etc/tuned/bootcmdline` since; it regenerates at its end and
//! records what GRUB was generated from ([`BootInputs`]), so an unchanged rerun
//! regenerates nothing and a killed run regenerates on its rerun. A node that needs it
//! and has neither update-grub nor grub-mkconfig is refused before any change (exit 1).
//! uninstall owes one when the drop-ins go and regenerates after tuned's uninstall
//! (which regenerates itself when the chain had kernel arguments: then not twice).
//!
//! Other families: the drop-ins are deployed as the catalog says and nothing is
//! regenerated (their grub2-mkconfig does not read `/etc/default/grub.d`; tuned's
//! bootloader plugin sets the arguments there).

use std::collections::BTreeMap;
use std::path::PathBuf;

use skyhook_core::boot::config::BootConfig;
use skyhook_core::os::distro::Family;
use skyhook_core::{Error, Host, Interrupt, Result, Step};
use tuned::engine::BOOTCMDLINE;
use tuned::engine::State as TunedState;

use super::bootloader_step;
use crate::catalog::{Catalog, Rendered};
use crate::host_steps::ledger::{BootInputs, Ledger};
use crate::plan::Desired;

/// What config does to GRUB for the services' drop-ins on this node.
#[derive(Debug, Clone)]
pub struct Regeneration {
    /// Whether the node is of the Debian family.
    debian: bool,
    /// Its boot configuration, where GRUB is regenerated.
    boot: Option<BootConfig>,
    /// The services' GRUB drop-ins this config deploys.
    wanted: BTreeMap<PathBuf, Vec<u8>>,
    /// Those an earlier config deployed (tuned's record).
    deployed: Vec<PathBuf>,
    /// The bash version's rke2 drop-in, taken back.
    leftover: Option<PathBuf>,
    /// The chain's kernel arguments (`[bootloader]` options).
    args: Vec<String>,
}

impl Regeneration {
    /// Reads the node before any change; with `detect` (config), a Debian-family node
    /// that needs GRUB regenerated and has no GRUB tool is refused (exit 1).
    pub fn read(step: &Step, desired: &Desired, catalog: &Catalog, detect: bool) -> Result<Self> {
        let host = &step.host;
        let debian = debian_family(step)?;
        let wanted: BTreeMap<PathBuf, Vec<u8>> = desired
            .rendered
            .files
            .iter()
            .filter(|(f, _)| super::is_drop_in(&f.path))
            .map(|(f, b)| (f.path.clone(), b.clone()))
            .collect();
        let deployed = deployed_drop_ins(step)?;
        let paths: Vec<PathBuf> = wanted.keys().cloned().collect();
        let leftover = bootloader_step::marked_leftover(host, catalog, &paths, &deployed)?;
        let ledger = Ledger::load(host, step.ctx.package_name())?;
        let touches = !wanted.is_empty() || !deployed.is_empty() || leftover.is_some() || ledger.changes.regenerate;
        let boot = if debian && touches && detect {
            Some(detect_grub(host, &paths)?)
        } else {
            None
        };
        if !debian && !wanted.is_empty() && detect {
            log::info!(
                "{}: this node is not of the Debian family, whose grub-mkconfig alone reads {}; deployed as the \
                 catalog says, GRUB is not regenerated for it (tuned's bootloader plugin sets the kernel arguments here)",
                list(&paths),
                skyhook_core::boot::config::DROP_IN_DIR
            );
        }
        Ok(Regeneration {
            debian,
            boot,
            args: if wanted.is_empty() {
                Vec::new()
            } else {
                chain_args(&desired.rendered)
            },
            wanted,
            deployed,
            leftover,
        })
    }

    /// Before tuned's deploy: owes a regeneration for what config is about to change
    /// (saved first), then takes back the bash version's rke2 drop-in.
    pub fn prepare(&self, step: &Step) -> Result<()> {
        if self.boot.is_none() {
            return Ok(());
        }
        let host = &step.host;
        let mut ledger = Ledger::load(host, step.ctx.package_name())?;
        let mut why = Vec::new();
        for (path, bytes) in &self.wanted {
            if host.read(path)?.as_deref() != Some(bytes.as_slice()) {
                why.push(format!("{} is new or changed", path.display()));
            }
        }
        for path in self.deployed.iter().filter(|p| !self.wanted.contains_key(*p)) {
            why.push(format!("{} goes", path.display()));
        }
        if let Some(path) = &self.leftover {
            why.push(format!("{} (the bash version's) goes", path.display()));
        }
        if !self.wanted.is_empty() && ledger.changes.grub.as_ref().map(|g| &g.args) != Some(&self.args) {
            why.push("the chain's kernel arguments are not those GRUB was last generated for".into());
        }
        if !why.is_empty() {
            log::info!("GRUB is regenerated at the end of config: {}", why.join("; "));
            ledger.owe_regeneration()?;
        }
        if let Some(path) = &self.leftover
            && host.remove(path)?
        {
            log::info!(
                "removed {} (the bash version's, by its marker line): this config does not deploy it",
                path.display()
            );
        }
        Ok(())
    }

    /// After tuned's deploy and activation: owes a regeneration when tuned rewrote
    /// `/etc/tuned/bootcmdline` since GRUB was last generated, regenerates when owed and
    /// records what GRUB was generated from; [`Interrupt::Reboot`] when it regenerated.
    pub fn finish(&self, step: &Step) -> Result<Interrupt> {
        let host = &step.host;
        let mut ledger = Ledger::load(host, step.ctx.package_name())?;
        let Some(boot) = &self.boot else {
            if !ledger.changes.regenerate {
                ledger.set_grub(None)?;
            }
            return Ok(Interrupt::NoOp);
        };
        let target = self.target(host)?;
        if target.is_some() && ledger.changes.grub != target && !ledger.changes.regenerate {
            log::info!("{BOOTCMDLINE} changed since GRUB was last generated: GRUB is regenerated");
            ledger.owe_regeneration()?;
        }
        if !ledger.changes.regenerate {
            ledger.set_grub(target)?;
            return Ok(Interrupt::NoOp);
        }
        boot.regenerate(host)?;
        ledger.changes.grub = target;
        ledger.regenerated()?;
        log::info!(
            "GRUB regenerated for the services' drop-ins: the kernel arguments it now holds take effect at the next boot (needs a reboot)"
        );
        Ok(Interrupt::Reboot)
    }

    /// What the checks find unmet: GRUB generated from other arguments than the
    /// chain's and tuned's `/etc/tuned/bootcmdline` now.
    pub fn unmet(&self, step: &Step) -> Result<Vec<String>> {
        if !self.debian {
            return Ok(Vec::new());
        }
        let ledger = Ledger::load(&step.host, step.ctx.package_name())?;
        let target = self.target(&step.host)?;
        if target.is_none() || ledger.changes.grub == target {
            return Ok(Vec::new());
        }
        Ok(vec![format!(
            "GRUB was not regenerated for the kernel arguments {} hands it (the chain's [bootloader] options \
             or {BOOTCMDLINE} differ from those GRUB was last generated from); config regenerates it",
            list(&self.wanted.keys().cloned().collect::<Vec<_>>())
        )])
    }

    /// What GRUB is to be generated from: `None` where no drop-in is deployed.
    fn target(&self, host: &Host) -> Result<Option<BootInputs>> {
        if self.wanted.is_empty() {
            return Ok(None);
        }
        Ok(Some(BootInputs {
            args: self.args.clone(),
            bootcmdline: host
                .read(BOOTCMDLINE)?
                .map(|b| String::from_utf8_lossy(&b).into_owned()),
        }))
    }
}

/// uninstall's part, before anything is taken back: owes a regeneration when a
/// service's drop-in goes (saved first) and takes back the bash version's rke2 drop-in.
/// A Debian-family node without GRUB tools is not refused here (nothing on it can
/// regenerate, and uninstall must finish): the drop-ins go with a warning. Returns
/// whether tuned's own uninstall regenerates GRUB after removing its files (its record
/// has the chain's kernel arguments), so that [`uninstall_finish`] does not twice.
pub fn uninstall_prepare(step: &Step, catalog: &Catalog) -> Result<bool> {
    let host = &step.host;
    if !debian_family(step)? {
        return Ok(false);
    }
    let deployed = deployed_drop_ins(step)?;
    let leftover = bootloader_step::marked_leftover(host, catalog, &[], &deployed)?;
    if deployed.is_empty() && leftover.is_none() {
        return Ok(false);
    }
    let mut ledger = Ledger::load(host, step.ctx.package_name())?;
    match BootConfig::detect(host, Family::Debian) {
        Ok(_) => ledger.owe_regeneration()?,
        Err(e) => log::warn!(
            "{} go(es) without GRUB being regenerated: {e}",
            list(&deployed.iter().chain(&leftover).cloned().collect::<Vec<_>>())
        ),
    }
    if let Some(path) = &leftover
        && host.remove(path)?
    {
        log::info!("removed {} (the bash version's, by its marker line)", path.display());
    }
    let tuned: TunedState = step.state().load()?;
    Ok(tuned.bootloader.is_some_and(|b| !b.is_empty()))
}

/// uninstall's part after tuned's: regenerates GRUB when owed (unless tuned's uninstall
/// just did, `tuned_regenerated`) and forgets what GRUB was generated from.
pub fn uninstall_finish(step: &Step, tuned_regenerated: bool) -> Result<()> {
    let host = &step.host;
    let mut ledger = Ledger::load(host, step.ctx.package_name())?;
    let debian = debian_family(step)?;
    if ledger.changes.regenerate && debian {
        if !tuned_regenerated {
            BootConfig::detect(host, Family::Debian)?.regenerate(host)?;
        }
        log::info!("GRUB regenerated without the services' drop-ins: their kernel arguments go at the next boot");
        ledger.changes.grub = None;
        return ledger.regenerated();
    }
    ledger.set_grub(None)
}

/// Whether the step's node is of the Debian family, the one whose GRUB reads the
/// drop-ins and is regenerated here; a node of neither family is not (nothing here
/// regenerates its GRUB), a node without os-release is an error.
fn debian_family(step: &Step) -> Result<bool> {
    Ok(match step.family_if_known()? {
        Some(Family::Debian) => true,
        Some(Family::Rhel) | None => false,
    })
}

/// The services' GRUB drop-ins an earlier config deployed (tuned's record).
fn deployed_drop_ins(step: &Step) -> Result<Vec<PathBuf>> {
    let state: TunedState = step.state().load()?;
    Ok(state
        .footprint
        .files
        .into_iter()
        .filter(|p| super::is_drop_in(p))
        .collect())
}

/// The node's GRUB, refusing a Debian-family node without update-grub or grub-mkconfig.
fn detect_grub(host: &Host, drop_ins: &[PathBuf]) -> Result<BootConfig> {
    if host.which("update-grub").is_none() && host.which("grub-mkconfig").is_none() {
        let what = if drop_ins.is_empty() {
            "taking back this package's GRUB drop-in".to_string()
        } else {
            format!("{} (the service's kernel arguments)", list(drop_ins))
        };
        return Err(Error::action(format!(
            "{what} takes effect only when GRUB's configuration is regenerated, and this Debian-family node has \
             neither update-grub nor grub-mkconfig on PATH; nothing was changed. Install GRUB's tools (package \
             grub2-common), or run this node with a service that deploys no GRUB drop-in (none, bcm, oci)"
        )));
    }
    BootConfig::detect(host, Family::Debian)
}

/// The `[bootloader]` options of every profile of the chain, `<profile> [section] option=value`.
fn chain_args(rendered: &Rendered) -> Vec<String> {
    rendered
        .profiles
        .iter()
        .filter_map(|p| tuned::engine::Conf::parse(&p.text).ok().map(|c| (p, c)))
        .flat_map(|(p, c)| c.bootloader().into_iter().map(move |o| format!("{} {o}", p.name)))
        .collect()
}

fn list(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

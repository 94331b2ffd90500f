// SPDX-License-Identifier: Apache-2.0
//! What this node gets: the configMap read, the accelerator chosen (by name or
//! `auto`), the OS override or common fallback picked from `/etc/os-release`, the
//! catalog rendered, optional sysctls this kernel lacks left out, the container
//! runtime's drop-ins placed for the runtime units installed here, rke2's GRUB drop-in
//! decided for the node ([`crate::grub::bootloader_step`]). The result is the
//! tuned engine's request: profiles and `tuned_profile` in memory, plus files.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use skyhook_core::host::systemd::Systemd;
use skyhook_core::records::state::StateStore;
use skyhook_core::{ConfigMaps, Error, Host, Interrupt, Result, Step};

use crate::catalog::{Catalog, Choice, FileEntry, OsEntry, Rendered, without_sysctls};
use crate::input::Request;
use crate::{accelerator, main_conf};

/// The desired state of the node.
#[derive(Debug, Clone)]
pub struct Desired {
    /// The combination chosen.
    pub choice: Choice,
    /// The rendered profiles and files.
    pub rendered: Rendered,
    /// Whether SPCX congestion control is wanted (the `spcx_cc` key).
    pub spcx_cc: bool,
}

impl Desired {
    /// Reads the configMap and the node and renders the catalog; logs each choice.
    pub fn read(step: &Step, catalog: &Catalog) -> Result<Self> {
        let request = Request::read(&step.configmaps, &catalog.manifest)?;
        let accelerator = accelerator::choose(&request.accelerator, step, &catalog.accelerator_names())?;
        let os = step.os_release()?;
        let os = OsEntry {
            id: os.id(),
            version: os.version_id().to_string(),
        };
        match catalog.os_dir(&os) {
            Some(dir) => log::info!(
                "OS {} {}: the catalog's overrides in {dir} apply, the common profiles otherwise",
                os.id,
                os.version
            ),
            None => log::info!(
                "OS {} {}: the catalog has no override for it; the common profiles apply",
                os.id,
                os.version
            ),
        }
        let choice = Choice {
            accelerator,
            intent: request.intent,
            service: request.service,
            os: Some(os),
        };
        log_ignored(catalog, &choice, step);
        let mut rendered = catalog
            .render(&choice)
            .map_err(|e| Error::input(format!("configMap key {:?}: {e}", e.key())))?;
        drop_missing_sysctls(&step.host, &catalog.manifest.optional_sysctls, &mut rendered)?;
        place_drop_ins(&step.host, &mut rendered)?;
        crate::grub::bootloader_step::decide(step, &mut rendered)?;
        let chain: Vec<String> = rendered
            .profiles
            .iter()
            .map(|p| format!("{} ({})", p.name, p.source))
            .collect();
        log::info!(
            "tuned profile {} and its include chain: {}",
            rendered.active,
            chain.join(" → ")
        );
        Ok(Desired {
            choice,
            rendered,
            spcx_cc: request.spcx_cc,
        })
    }

    /// The tuned engine's request: each profile as a key, `tuned_profile` the active one.
    pub fn configmaps(&self) -> ConfigMaps {
        let profiles = self
            .rendered
            .profiles
            .iter()
            .map(|p| (p.name.clone(), p.text.clone().into_bytes()));
        let active = std::iter::once((
            tuned::engine::PROFILE_KEY.to_string(),
            self.rendered.active.clone().into_bytes(),
        ));
        ConfigMaps::from_entries(profiles.chain(active))
    }

    /// The chain's bootloader options as tuned's plan lists those of the active
    /// profiles (`active <profile> [section] option=value`), in the order tuned loads
    /// the chain (the base first), for tuned's refusal of unregistrable huge pages.
    pub fn bootloader_chain(&self) -> Vec<String> {
        self.rendered
            .profiles
            .iter()
            .rev()
            .filter_map(|p| tuned::engine::Conf::parse(&p.text).ok().map(|c| (p, c)))
            .flat_map(|(p, c)| {
                c.bootloader()
                    .into_iter()
                    .map(move |o| format!("active {} {o}", p.name))
            })
            .collect()
    }

    /// The tuned engine's whole request: [`Desired::configmaps`] and [`Desired::files`].
    pub fn engine_request(&self) -> tuned::engine::EngineRequest {
        tuned::engine::EngineRequest {
            configmaps: self.configmaps(),
            files: self.files(),
        }
    }

    /// The files deployed with the profiles, by host path.
    pub fn files(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        self.rendered
            .files
            .iter()
            .map(|(f, b)| (f.path.clone(), b.clone()))
            .collect()
    }

    /// The interrupt the files need when `host` does not hold them yet (read before
    /// config deploys them), each logged with when it takes effect.
    pub fn files_interrupt(&self, host: &Host) -> Result<Interrupt> {
        let mut needs = Interrupt::NoOp;
        for (file, bytes) in &self.rendered.files {
            if host.read(&file.path)?.as_deref() == Some(bytes.as_slice()) {
                continue;
            }
            log::info!("{} takes effect {}", file.path.display(), file.takes_effect);
            needs = needs.combine(if file.needs_reboot {
                Interrupt::Reboot
            } else {
                let running = running(host, &file.restart, &file.path)?;
                if running.is_empty() {
                    Interrupt::NoOp
                } else {
                    Interrupt::service(running)
                }
            });
        }
        Ok(needs)
    }
}

/// The services of `restart` to restart for `path`: all but those systemd says are
/// not running (those read the file when they start; restarting one would start it).
/// Without a running systemd (a chroot) all of them.
fn running(host: &Host, restart: &[String], path: &Path) -> Result<Vec<String>> {
    let systemd = Systemd::new(host);
    let mut out = Vec::new();
    for service in restart {
        if systemd.is_active(service)? == Some(false) {
            log::info!(
                "{service} is not running: it reads {} when it starts, so it is not restarted",
                path.display()
            );
        } else {
            out.push(service.clone());
        }
    }
    Ok(out)
}

/// Places each drop-in of the container runtime (a file with
/// [`FileEntry::drop_in_units`]) for this node: into `/etc/systemd/system/<unit>.d/`
/// of each of its units installed here, each copy restarting its own unit, or at its
/// `path` as the catalog gives it when none is installed (a node whose runtime comes
/// later, or a chroot). RKE2 and K3s start their own containerd from their unit, so a
/// drop-in for `containerd.service` alone would not reach it there (nodewright-packages
/// #134); an installed unit counts even when it has not started yet (tuned applies
/// profiles at boot, before the runtime starts). A unit entry with a `*`
/// (`k3s-*.service`: K3s installed with `INSTALL_K3S_NAME`) takes every installed unit
/// it matches, found by reading the unit directories.
fn place_drop_ins(host: &Host, rendered: &mut Rendered) -> Result<()> {
    let systemd = Systemd::new(host);
    let mut placed = Vec::new();
    for (entry, bytes) in std::mem::take(&mut rendered.files) {
        let mut installed: Vec<String> = Vec::new();
        for unit in &entry.drop_in_units {
            for found in systemd.installed_matching(unit)? {
                if !installed.contains(&found) {
                    installed.push(found);
                }
            }
        }
        let Some(name) = entry.path.file_name().filter(|_| !installed.is_empty()) else {
            placed.push((entry, bytes));
            continue;
        };
        log::info!(
            "{} goes to the container runtime units installed here: {}",
            name.to_string_lossy(),
            installed.join(", ")
        );
        for unit in installed {
            let service = unit.strip_suffix(".service").unwrap_or(&unit).to_string();
            let copy = FileEntry {
                path: Path::new("/etc/systemd/system").join(format!("{unit}.d")).join(name),
                takes_effect: format!("when {service} restarts (systemctl daemon-reload; systemctl restart {service})"),
                restart: vec![service],
                drop_in_units: Vec::new(),
                ..entry.clone()
            };
            placed.push((copy, bytes.clone()));
        }
    }
    rendered.files = placed;
    Ok(())
}

/// Says in the log that a self-contained accelerator ignores the intent and service the
/// configMap gives (the original's behaviour for `generic`).
fn log_ignored(catalog: &Catalog, choice: &Choice, step: &Step) {
    let Some(profile) = catalog.self_contained(&choice.accelerator) else {
        return;
    };
    for key in [crate::keys::INTENT_KEY, crate::keys::SERVICE_KEY] {
        if let Ok(Some(value)) = step.configmaps.text(key)
            && !value.trim().is_empty()
        {
            log::warn!(
                "configMap key {key:?} ({}) is ignored: accelerator {} uses the self-contained profile {profile}, whatever the intent and service",
                skyhook_core::error::excerpt(value.trim()),
                choice.accelerator
            );
        }
    }
}

/// Leaves out the optional sysctls this kernel lacks, with a warning naming the key
/// and the kernel. A host without `/proc/sys/kernel` (a chroot) cannot tell: they stay.
fn drop_missing_sysctls(host: &Host, optional: &[String], rendered: &mut Rendered) -> Result<()> {
    if !host.is_dir("/proc/sys/kernel") {
        return Ok(());
    }
    let missing: Vec<&str> = optional
        .iter()
        .map(String::as_str)
        .filter(|k| !host.exists(format!("/proc/sys/{}", k.replace('.', "/"))))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let kernel = host
        .read_to_string("/proc/sys/kernel/osrelease")?
        .map_or_else(|| "this kernel".to_string(), |k| format!("kernel {}", k.trim()));
    for p in &mut rendered.profiles {
        let kept = without_sysctls(&p.text, &missing);
        for key in &missing {
            if p.text
                .lines()
                .any(|l| l.split_once('=').is_some_and(|(k, _)| k.trim() == *key))
            {
                log::warn!(
                    "sysctl {key} (profile {}) is left out: {kernel} does not have it (an optional key of the catalog)",
                    p.name
                );
            }
        }
        p.text = kept;
    }
    Ok(())
}

/// The store of the tuned-main.conf originals.
pub(crate) fn main_conf_store(step: &Step) -> StateStore<'_> {
    StateStore::new(&step.host, main_conf::STATE_KIND, step.ctx.package_name())
}

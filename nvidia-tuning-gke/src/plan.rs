// SPDX-License-Identifier: Apache-2.0
//! The plan: the request read and validated, the accelerator chosen and the catalog
//! combination looked up (any problem: exit 2, nothing changed), and the input
//! handed to the tuning engine for that combination, in memory:
//! `sysctl.conf` (the profile's sysctl file, each optional key prefixed with `-`
//! so that tuning and systemd-sysctl skip it where the kernel lacks it) and, with
//! `USE_CONTAINERD=true` and a profile that has one, `service_containerd.conf`.

use std::collections::BTreeSet;

use skyhook_core::formats::sysctl;
use skyhook_core::platform::accelerator;
use skyhook_core::profile::CatalogError;
use skyhook_core::{ConfigMaps, Error, Result, Step};

use crate::KIND;
use crate::catalog::{GkeCatalog, Profile};
use crate::choice;
use crate::input::{self, Request};
use crate::optional::{self, OptionalKey};

/// A step's combination and tuning's input for it.
pub struct Prepared {
    /// The optional keys of the combination with their live values.
    pub optional: Vec<OptionalKey>,
    /// tuning's configMap.
    pub input: ConfigMaps,
}

/// The embedded catalog, or the action error saying the image is broken.
fn embedded_catalog() -> Result<&'static GkeCatalog> {
    GkeCatalog::embedded().map_err(|e| {
        Error::action(format!(
            "{e}: this image of {KIND} is broken (its catalog tests should have caught it); use another version"
        ))
    })
}

/// The value of `USE_CONTAINERD`; one that is not UTF-8 is kept (lossily) so that
/// it is refused by name rather than taken for unset.
fn use_containerd_env() -> Option<String> {
    std::env::var_os(input::USE_CONTAINERD).map(|v| v.to_string_lossy().into_owned())
}

/// Reads and validates the request, chooses the accelerator and looks up the
/// combination; logs what was chosen and why.
pub fn prepare(step: &Step) -> Result<Prepared> {
    let catalog = embedded_catalog()?;
    let request = Request::read(&step.configmaps, use_containerd_env().as_deref())?;
    let chosen = choice::choose(step, &request.accelerator, &catalog.accelerators())?;
    let profile = catalog
        .profile(&chosen.name, &request.intent)
        .map_err(|e| Error::input(format!("configMap key {:?}: {e}", input::INTENT)))?;
    log::info!("{chosen}: catalog profile {} ({})", profile.name(), profile.sysctl.path);
    log_containerd(&profile, request.use_containerd);
    Ok(Prepared {
        optional: optional::read(&step.host, &profile)?,
        input: tuning_input(&profile, request.use_containerd),
    })
}

/// [`crate::validate`]: the request, and the combination when the accelerator is
/// named (with `auto`, the intent must be one some accelerator has).
pub fn validate_offline(cm: &ConfigMaps, use_containerd: Option<&str>) -> Result<()> {
    let catalog = embedded_catalog()?;
    let request = Request::read(cm, use_containerd)?;
    let intent_error = |e: CatalogError| Error::input(format!("configMap key {:?}: {e}", input::INTENT));
    if request.accelerator == accelerator::AUTO {
        let all: BTreeSet<&str> = catalog
            .accelerators()
            .iter()
            .filter_map(|a| catalog.intents(a))
            .flatten()
            .collect();
        if !all.contains(request.intent.as_str()) {
            return Err(intent_error(CatalogError::unknown_intent(
                &request.intent,
                &Vec::from_iter(all),
            )));
        }
        return Ok(());
    }
    match catalog.profile(&request.accelerator, &request.intent) {
        Ok(_) => Ok(()),
        Err(e @ CatalogError::UnknownAccelerator { .. }) => Err(Error::input(format!(
            "configMap key {:?}: {e}, or auto",
            input::ACCELERATOR
        ))),
        Err(e) => Err(intent_error(e)),
    }
}

/// Says whether the combination's containerd drop-in is applied, and why.
fn log_containerd(profile: &Profile<'_>, use_containerd: bool) {
    match (&profile.containerd, use_containerd) {
        (Some(f), true) => log::info!("containerd drop-in {} applied ({}=true)", f.path, input::USE_CONTAINERD),
        (Some(f), false) => log::info!(
            "containerd drop-in {} not applied: set env {}=true on the package in the SCR to apply it",
            f.path,
            input::USE_CONTAINERD
        ),
        (None, true) => log::info!(
            "{}=true, but profile {} has no containerd drop-in: none applied",
            input::USE_CONTAINERD,
            profile.name()
        ),
        (None, false) => {}
    }
}

/// An empty configMap (uninstall works from the records alone).
pub fn no_input() -> ConfigMaps {
    ConfigMaps::from_entries(Vec::<(&str, &str)>::new())
}

/// tuning's key for the sysctl settings.
pub const SYSCTL_KEY: &str = "sysctl.conf";
/// tuning's key for the containerd drop-in.
pub const CONTAINERD_KEY: &str = "service_containerd.conf";

/// tuning's configMap for `profile`.
pub fn tuning_input(profile: &Profile<'_>, use_containerd: bool) -> ConfigMaps {
    let mut entries = vec![(SYSCTL_KEY, sysctl_text(profile))];
    if let (true, Some(dropin)) = (use_containerd, profile.containerd) {
        entries.push((CONTAINERD_KEY, without_licence(dropin.text)));
    }
    ConfigMaps::from_entries(entries)
}

/// The sysctl file as tuning writes it: a line naming the combination, then the
/// profile's lines with optional keys prefixed with `-`.
pub fn sysctl_text(profile: &Profile<'_>) -> String {
    let (assignments, _) = sysctl::parse(profile.sysctl.text);
    let optional_lines: Vec<usize> = assignments
        .iter()
        .filter(|a| !a.ignore_failure && profile.optional_reason(&a.key.dotted()).is_some())
        .map(|a| a.line)
        .collect();
    let mut out = format!(
        "# nvidia-tuning-gke catalog profile {} ({}); keys marked '-' are optional: skipped on kernels without them.\n",
        profile.name(),
        profile.sysctl.path
    );
    for (i, line) in profile.sysctl.text.lines().enumerate() {
        if is_licence(line) {
            continue;
        }
        if optional_lines.contains(&(i + 1)) {
            out.push('-');
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Whether `line` is the SPDX line of a catalog file (not copied to the node).
fn is_licence(line: &str) -> bool {
    line.starts_with("# SPDX-License-Identifier:")
}

/// `text` without its SPDX line.
fn without_licence(text: &str) -> String {
    text.lines()
        .filter(|l| !is_licence(l))
        .map(|l| format!("{l}\n"))
        .collect()
}

// SPDX-License-Identifier: Apache-2.0
//! The nvidia-tuned package: NVIDIA's tuned profiles per accelerator × workload
//! intent × cloud service × OS version, chosen per node, on the tuned package's
//! engine in process (`tuned::engine::run`, this package's work as its hooks). The configMap keys (`accelerator`, `intent`, `service`), the
//! profile names and include chain are the original's (see README.md).
//!
//! The package layout (DESIGN.md): [`input`] the configMap read, [`keys`] the keys' names, [`plan`] the tuned
//! request for this node (the accelerator chosen, the catalog rendered), [`apply`]
//! apply and config, [`checks`] the check modes, [`uninstall`] the removal,
//! [`review`] what lint asks of the package. The domain: [`catalog`](mod@catalog) the
//! embedded profile catalog, [`accelerator`] the node's accelerator, [`main_conf`] the
//! tuned-main.conf options, [`legacy`] what the bash version left, [`effective`] the
//! reviewable settings of each combination (`skyhook_core::profile::Catalog`),
//! [`host_steps`] the host changes beyond tuned profiles a service ships for an
//! accelerator (`oci` × `gb300`), [`grub`] the services' GRUB drop-ins (eks's and
//! aks's left to tuned on RHEL-like hosts, rke2's decided as upstream's step, GRUB
//! regenerated on Debian-family nodes), [`grub_d`] the refusal of a service's drop-in
//! still left on RHEL-like hosts (the oci × gb300 ACS and IOMMU arguments go on the
//! boot entries there instead), [`runtime_limits`] the container runtime's running
//! limits against its drop-in, [`sysctl_conflicts`] the chain's sysctls that a tuning
//! entry sets otherwise.

pub mod accelerator;
pub mod apply;
pub mod catalog;
pub mod checks;
pub mod effective;
pub mod grub;
pub mod grub_d;
pub mod host_steps;
pub mod input;
pub mod keys;
pub mod legacy;
pub mod main_conf;
pub mod plan;
pub mod review;
pub mod runtime_limits;
pub mod sysctl_conflicts;
pub mod uninstall;

use skyhook_core::runtime::run::Handler;
use skyhook_core::{ConfigMaps, Error, Mode, Package, Result};

use crate::catalog::Catalog;

pub use crate::effective::catalog;

/// Validates a configMap offline, as config reads it (the entry point of `skyhook-pkg
/// lint`): the keys, and for a named accelerator the catalog combination (common
/// profiles, or the first OS an OS-bound accelerator exists on). `Err(Error::Input)` lists every problem; `auto` is resolved on the node.
pub fn validate(configmaps: &ConfigMaps) -> Result<()> {
    let catalog = Catalog::embedded();
    let request = input::Request::read(configmaps, &catalog.manifest)?;
    if request.accelerator == keys::AUTO {
        return Ok(());
    }
    // Offline the OS is unknown: an accelerator that exists only on some OS versions
    // is rendered on the first of them (config checks the node's own OS).
    let os = catalog
        .accelerator_os(&request.accelerator)
        .and_then(|allowed| allowed.first().cloned());
    let choice = catalog::Choice {
        accelerator: request.accelerator,
        intent: request.intent,
        service: request.service,
        os,
    };
    catalog
        .render(&choice)
        .map(|_| ())
        .map_err(|e| Error::input(format!("configMap key {:?}: {e}", e.key())))
}

/// The nvidia-tuned package.
pub struct NvidiaTuned;

impl Package for NvidiaTuned {
    const KIND: &'static str = "nvidia-tuned";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    const MODES: &'static [(Mode, Handler)] = &[
        (Mode::Apply, apply::install),
        (Mode::ApplyCheck, checks::install_check),
        (Mode::Config, apply::config),
        (Mode::ConfigCheck, checks::config_check),
        (Mode::PostInterruptCheck, checks::post_interrupt_check),
        (Mode::Upgrade, apply::install),
        (Mode::UpgradeCheck, checks::install_check),
        (Mode::Uninstall, uninstall::uninstall),
        (Mode::UninstallCheck, uninstall::uninstall_check),
    ];

    const NEEDS_PERSISTENT_ETC: bool = true;
}

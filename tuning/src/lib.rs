// SPDX-License-Identifier: Apache-2.0
//! The tuning package: kernel parameters (`sysctl.conf`), user limits
//! (`ulimit.conf`), systemd service drop-ins (`service_<unit>.conf`) and kernel
//! arguments (`grub.conf`), declaratively: config makes the node match the
//! configMap exactly, the checks prove it, uninstall undoes it, and upgrade takes
//! over a node tuned by the bash package (1.x).
//!
//! One module per concern, in the package layout (DESIGN.md): [`input`] parses and
//! validates the whole configMap ([`sysctl`], [`ulimit`], [`dropin`], [`grub`],
//! [`modprobe`]), [`plan`] computes config's changes from it and the node before any
//! change, [`apply`] is config (the plan recorded, then carried out room by room,
//! then reported), [`checks`] the check modes, [`uninstall`] the removal, [`legacy`]
//! the bash package's leftovers and the upgrade, [`review`] what lint reads. The
//! rooms config passes through once each: [`live`] the kernel parameters set live
//! (read, set, put back, given back), [`files`] the package's files removed,
//! [`pam`] pam_limits in the session stack, [`dirs`] directories handed over between
//! entries, [`modules`] the running kernel's modules (those `modprobe.conf` keeps
//! out); the huge page sizes and reservations of `grub.conf` are core's
//! `boot::hugepages`. The records: [`state`] what this entry did, [`ledger`] what the
//! node's tuning entries share, [`owners`] who holds each kernel parameter, [`paths`]
//! where the files live and what each one is.

pub mod apply;
pub mod checks;
pub mod dirs;
pub mod dropin;
pub mod files;
pub mod grub;
pub mod input;
pub mod ledger;
pub mod legacy;
pub mod live;
pub mod modprobe;
pub mod modules;
pub mod owners;
pub mod pam;
pub mod paths;
pub mod plan;
pub mod review;
pub mod state;
pub mod sysctl;
pub mod ulimit;
pub mod uninstall;

use skyhook_core::runtime::run::Handler;
use skyhook_core::{ConfigMaps, Error, Mode, Outcome, Package, Result, Step};

pub use modprobe::PresetFile;
use paths::Paths;

/// A mode of the engine, given where the files go.
type EngineHandler = fn(&Step, &Paths) -> Result<Outcome>;

/// The engine's modes.
const ENGINE: &[(Mode, EngineHandler)] = &[
    (Mode::Config, apply::config),
    (Mode::ConfigCheck, checks::config_check),
    (Mode::PostInterruptCheck, checks::post_interrupt_check),
    (Mode::Upgrade, legacy::upgrade),
    (Mode::UpgradeCheck, legacy::upgrade_check),
    (Mode::Uninstall, uninstall::uninstall),
    (Mode::UninstallCheck, uninstall::uninstall_check),
];

/// Runs the engine's mode of `step` with the step's own file names.
fn own_files(step: &Step) -> Result<Outcome> {
    let mode = step.mode();
    match ENGINE.iter().find(|(m, _)| *m == mode) {
        Some((_, handler)) => handler(step, &Paths::for_step(step)),
        None => Err(Error::Mode(format!("the tuning engine has no mode {mode}"))),
    }
}

/// The tuning package.
pub struct Tuning;

impl Package for Tuning {
    const KIND: &'static str = "tuning";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    const MODES: &'static [(Mode, Handler)] = &[
        (Mode::Config, own_files),
        (Mode::ConfigCheck, own_files),
        (Mode::PostInterruptCheck, own_files),
        (Mode::Upgrade, own_files),
        (Mode::UpgradeCheck, own_files),
        (Mode::Uninstall, own_files),
        (Mode::UninstallCheck, own_files),
    ];
    const NEEDS_PERSISTENT_ETC: bool = true;
}

/// Runs tuning's handler for `step`'s mode with `input` in place of the step's
/// configMap: the entry point of a package that computes tuning's input (the keys
/// `sysctl.conf`, `service_<unit>.conf`, … in memory) instead of reading it from
/// `configmaps/` (nvidia-tuning-gke). The state is kept under `kind`, not tuning's,
/// so the two packages never share records. tuning's own refusal of hosts whose
/// `/etc` does not persist ([`Package::NEEDS_PERSISTENT_ETC`]) is the caller's
/// decision and is not applied here. A mode tuning does not implement is exit 2.
pub fn run_with_input(step: &Step, kind: &'static str, input: ConfigMaps) -> Result<Outcome> {
    run_preset(step, kind, input, &Preset::default())
}

/// What a package built on the engine fixes beyond its input.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Preset {
    /// The modprobe.d file `modprobe.conf` goes to, in place of the entry's
    /// `zz-skyhook-<name>-tuning.conf` (see [`PresetFile`]).
    pub modprobe: Option<PresetFile>,
    /// `ulimit.conf`'s limits for root too, on lines of the `root` domain after the
    /// `*` ones (limits.conf(5): `*` does not include root): nvidia-setup's unlimited
    /// locked memory, which upstream gave root as well.
    pub ulimit_root: bool,
}

/// [`run_with_input`] with the files `preset` names: the entry point of a preset
/// whose files keep the names of the package it replaces (copy-fail's
/// `/etc/modprobe.d/disable-algif.conf`), so that a node upgrades in place. Give
/// every mode, uninstall included, the same `preset`: it is how uninstall finds a
/// file the replaced package left.
pub fn run_preset(step: &Step, kind: &'static str, input: ConfigMaps, preset: &Preset) -> Result<Outcome> {
    let mode = step.mode();
    let handler = ENGINE
        .iter()
        .find(|(m, _)| *m == mode)
        .map(|(_, h)| *h)
        .ok_or_else(|| Error::Mode(format!("the tuning engine has no mode {mode}")))?;
    let step = step.derived(kind, input);
    let paths = Paths {
        modprobe_preset: preset.modprobe.clone(),
        ulimit_root: preset.ulimit_root,
        ..Paths::for_step(&step)
    };
    handler(&step, &paths)
}

#[cfg(test)]
mod tests {
    use super::*;
    use skyhook_core::Host;
    use skyhook_core::host::command::RefusingRunner;

    #[test]
    fn run_with_input_refuses_a_mode_tuning_lacks_as_exit_2() {
        let ctx = skyhook_core::Context::from_vars(Mode::Apply, |n| match n {
            "SKYHOOK_DIR" => Some("/copy".into()),
            "SKYHOOK_RESOURCE_ID" => Some("scr_gpu_1.0.0".into()),
            _ => None,
        })
        .unwrap();
        let host = Host::new("/nonexistent-root", RefusingRunner::new("/nonexistent-root"));
        let step = Step::new("other", ctx, host, ConfigMaps::from_entries(Vec::<(&str, &str)>::new()));
        let e = run_with_input(
            &step,
            "other",
            ConfigMaps::from_entries([("sysctl.conf", "vm.swappiness=1\n")]),
        )
        .unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert_eq!(e.to_string(), "the tuning engine has no mode apply");
    }
}

// SPDX-License-Identifier: Apache-2.0
//! The tuning engine in process, for the settings this package makes on it (aks's
//! locked memory, eks's inotify limits): each under a kind of its own, so its
//! records live apart from this package's `state.json` and from each other's.

use skyhook_core::{ConfigMaps, Mode, Outcome, Result, Step};

/// One use of the engine: its kind, its input and its preset.
pub struct Use {
    /// The kind its records live under (`nvidia-setup-aks`).
    pub kind: &'static str,
    /// The engine's configMap.
    pub input: ConfigMaps,
    /// The engine's preset.
    pub preset: tuning::Preset,
}

impl Use {
    /// Runs the engine's `mode` (config for apply, config-check for the checks,
    /// uninstall and its check) on a step of this use's kind.
    pub fn run(&self, step: &Step, mode: Mode) -> Result<Outcome> {
        let mut engine_step = step.derived(self.kind, self.input.clone());
        engine_step.ctx.mode = mode;
        tuning::run_preset(&engine_step, self.kind, self.input.clone(), &self.preset)
    }

    /// The engine's `mode` where it recorded something; else only the directories
    /// an engine's uninstall killed half way left empty go (uninstall).
    pub fn run_if_recorded(&self, step: &Step, mode: Mode) -> Result<Outcome> {
        let engine_step = step.derived(self.kind, self.input.clone());
        if engine_step.state().exists() {
            return self.run(step, mode);
        }
        if mode == Mode::Uninstall {
            engine_step.state().prune()?;
        }
        Ok(Outcome::done())
    }
}

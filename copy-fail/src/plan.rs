// SPDX-License-Identifier: Apache-2.0
//! The plan: what the mitigation asks of the tuning engine: the module kept out, the
//! modprobe.d file that does it (the bash copy-fail's name and content, so that a
//! node it mitigated is taken over in place), and tuning's input: a `modprobe.conf`
//! holding that one line.

use std::path::PathBuf;

use skyhook_core::{ConfigMaps, Outcome, Result, Step};
use tuning::{Preset, PresetFile};

use crate::KIND;

/// The vulnerability.
pub const CVE: &str = "CVE-2026-31431";
/// The kernel module through which it is reached (AF_ALG AEAD sockets).
pub const MODULE: &str = "algif_aead";
/// The modprobe.d file that keeps it out.
pub const FILE: &str = "/etc/modprobe.d/disable-algif.conf";
/// The one line the file holds.
pub const LINE: &str = "install algif_aead /bin/false";
/// The kernel argument that keeps the module out of a kernel it is built into.
pub const BUILT_IN_ARGUMENT: &str = "initcall_blacklist=algif_aead_init";

/// The file's whole content, as the bash package wrote it (the line and a newline).
pub fn content() -> String {
    format!("{LINE}\n")
}

/// The engine's preset: `modprobe.conf` goes to [`FILE`] holding exactly [`content`].
pub fn preset() -> Preset {
    Preset {
        modprobe: Some(PresetFile {
            path: PathBuf::from(FILE),
            text: content(),
        }),
        ..Preset::default()
    }
}

/// tuning's configMap for the mitigation.
pub fn input() -> ConfigMaps {
    ConfigMaps::from_entries([(tuning::modprobe::KEY, content())])
}

/// No input: uninstall works from the records (and the preset) alone.
pub fn no_input() -> ConfigMaps {
    ConfigMaps::from_entries(Vec::<(&str, &str)>::new())
}

/// Runs the engine's mode of `step` with the mitigation's input and preset.
pub fn on_engine(step: &Step) -> Result<Outcome> {
    tuning::run_preset(step, KIND, input(), &preset())
}

/// Runs the engine's mode of `step` with no input: uninstall works from the
/// records (and the preset) alone.
pub fn on_engine_without_input(step: &Step) -> Result<Outcome> {
    tuning::run_preset(step, KIND, no_input(), &preset())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_input_is_one_line_the_engine_accepts_and_keeps_the_module_out_with() {
        let desired = tuning::input::Desired::parse(&input()).unwrap();
        let conf = desired.modprobe.unwrap();
        let kept: Vec<&str> = conf.kept_out().iter().map(|l| l.module.as_str()).collect();
        assert_eq!(kept, [MODULE]);
        assert_eq!(content(), "install algif_aead /bin/false\n");
    }
}

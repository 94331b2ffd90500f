// SPDX-License-Identifier: Apache-2.0
//! The shellscript package: runs the SCR's own scripts in every lifecycle stage.
//!
//! Each of the ten modes runs the configMap key named after it (`apply.sh`,
//! `apply_check.sh`, … `uninstall_check.sh`); a stage without its key has nothing to
//! run and succeeds. The script's exit code is the step's.
//!
//! The package layout (DESIGN.md), where every mode runs the SCR's script: [`input`]
//! (the stage's script, its key and shebang; the time limit and grace period from the
//! SCR's env), [`stage`] (every mode: run the script, report), [`interpreter`] (which
//! program runs it), [`supervise`] (the child process and its whole tree: signals,
//! limits, leftovers), [`kept`] (the uninstall scripts kept on the node for older
//! operators, which uninstall without the configMap), [`review`] (what lint reads).

pub mod input;
pub mod interpreter;
pub mod kept;
pub mod review;
pub mod stage;
pub mod supervise;

use skyhook_core::runtime::run::Handler;
use skyhook_core::{Mode, Package};

use crate::stage::run;

/// Exit code when the script ran past its time limit (as `timeout(1)`).
pub const EXIT_TIME_LIMIT: i32 = 124;
/// Exit code when the interpreter exists but cannot be executed (as shells do).
pub const EXIT_CANNOT_EXECUTE: i32 = 126;
/// Exit code when the interpreter is not installed (as shells and `env` do).
pub const EXIT_NOT_FOUND: i32 = 127;

/// The shellscript package.
pub struct Shellscript;

impl Package for Shellscript {
    const KIND: &'static str = "shellscript";
    const VERSION: &'static str = env!("CARGO_PKG_VERSION");
    const MODES: &'static [(Mode, Handler)] = &[
        (Mode::Apply, run),
        (Mode::ApplyCheck, run),
        (Mode::Config, run),
        (Mode::ConfigCheck, run),
        (Mode::PostInterrupt, run),
        (Mode::PostInterruptCheck, run),
        (Mode::Upgrade, run),
        (Mode::UpgradeCheck, run),
        (Mode::Uninstall, run),
        (Mode::UninstallCheck, run),
    ];
    // The step is the SCR's own script, which may run for hours and may itself run
    // other packages' steps: it never holds the node lock.
    const TAKES_NODE_LOCK: bool = false;
}

// SPDX-License-Identifier: Apache-2.0
//! Running the script as a supervised child process, with the project's one
//! supervisor ([`skyhook_core::host::process`]), set the way this package promises:
//!
//! - the script's output is the step's own (inherited: it reaches the agent as it
//!   is written, unbuffered, each stream apart and in order, bytes unchanged);
//! - SIGTERM and SIGINT to the step are passed on to every process of the script's
//!   tree; the time limit stops the tree the same way; what has not ended after the
//!   grace period is killed (SIGKILL);
//! - processes the script leaves running when it ends (daemons, `setsid`, double
//!   forks) are stopped too, named in the log: a step leaves no root process behind.

use std::io;
use std::process::Command;

use skyhook_core::host::process::{self, Limit, Output, PassOn, Supervision};

pub use skyhook_core::host::process::{Ended, Stop};

use crate::input::settings::{self, Settings};

/// Runs `command` (program, arguments, environment, working directory set by the
/// caller) under supervision; returns how it ended once no process of its tree is
/// left. An `Err` means it could not be started.
pub fn run(command: Command, settings: &Settings) -> io::Result<Ended> {
    process::run(command, &supervision(settings))
}

/// The supervision of the script with these settings.
pub fn supervision(settings: &Settings) -> Supervision {
    Supervision {
        what: "the script".into(),
        pass_on: PassOn::Tree,
        time_limit: settings.timeout.as_ref().map(|t| Limit {
            duration: t.duration,
            label: t.to_string(),
        }),
        grace: Limit {
            duration: settings.grace.duration,
            label: format!(
                "{} ({})",
                settings::seconds(settings.grace.duration),
                settings.grace.var
            ),
        },
        output: Output::Inherit,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_supervision_names_the_variables_the_operator_set() {
        let s = Settings::from_vars(|name| match name {
            settings::TIMEOUT_VAR => Some("30m".into()),
            settings::GRACE_VAR => Some("0.5".into()),
            _ => None,
        })
        .unwrap();
        let how = supervision(&s);
        assert_eq!(how.pass_on, PassOn::Tree);
        let limit = how.time_limit.unwrap();
        assert_eq!(limit.duration, Duration::from_secs(1800));
        assert_eq!(limit.label, "SHELLSCRIPT_TIMEOUT=30m (1800 s)");
        assert_eq!(how.grace.duration, Duration::from_millis(500));
        assert_eq!(how.grace.label, "0.5 s (SHELLSCRIPT_GRACE_PERIOD)");
    }
}

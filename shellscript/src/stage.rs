// SPDX-License-Identifier: Apache-2.0
//! Every stage: the script of the step's stage ([`crate::input::script`]) run under
//! the package's supervision ([`crate::supervise`]), with its time limit and grace
//! period ([`crate::input::settings`]); its exit code is the step's, and each stage
//! ends with one report line.

use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use skyhook_core::host::command::{SYSTEM_PATH, shell_quote};
use skyhook_core::host::process::{exit_code, signal_exit_code, signal_name, signal_of_exit_code};
use skyhook_core::{Error, Mode, Outcome, Result, Step};

use crate::input::script::{self, Content};
use crate::input::settings::Settings;
use crate::interpreter::{self, Interpreter};
use crate::kept;
use crate::supervise::{self, Ended, Stop};
use crate::{EXIT_CANNOT_EXECUTE, EXIT_NOT_FOUND, EXIT_TIME_LIMIT};

/// Every stage: runs the script of the step's stage, if there is one.
pub fn run(step: &Step) -> Result<Outcome> {
    let key = script::key(step.mode());
    let report = Report {
        mode: step.mode(),
        key: &key,
        started: Instant::now(),
    };
    kept::refresh(step)?;
    let outcome = run_stage(step, &report).inspect_err(|e| {
        let outcome = if e.exit_code() == 2 { "refused" } else { "failed" };
        report.done("none", e.exit_code(), outcome);
    })?;
    if step.mode() == Mode::UninstallCheck && outcome.exit_code == 0 {
        kept::forget(step)?;
    }
    Ok(outcome)
}

/// Runs the script of the step's stage, if there is one.
fn run_stage(step: &Step, report: &Report) -> Result<Outcome> {
    let settings = Settings::from_env()?;
    let (mode, key) = (report.mode, report.key);
    let from_configmap = step
        .configmaps
        .bytes(key)
        .map(|raw| (raw.to_vec(), step.configmaps.path(key)));
    let Some((raw, script_path)) = from_configmap.map_or_else(|| kept::script(step), |s| Ok(Some(s)))? else {
        let misses = script::near_misses(mode, step.configmaps.keys());
        absent(&format!(
            "{LEGACY_ABSENT} {}: no configMap key {key:?}, so stage {mode} has nothing to run{}",
            step.configmaps.path(key).display(),
            if misses.is_empty() {
                String::new()
            } else {
                format!(
                    "; the configMap has {}, which is not the key this stage runs (keys are \
                         <stage>.sh with underscores: {key})",
                    misses.iter().map(|k| format!("{k:?}")).collect::<Vec<_>>().join(", ")
                )
            }
        ));
        return Ok(report.done("none", 0, "absent"));
    };
    let shebang = match script::inspect(key, &raw)? {
        Content::Empty => {
            log::warn!("configMap key {key:?} is empty (only blanks, if anything): stage {mode} has nothing to run");
            return Ok(report.done("none", 0, "empty"));
        }
        Content::Runnable(shebang) => shebang,
    };
    let interpreter = match interpreter::resolve(&step.host, key, shebang.as_ref())? {
        Ok(i) => i,
        Err(missing) => {
            log::error!("{}; the script was not run", missing.message);
            return Ok(report.done(&missing.name, EXIT_NOT_FOUND, "interpreter-missing"));
        }
    };
    let command = command(step, &interpreter, &script_path);
    log::info!(
        "running {key} under {}{} in {}",
        interpreter.name,
        match &settings.timeout {
            Some(t) => format!(", time limit {t}"),
            None => String::new(),
        },
        step.ctx.skyhook_dir.display()
    );
    match supervise::run(command, &settings) {
        Ok(ended) => Ok(report.ended(&interpreter, &ended, &settings)),
        Err(e) => {
            let code = match e.kind() {
                std::io::ErrorKind::NotFound => EXIT_NOT_FOUND,
                std::io::ErrorKind::PermissionDenied => EXIT_CANNOT_EXECUTE,
                _ if e.raw_os_error() == Some(nix::libc::ENOEXEC) => EXIT_CANNOT_EXECUTE,
                _ => return Err(Error::action(format!("cannot start {}: {e}", interpreter.name))),
            };
            log::error!(
                "cannot start the interpreter {} ({}) for {key}: {e}; the script was not run",
                interpreter.name,
                interpreter.program.display()
            );
            Ok(report.done(&interpreter.name, code, "not-started"))
        }
    }
}

/// How the bash package began the line it printed on stdout for a stage without a
/// script, followed by the script's path: alerts written for it may match it.
pub const LEGACY_ABSENT: &str = "Could not find file";

/// Says on stdout, where the bash package said it, that the stage has no script.
/// Nothing is left to do if stdout is gone, so that is only logged.
fn absent(line: &str) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = writeln!(out, "{line}").and_then(|()| out.flush()) {
        log::warn!("cannot write to stdout ({e}): {line}");
    }
}

/// The script's command line: `<interpreter> [<shebang argument>] <script> <stage>`,
/// in the copy dir, with the step's whole environment.
fn command(step: &Step, interpreter: &Interpreter, script: &Path) -> Command {
    let mut c = Command::new(&interpreter.program);
    c.args(interpreter.arg.iter())
        .arg(script)
        // The bash package sourced the script from a wrapper whose `$1` was the stage.
        .arg(step.mode().underscored())
        .current_dir(&step.ctx.skyhook_dir)
        .env("SKYHOOK_DIR", &step.ctx.skyhook_dir)
        .env("STEP_ROOT", &step.ctx.step_root);
    if std::env::var_os("PATH").is_none() {
        c.env("PATH", SYSTEM_PATH.join(":"));
    }
    c
}

/// The end-of-run report: one line with mode, script key, interpreter, exit code
/// and duration, plus what happened.
struct Report<'a> {
    mode: Mode,
    key: &'a str,
    started: Instant,
}

impl Report<'_> {
    /// Reports the run of `interpreter` and returns the step's outcome.
    fn ended(&self, interpreter: &Interpreter, ended: &Ended, settings: &Settings) -> Outcome {
        let own = exit_code(&ended.status);
        let key = self.key;
        let (code, what) = match ended.stop {
            Some(Stop::TimeLimit) => {
                let limit = settings.timeout.as_ref().map(ToString::to_string).unwrap_or_default();
                log::error!(
                    "{key} exceeded its time limit {limit} and was stopped{}; exit code {EXIT_TIME_LIMIT}",
                    if ended.killed {
                        " (killed after the grace period)"
                    } else {
                        ""
                    }
                );
                (EXIT_TIME_LIMIT, "time-limit".to_string())
            }
            Some(Stop::Signal(sig)) => {
                let code = signal_exit_code(sig as i32);
                log::error!(
                    "{key} was stopped: the step received {sig} and passed it on{}; the script {}; exit code {code}",
                    if ended.killed {
                        ", then killed it after the grace period"
                    } else {
                        ""
                    },
                    describe(&ended.status)
                );
                (code, format!("stopped-by-{sig}"))
            }
            None => match ended.status.code() {
                Some(c) => {
                    if let Some(sig) = signal_of_exit_code(c) {
                        log::info!(
                            "{key} exited with code {c}, which shells use for a command killed by {}",
                            signal_name(sig)
                        );
                    }
                    (c, "exited".to_string())
                }
                None => {
                    log::error!(
                        "{key} {} (not sent by this step); exit code {own}",
                        describe(&ended.status)
                    );
                    let name = signal_of_exit_code(own).map_or_else(String::new, signal_name);
                    (own, format!("killed-by-{name}").replace(' ', "-"))
                }
            },
        };
        self.log(&interpreter.name, code, ended.duration, &what);
        Outcome::exit(code)
    }

    /// Reports a run that ended before any script ran.
    fn done(&self, interpreter: &str, code: i32, what: &str) -> Outcome {
        self.log(interpreter, code, self.started.elapsed(), what);
        Outcome::exit(code)
    }

    fn log(&self, interpreter: &str, code: i32, took: Duration, what: &str) {
        let level = if code == 0 { log::Level::Info } else { log::Level::Error };
        log::log!(
            level,
            "shellscript report: mode={} script={} interpreter={} exit_code={code} duration={:.3}s outcome={what}",
            self.mode,
            shell_quote(self.key),
            shell_quote(interpreter),
            took.as_secs_f64()
        );
    }
}

/// "exited with code 0" or "was killed by signal 9 (SIGKILL)".
fn describe(status: &std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => format!("exited with code {c}"),
        (None, Some(s)) => format!("was killed by signal {s} ({})", signal_name(s)),
        _ => "ended".into(),
    }
}

// SPDX-License-Identifier: Apache-2.0
//! The entry point of every package binary: `<binary> <mode>` → the package's
//! handler → a report → the exit code (0 success; 1 a check or an action failed;
//! 2 bad input or an unknown mode). Logs are plain lines (`info: …`) on stderr,
//! level from `SKYHOOK_LOG` (error, warn, info, debug, trace; default info).
//! A failure report is bounded (about 64 KiB at most, see [`crate::error`]).
//! `--help` and `--version` print to stdout; when stdout cannot be written (a full
//! disk, `/dev/full`) they exit 1 with a message on stderr, never a panic.
//!
//! A package crate implements [`Package`] and its `main.rs` is one line:
//! `skyhook_core::package_main!(tuning::Tuning);`

use std::ffi::OsString;
use std::io::Write;
use std::sync::OnceLock;
use std::time::Instant;

use crate::error::{Error, MAX_MESSAGE_BYTES, Result, bounded_list, excerpt, truncate};
use crate::host::Host;
use crate::os::distro::{Family, OsRelease};
use crate::records::state::StateStore;
use crate::runtime::configmap::ConfigMaps;
use crate::runtime::context::Context;
use crate::runtime::interrupt::Interrupt;
use crate::runtime::lock::{self, NodeLock};
use crate::runtime::mode::{Mode, UnknownMode};
use crate::runtime::node_metadata::{self, NodeMetadata};

/// What runs one mode of a package.
pub type Handler = fn(&Step) -> Result<Outcome>;

/// A Skyhook package: its identity and its table of modes.
pub trait Package {
    /// The package kind (`tuning`): names the binary, the state directory and the logs.
    const KIND: &'static str;
    /// The package version (the crate's version, equal to config.json's).
    const VERSION: &'static str;
    /// The package as a table: every mode it implements with its handler, listed
    /// once; any other mode is refused with exit 2. Handlers validate all input
    /// before changing the host.
    const MODES: &'static [(Mode, Handler)];
    /// Whether the package's changes live in `/etc` across reboots, so that a host
    /// whose `/etc` does not persist (GKE's Container-Optimized OS) is refused before
    /// any mode runs ([`crate::os::distro::stateless_etc`]).
    const NEEDS_PERSISTENT_ETC: bool = false;
    /// Whether its action modes hold the node lock ([`crate::runtime::lock`]) while
    /// they run. Every package that changes the node does; shellscript, whose step is
    /// the SCR's own script (which may run for hours), does not.
    const TAKES_NODE_LOCK: bool = true;
    /// Commands the binary answers beside the modes, for what the package installs
    /// on the node to run later (a boot unit's `ExecStart`, nvidia-setup's
    /// `assemble-instance-storage`): the word, alone on the command line, and what
    /// it does on the host. They run without a step's environment and hold no lock.
    const COMMANDS: &'static [(&'static str, Command)] = &[];
}

/// A command of [`Package::COMMANDS`].
pub type Command = fn(&Host) -> Result<()>;

/// The modes `P` implements, in the order of its table.
pub fn modes_of<P: Package>() -> Vec<Mode> {
    P::MODES.iter().map(|(m, _)| *m).collect()
}

/// The handler `P` has for `mode`.
fn handler_of<P: Package>(mode: Mode) -> Option<Handler> {
    P::MODES.iter().find(|(m, _)| *m == mode).map(|(_, h)| *h)
}

/// Everything a package handler works with.
pub struct Step {
    kind: &'static str,
    /// The step's environment.
    pub ctx: Context,
    /// The machine being changed.
    pub host: Host,
    /// The configMap, read once.
    pub configmaps: ConfigMaps,
    /// The host's os-release, read at the first question and kept for the step: the
    /// distribution and its family are decided once ([`Step::family`]).
    os: OnceLock<OsRelease>,
}

impl Step {
    /// A step of package `kind` (for tests and tools; binaries use [`main`]).
    pub fn new(kind: &'static str, ctx: Context, host: Host, configmaps: ConfigMaps) -> Self {
        Step {
            kind,
            ctx,
            host,
            configmaps,
            os: OnceLock::new(),
        }
    }

    /// A step of package `kind` on this step's context and host with `configmaps`: a
    /// package that drives another's engine in process (nvidia-tuned on tuned's,
    /// nvidia-tuning-gke and copy-fail on tuning's). The distribution this step has
    /// read goes with it, so the family stays decided once.
    pub fn derived(&self, kind: &'static str, configmaps: ConfigMaps) -> Self {
        Step {
            kind,
            ctx: self.ctx.clone(),
            host: self.host.clone(),
            configmaps,
            os: self.os.clone(),
        }
    }

    /// The mode being run.
    pub fn mode(&self) -> Mode {
        self.ctx.mode
    }

    /// The package kind.
    pub fn kind(&self) -> &'static str {
        self.kind
    }

    /// This package's persistent state on the host (per kind and SCR package name).
    pub fn state(&self) -> StateStore<'_> {
        StateStore::new(&self.host, self.kind, self.ctx.package_name())
    }

    /// The host's os-release, read once per step (a host with neither
    /// `/etc/os-release` nor `/usr/lib/os-release` is an error, asked again each time).
    pub fn os_release(&self) -> Result<&OsRelease> {
        if let Some(os) = self.os.get() {
            return Ok(os);
        }
        let os = OsRelease::read(&self.host)?;
        Ok(self.os.get_or_init(|| os))
    }

    /// The host's distribution family, the one answer every package matches
    /// exhaustively: an unreadable os-release or a distribution of neither family is
    /// an error naming what was found ([`OsRelease::family`]).
    pub fn family(&self) -> Result<Family> {
        self.os_release()?.family()
    }

    /// The family, `None` for a distribution of neither family, for the decisions
    /// that treat such a host as "of no family this package acts on" rather than
    /// refusing it; an unreadable os-release is still an error.
    pub fn family_if_known(&self) -> Result<Option<Family>> {
        Ok(self.os_release()?.known_family())
    }

    /// The node metadata the agent wrote into the copy dir (labels, annotations, the
    /// SCR's packages): empty when absent, a warning when malformed.
    pub fn node_metadata(&self) -> NodeMetadata {
        NodeMetadata::load(&self.ctx.skyhook_dir.join(node_metadata::DIR))
    }
}

/// How a successful run ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome {
    /// The exit code (0 unless the package passes another one through, as
    /// shellscript does with its script's).
    pub exit_code: i32,
    /// The interrupt the change needs; reported at the end of the run.
    pub interrupt: Option<Interrupt>,
}

impl Outcome {
    /// Success, nothing more to say.
    pub fn done() -> Self {
        Outcome::default()
    }

    /// Ends with `code` (passed through from a child process).
    pub fn exit(code: i32) -> Self {
        Outcome {
            exit_code: code,
            interrupt: None,
        }
    }

    /// Success; the change needs `interrupt` to take effect.
    pub fn needs(interrupt: Interrupt) -> Self {
        Outcome {
            exit_code: 0,
            interrupt: Some(interrupt),
        }
    }
}

/// Sets up plain-line logging: `level: message` on stderr, level from `SKYHOOK_LOG`.
pub fn init_logging() {
    let mut builder = env_logger::Builder::new();
    builder.filter_level(log::LevelFilter::Info);
    if let Ok(spec) = std::env::var("SKYHOOK_LOG") {
        builder.parse_filters(&spec);
    }
    builder
        .format(|buf, record| {
            let level = record.level().as_str().to_ascii_lowercase();
            writeln!(buf, "{level}: {}", record.args())
        })
        .target(env_logger::Target::Stderr)
        .init();
}

/// The process entry point of a package binary.
pub fn main<P: Package>(package: P) -> ! {
    init_logging();
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let code = execute(&package, &args, Host::from_env());
    std::process::exit(code)
}

/// Runs `package` for the command-line `args` on `host`, reporting the result;
/// returns the exit code.
pub fn execute<P: Package>(package: &P, args: &[OsString], host: Host) -> i32 {
    if let [word] = args
        && let Some((name, command)) = P::COMMANDS.iter().find(|(name, _)| word == name)
    {
        return run_command::<P>(name, *command, &host);
    }
    let mode = match parse_args::<P>(args) {
        Ok(mode) => mode,
        Err(code) => return code,
    };
    run_mode(package, mode, host)
}

/// The mode named by `args`, or the exit code when there is none to run:
/// `--help`/`--version` answered (0, or 1 when stdout cannot be written), a bad
/// argument (2).
fn parse_args<P: Package>(args: &[OsString]) -> std::result::Result<Mode, i32> {
    let usage = || {
        format!(
            "usage: {} <mode>\n  modes: {}\n  (the Skyhook agent runs this with the arguments in config.json)",
            P::KIND,
            modes_of::<P>()
                .iter()
                .map(|m| m.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let arg = match args {
        [arg] => arg,
        _ => {
            let got: Vec<String> = args.iter().take(8).map(|a| excerpt(&a.to_string_lossy())).collect();
            log::error!(
                "expected exactly one argument, the mode; got {} argument(s): [{}]\n{}",
                args.len(),
                got.join(", "),
                usage()
            );
            return Err(2);
        }
    };
    let Some(arg) = arg.to_str() else {
        log::error!(
            "the mode argument {} is not valid UTF-8; expected one of the mode names\n{}",
            excerpt(&arg.to_string_lossy()),
            usage()
        );
        return Err(2);
    };
    match arg {
        "--version" | "-V" => Err(print_stdout(&format!("{} {}", P::KIND, P::VERSION))),
        "--help" | "-h" => Err(print_stdout(&usage())),
        mode => mode.parse::<Mode>().map_err(|_| {
            log::error!("{}", unknown_mode::<P>(mode));
            2
        }),
    }
}

/// The error for `given`, which names no mode: an excerpt of it, and the modes
/// `P` implements (not all ten: those are the ones the operator may run it in).
fn unknown_mode<P: Package>(given: &str) -> UnknownMode {
    let given = match given.char_indices().nth(64) {
        Some((end, _)) => format!("{}… ({} bytes)", &given[..end], given.len()),
        None => given.to_string(),
    };
    UnknownMode {
        given,
        expected: modes_of::<P>(),
    }
}

/// Prints `text` and a newline on stdout: 0, or 1 (with a message) when it fails.
fn print_stdout(text: &str) -> i32 {
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{text}").and_then(|()| out.flush()) {
        Ok(()) => 0,
        Err(e) => {
            log::error!("cannot write to stdout: {e}");
            1
        }
    }
}

/// Runs `mode` of `package` on `host` and reports how it ended; returns the exit code.
fn run_mode<P: Package>(_package: &P, mode: Mode, host: Host) -> i32 {
    let Some(handler) = handler_of::<P>(mode) else {
        log::error!(
            "{} {} does not implement mode {mode}; it implements: {}. \
             Check that config.json maps {mode} to this package's own binary",
            P::KIND,
            P::VERSION,
            if P::MODES.is_empty() {
                "no mode yet".to_string()
            } else {
                modes_of::<P>()
                    .iter()
                    .map(|m| m.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        );
        return 2;
    };
    let started = Instant::now();
    let result = Context::from_env(mode).and_then(|ctx| {
        log::info!(
            "{} {} {mode} for package {:?} (resource {}), copy dir {}{}",
            P::KIND,
            P::VERSION,
            ctx.package_name(),
            ctx.resource.resource,
            ctx.skyhook_dir.display(),
            if host.root() == std::path::Path::new("/") {
                String::new()
            } else {
                format!(", host root {}", host.root().display())
            }
        );
        if P::NEEDS_PERSISTENT_ETC
            && let Some(evidence) = crate::os::distro::stateless_etc(&host)?
        {
            return Err(Error::action(format!(
                "this node's /etc does not survive a reboot ({evidence}): {} would report changes that \
                 vanish at the next boot, so it changes nothing here. On GKE Container-Optimized OS use \
                 live settings that the operator re-applies instead (the approach of nvidia-tuning-gke: \
                 sysctl values applied live with a `service` interrupt on systemd-sysctl), and keep this \
                 package off these nodes with the SCR's nodeSelectors",
                P::KIND
            )));
        }
        let configmaps = ConfigMaps::load(&ctx.configmap_dir())?;
        let _lock = if P::TAKES_NODE_LOCK && !mode.is_check() {
            let holder = format!(
                "{} {} {mode} for package {:?} (pid {})",
                P::KIND,
                P::VERSION,
                ctx.package_name(),
                std::process::id()
            );
            Some(NodeLock::acquire(&host, &holder, lock::wait_from_env()?)?)
        } else {
            None
        };
        let step = Step::new(P::KIND, ctx, host, configmaps);
        if mode.is_check() || !P::TAKES_NODE_LOCK {
            return handler(&step);
        }
        // An action that fails part way puts back what it had changed (see
        // crate::host::journal); the commands it ran stay run.
        step.host.begin_journal();
        let result = handler(&step);
        if result.is_err() {
            let undone = step.host.rollback();
            if undone > 0 {
                log::warn!(
                    "{} {mode} failed part way: put back the {undone} change(s) it had made to files, \
                     directories and live kernel parameters; commands it ran (service reloads, package \
                     installs, boot configuration updates) are not undone",
                    P::KIND
                );
            }
        } else {
            step.host.end_journal();
        }
        result
    });
    report::<P>(mode, result, started)
}

fn report<P: Package>(mode: Mode, result: Result<Outcome>, started: Instant) -> i32 {
    let took = started.elapsed();
    let what = format!("{} {mode}", P::KIND);
    match result {
        Ok(outcome) => {
            if let Some(i) = &outcome.interrupt {
                match i {
                    Interrupt::NoOp => log::info!("interrupt needed: none"),
                    i => log::info!(
                        "interrupt needed: {i} (declare it in the SCR as `interrupt` or in `configInterrupts`; the package cannot trigger it)"
                    ),
                }
                log::info!("{}", i.report_line());
            }
            if outcome.exit_code == 0 {
                log::info!("{what}: succeeded in {} ms", took.as_millis());
            }
            outcome.exit_code
        }
        Err(e) => {
            let code = e.exit_code();
            failure_lines(&what, &e).iter().for_each(|l| log::error!("{l}"));
            log::error!("{what}: exit code {code} after {} ms", took.as_millis());
            code
        }
    }
}

/// Runs the command `name` of [`Package::COMMANDS`], reporting as a mode does.
fn run_command<P: Package>(name: &str, command: Command, host: &Host) -> i32 {
    let what = format!("{} {name}", P::KIND);
    log::info!("{what}: version {}, host root {}", P::VERSION, host.root().display());
    match command(host) {
        Ok(()) => {
            log::info!("{what}: succeeded");
            0
        }
        Err(e) => {
            failure_lines(&what, &e).iter().for_each(|l| log::error!("{l}"));
            e.exit_code()
        }
    }
}

/// The lines reporting `error`, bounded whatever it holds: at most
/// [`crate::error::MAX_LISTED`] problems of at most [`MAX_MESSAGE_BYTES`] each.
fn failure_lines(what: &str, error: &Error) -> Vec<String> {
    let (head, items) = match error {
        Error::Input(problems) => (format!("{what}: bad input, nothing on the node was changed:"), problems),
        Error::Check(unmet) => (format!("{what}: {} unmet expectation(s):", unmet.len()), unmet),
        Error::Mode(m) => return vec![truncate(&format!("{what}: {m}"), MAX_MESSAGE_BYTES)],
        Error::Action(_) | Error::Host(_) => {
            return vec![truncate(&format!("{what} failed: {error}"), 8 * MAX_MESSAGE_BYTES)];
        }
    };
    std::iter::once(head)
        .chain(bounded_list(items).into_iter().map(|p| format!("  - {p}")))
        .collect()
}

/// Defines `main` for a package binary: `skyhook_core::package_main!(tuning::Tuning);`
#[macro_export]
macro_rules! package_main {
    ($package:expr) => {
        fn main() {
            $crate::runtime::run::main($package)
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::command::RecordingRunner;

    struct Demo;
    impl Package for Demo {
        const KIND: &'static str = "demo";
        const VERSION: &'static str = "1.0.0";
        const MODES: &'static [(Mode, Handler)] = &[
            (Mode::Config, |_| Ok(Outcome::needs(Interrupt::Reboot))),
            (Mode::ConfigCheck, |_| Err(Error::Check(vec!["x".into()]))),
        ];
        const COMMANDS: &'static [(&'static str, Command)] =
            &[("at-boot", |host| match host.exists("/etc/demo-fails") {
                true => Err(Error::input("demo fails")),
                false => host
                    .write("/etc/demo-ran", b"1", 0o644)
                    .map(|_| ())
                    .map_err(Error::from),
            })];
    }

    fn host() -> Host {
        Host::new("/nonexistent", RecordingRunner::succeeding())
    }

    #[test]
    fn the_family_is_decided_once_per_step_and_travels_to_a_derived_step() {
        use crate::os::distro::fixtures::{OPENSUSE, RHEL_9, UBUNTU_2404};
        let d = tempfile::tempdir().unwrap();
        let h = Host::new(d.path(), RecordingRunner::succeeding());
        let ctx = Context::from_vars(Mode::Config, |name| match name {
            "SKYHOOK_DIR" => Some("/var/skyhook/x".to_string()),
            "SKYHOOK_RESOURCE_ID" => Some("r_demo_1.0.0".to_string()),
            _ => None,
        })
        .unwrap();
        let step = Step::new("demo", ctx, h.clone(), ConfigMaps::default());
        let e = step.family().unwrap_err().to_string();
        assert!(e.contains("/etc/os-release"), "{e}");
        assert!(
            step.family_if_known().is_err(),
            "no os-release is an error, not an unknown family"
        );

        h.write("/etc/os-release", UBUNTU_2404.as_bytes(), 0o644).unwrap();
        assert!(matches!(step.family(), Ok(Family::Debian)));
        // Decided once: the step keeps its answer, a derived step inherits it.
        h.write("/etc/os-release", RHEL_9.as_bytes(), 0o644).unwrap();
        assert!(matches!(step.family_if_known(), Ok(Some(Family::Debian))));
        let derived = step.derived("other", ConfigMaps::default());
        assert_eq!(derived.kind(), "other");
        assert!(matches!(derived.family(), Ok(Family::Debian)));
        assert_eq!(step.os_release().unwrap().id(), "ubuntu");

        // A fresh step reads the node again; a distribution of neither family is an
        // error for `family` and `None` for `family_if_known`.
        let ctx = step.ctx.clone();
        assert!(matches!(
            Step::new("demo", ctx.clone(), h.clone(), ConfigMaps::default()).family(),
            Ok(Family::Rhel)
        ));
        h.write("/etc/os-release", OPENSUSE.as_bytes(), 0o644).unwrap();
        let step = Step::new("demo", ctx, h, ConfigMaps::default());
        assert!(matches!(step.family_if_known(), Ok(None)));
        let e = step.family().unwrap_err().to_string();
        assert!(e.starts_with("unsupported distribution: ID=\"opensuse-leap\""), "{e}");
    }

    #[test]
    fn failure_reports_stay_under_64_kib_and_name_key_and_line() {
        let huge = format!("net.core.somaxconn={}", "9".repeat(10 << 20));
        let one = Error::bad_line("sysctl.conf", 7, &huge, "not a number");
        let many = Error::Input(
            (1..=100_000)
                .map(|n| crate::error::bad_line("sysctl.conf", n, &huge[..200], "not a number"))
                .collect(),
        );
        let action = Error::action(huge.clone());
        for e in [&one, &many, &action] {
            let lines = failure_lines("tuning config", e);
            let size: usize = lines.iter().map(|l| l.len() + 1).sum();
            assert!(size < 64 * 1024, "{size} bytes");
        }
        let text = failure_lines("tuning config", &one).join("\n");
        assert!(
            text.contains("configMap key \"sysctl.conf\" line 7 (\"net.core.somaxconn=999")
                && text.contains(&format!("({} bytes)): not a number", huge.len())),
            "{text}"
        );
        let text = failure_lines("tuning config", &many).join("\n");
        assert!(text.contains("line 1 (") && text.contains("line 20 ("), "{text}");
        assert!(!text.contains("line 21 ("), "{text}");
        assert!(text.ends_with("… and 99980 more"), "{text}");
    }

    #[test]
    fn non_utf8_and_odd_arguments_exit_2_without_panicking() {
        use std::os::unix::ffi::OsStringExt;
        let bad = OsString::from_vec(b"conf\xffig".to_vec());
        assert_eq!(execute(&Demo, &[bad], host()), 2);
        assert_eq!(execute(&Demo, &["x".repeat(1 << 20).into()], host()), 2);
        assert_eq!(parse_args::<Demo>(&["config".into()]), Ok(Mode::Config));
    }

    #[test]
    fn unknown_and_unsupported_modes_exit_2() {
        assert_eq!(execute(&Demo, &["bogus".into()], host()), 2);
        assert_eq!(execute(&Demo, &["apply".into()], host()), 2);
        assert_eq!(execute(&Demo, &[], host()), 2);
        assert_eq!(execute(&Demo, &["config".into(), "extra".into()], host()), 2);
        assert_eq!(execute(&Demo, &["--version".into()], host()), 0);
    }

    #[test]
    fn a_packages_command_runs_alone_on_the_command_line_with_its_own_exit_code() {
        let d = tempfile::tempdir().unwrap();
        let h = Host::new(d.path(), RecordingRunner::succeeding());
        assert_eq!(
            execute(&Demo, &["at-boot".into(), "x".into()], h.clone()),
            2,
            "alone only"
        );
        assert!(!h.exists("/etc/demo-ran"));
        assert_eq!(execute(&Demo, &["at-boot".into()], h.clone()), 0);
        assert!(h.exists("/etc/demo-ran"), "it ran on the host");
        h.write("/etc/demo-fails", b"", 0o644).unwrap();
        assert_eq!(execute(&Demo, &["at-boot".into()], h), 2, "its error's exit code");
    }

    #[test]
    fn an_unknown_mode_lists_the_packages_own_modes() {
        assert_eq!(
            unknown_mode::<Demo>("reboot").to_string(),
            "unknown mode \"reboot\"; expected one of: config, config-check"
        );
        let long = unknown_mode::<Demo>(&"m".repeat(10_000)).to_string();
        assert!(long.contains(&format!("{}… (10000 bytes)", "m".repeat(64))), "{long}");
        assert!(long.ends_with("expected one of: config, config-check"), "{long}");
    }
}

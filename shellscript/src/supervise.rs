// SPDX-License-Identifier: Apache-2.0
//! Running the script as a supervised child process: the one place in this project
//! that spawns a process directly (the script is the payload, see DESIGN.md).
//!
//! - The script runs in a process group of its own, with stdin from /dev/null and
//!   the step's own stdout and stderr (inherited: output reaches the agent as it is
//!   written, unbuffered, each stream apart and in order, bytes unchanged).
//! - SIGTERM and SIGINT to the step are passed on to the whole group. A group that
//!   has not ended after the grace period is killed (SIGKILL).
//! - A time limit stops the group the same way (SIGTERM, grace period, SIGKILL).
//! - Processes the script leaves running after it ends normally (daemons it
//!   started) are left alone, as they were under the bash package.
//! - The step is a child subreaper: descendants orphaned by the script are
//!   reparented to it and reaped, so "the group has ended" does not depend on the
//!   host's init reaping zombies (some container inits never do).
//!
//! Signals are not handled asynchronously: SIGTERM, SIGINT and SIGCHLD are blocked
//! and taken synchronously with `sigtimedwait`, so the supervisor is one plain loop
//! (no handler, no thread). A child inherits the signal mask (the standard library
//! keeps it since Rust 1.66), so the child unblocks them again before it executes
//! the interpreter: otherwise the script could never be stopped by them.

use std::io;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::libc;
use nix::sys::prctl;
use nix::sys::signal::{self, SaFlags, SigAction, SigHandler, SigSet, SigmaskHow, Signal};
use nix::sys::wait::{WaitPidFlag, waitpid};
use nix::unistd::Pid;

use crate::settings::{self, Settings};

/// Longest sleep between two looks at the child: a SIGCHLD taken by another thread
/// (only possible when this runs inside a multi-threaded test process) delays the
/// end by at most this much. The step binary is single-threaded and wakes at once.
const MAX_NAP: Duration = Duration::from_millis(100);
/// How long to wait for a killed (SIGKILL) process group to disappear.
const KILL_WAIT: Duration = Duration::from_secs(2);

/// Why the supervisor stopped the script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The step received this signal (SIGTERM or SIGINT) and passed it on.
    Signal(Signal),
    /// The time limit passed.
    TimeLimit,
}

/// How a supervised run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ended {
    /// The script's own exit status.
    pub status: ExitStatus,
    /// Why the supervisor stopped it, if it did.
    pub stop: Option<Stop>,
    /// Whether the grace period ran out and the group was killed.
    pub killed: bool,
    /// From spawn to the script's end.
    pub duration: Duration,
}

/// Runs `command` (program, arguments, environment, working directory set by the
/// caller) under supervision; returns how it ended. An `Err` means it could not be
/// started.
pub fn run(mut command: Command, settings: &Settings) -> io::Result<Ended> {
    let watched = SigSet::from_iter([Signal::SIGTERM, Signal::SIGINT, Signal::SIGCHLD]);
    let signals = SignalGuard::take(&watched)?;
    let mut child_mask = signals.old_mask;
    watched.iter().for_each(|sig| child_mask.remove(sig));
    // SAFETY: between fork and exec the child only makes two system calls
    // (async-signal-safe, no allocation).
    unsafe {
        command.pre_exec(move || {
            signal::pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&child_mask), None)?;
            // Should the step itself be killed outright (SIGKILL, nothing to pass
            // on), the script is told to stop rather than left running unsupervised.
            prctl::set_pdeathsig(Signal::SIGTERM)?;
            Ok(())
        });
    }
    if let Err(e) = prctl::set_child_subreaper(true) {
        log::debug!("cannot become a child subreaper: {e}");
    }
    command.process_group(0).stdin(Stdio::null());
    let started = Instant::now();
    let mut child = command.spawn()?;
    let group = Pid::from_raw(child.id() as i32);
    let mut sup = Supervisor {
        watched,
        group,
        grace: settings.grace.clone(),
        stop: None,
        grace_end: None,
        killed: false,
    };
    let time_limit = settings.timeout.as_ref().map(|t| (t, started + t.duration));
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        reap_orphans(Some(group));
        let now = Instant::now();
        if let Some((limit, at)) = time_limit
            && sup.stop.is_none()
            && now >= at
        {
            log::error!(
                "time limit {limit} reached: stopping the script's process group {group} with SIGTERM, \
                 SIGKILL in {} ({})",
                settings::seconds(sup.grace.duration),
                sup.grace.var
            );
            sup.begin_stop(Stop::TimeLimit, Signal::SIGTERM, now);
            continue;
        }
        if sup.grace_over(now) {
            sup.kill();
            continue;
        }
        let next = [
            time_limit.filter(|_| sup.stop.is_none()).map(|(_, at)| at),
            sup.grace_end.filter(|_| !sup.killed),
        ]
        .into_iter()
        .flatten()
        .min();
        let nap = next.map_or(MAX_NAP, |n| n.saturating_duration_since(now).min(MAX_NAP));
        if let Some(sig) = sup.take_signal(nap) {
            sup.received(sig, Instant::now());
        }
    };
    let duration = started.elapsed();
    if sup.stop.is_some() {
        sup.wait_group_gone();
    } else if group_alive(group) {
        log::info!("the script ended but left processes running in its process group {group}; they keep running");
    }
    Ok(Ended {
        status,
        stop: sup.stop,
        killed: sup.killed,
        duration,
    })
}

/// The state of one supervision.
struct Supervisor {
    watched: SigSet,
    group: Pid,
    grace: settings::Setting,
    stop: Option<Stop>,
    grace_end: Option<Instant>,
    killed: bool,
}

impl Supervisor {
    /// Waits up to `nap` for one of the watched signals.
    fn take_signal(&self, nap: Duration) -> Option<Signal> {
        let timeout = libc::timespec {
            tv_sec: nap.as_secs() as libc::time_t,
            tv_nsec: nap.subsec_nanos() as libc::c_long,
        };
        // SAFETY: a valid signal set and timespec; no siginfo is requested.
        let n = unsafe { libc::sigtimedwait(self.watched.as_ref(), std::ptr::null_mut(), &timeout) };
        Signal::try_from(n).ok()
    }

    /// Acts on a signal taken: SIGTERM and SIGINT are passed on to the group.
    fn received(&mut self, sig: Signal, now: Instant) {
        if !matches!(sig, Signal::SIGTERM | Signal::SIGINT) {
            return;
        }
        if self.stop.is_none() {
            log::warn!(
                "received {sig}: passing it on to the script's process group {}; it is killed if it has \
                 not ended in {} ({})",
                self.group,
                settings::seconds(self.grace.duration),
                self.grace.var
            );
            self.begin_stop(Stop::Signal(sig), sig, now);
        } else {
            log::warn!("received {sig} again: passing it on to process group {}", self.group);
            signal_group(self.group, sig);
        }
    }

    fn begin_stop(&mut self, stop: Stop, sig: Signal, now: Instant) {
        self.stop = Some(stop);
        self.grace_end = Some(now + self.grace.duration);
        signal_group(self.group, sig);
    }

    fn grace_over(&self, now: Instant) -> bool {
        !self.killed && self.grace_end.is_some_and(|end| now >= end)
    }

    fn kill(&mut self) {
        log::error!(
            "the script's process group {} has not ended within the grace period of {} ({}); killing it (SIGKILL)",
            self.group,
            settings::seconds(self.grace.duration),
            self.grace.var
        );
        signal_group(self.group, Signal::SIGKILL);
        self.killed = true;
    }

    /// After a stop, the script has ended: waits (within the grace period) for the
    /// rest of its group, then kills what is left.
    ///
    /// The script itself has been reaped, so its process group id could in theory be
    /// reused; Linux keeps it reserved while any member lives, and a new group with
    /// the same number needs the pid counter to wrap around within these seconds.
    fn wait_group_gone(&mut self) {
        let mut killed_at = None;
        while group_alive(self.group) {
            let now = Instant::now();
            if self.grace_over(now) {
                self.kill();
            }
            if self.killed {
                let at = *killed_at.get_or_insert(now);
                if now - at > KILL_WAIT {
                    log::error!(
                        "processes of group {} are still present {} after SIGKILL (stuck in the kernel?)",
                        self.group,
                        settings::seconds(KILL_WAIT)
                    );
                    return;
                }
            }
            if let Some(sig) = self.take_signal(Duration::from_millis(10)) {
                self.received(sig, Instant::now());
            }
        }
    }
}

/// Sends `sig` to process group `group`; a group already gone is not an error.
fn signal_group(group: Pid, sig: Signal) {
    if let Err(e) = signal::killpg(group, sig)
        && e != Errno::ESRCH
    {
        log::warn!("cannot send {sig} to process group {group}: {e}");
    }
}

/// Whether any process of group `group` is still alive. Zombies count as members,
/// so the orphans reparented to this process are reaped first.
fn group_alive(group: Pid) -> bool {
    reap_orphans(None);
    !matches!(signal::killpg(group, None), Err(Errno::ESRCH))
}

/// Reaps every child that has ended except `script` (the script's orphaned
/// descendants, reparented here), so that they do not pile up as zombies while a
/// long script runs.
fn reap_orphans(script: Option<Pid>) {
    loop {
        // SAFETY: siginfo_t is plain data; all zeroes is a valid value.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: `info` is valid for writing; WNOWAIT only looks, reaps nothing.
        let r = unsafe { libc::waitid(libc::P_ALL, 0, &mut info, libc::WEXITED | libc::WNOHANG | libc::WNOWAIT) };
        if r != 0 {
            match Errno::last() {
                Errno::EINTR => continue,
                _ => return, // ECHILD: no children at all
            }
        }
        // SAFETY: waitid filled `info` for an exited child (or left si_pid 0).
        let pid = Pid::from_raw(unsafe { info.si_pid() });
        if pid.as_raw() == 0 || Some(pid) == script {
            return; // nothing has ended, or only the script, which `run` reaps
        }
        // Reaped whatever the status (nix reports EINVAL for unnamed signals).
        let _ = waitpid(pid, Some(WaitPidFlag::WNOHANG));
    }
}

/// Blocks the watched signals (so they wait for `sigtimedwait`) and makes SIGCHLD
/// deliverable (an inherited "ignore" would make the kernel reap the child itself);
/// restores both when dropped, discarding signals that arrived after the script ended.
struct SignalGuard {
    watched: SigSet,
    old_mask: SigSet,
    old_chld: SigAction,
}

impl SignalGuard {
    fn take(watched: &SigSet) -> io::Result<Self> {
        let default = SigAction::new(SigHandler::SigDfl, SaFlags::empty(), SigSet::empty());
        // SAFETY: installs the default disposition, no handler code runs.
        let old_chld = unsafe { signal::sigaction(Signal::SIGCHLD, &default) }.map_err(io::Error::from)?;
        let mut old_mask = SigSet::empty();
        signal::pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(watched), Some(&mut old_mask)).map_err(io::Error::from)?;
        Ok(SignalGuard {
            watched: *watched,
            old_mask,
            old_chld,
        })
    }
}

impl Drop for SignalGuard {
    fn drop(&mut self) {
        let zero = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        loop {
            // SAFETY: as in `Supervisor::take_signal`.
            let n = unsafe { libc::sigtimedwait(self.watched.as_ref(), std::ptr::null_mut(), &zero) };
            match Signal::try_from(n) {
                Ok(sig @ (Signal::SIGTERM | Signal::SIGINT)) => {
                    log::warn!("received {sig} after the script had ended; nothing left to stop")
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
        let _ = signal::pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&self.old_mask), None);
        // SAFETY: restores the disposition found at the start.
        let _ = unsafe { signal::sigaction(Signal::SIGCHLD, &self.old_chld) };
    }
}

/// The exit code of a status: its code, or 128 + the signal that ended it.
pub fn exit_code(status: &ExitStatus) -> i32 {
    status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
}

/// `SIGKILL` for 9, `signal 40` for a number without a name.
pub fn signal_name(number: i32) -> String {
    Signal::try_from(number).map_or_else(|_| format!("signal {number}"), |s| s.as_str().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;
    use std::time::Duration;

    /// The supervisor reaps every ended child of the process: tests that spawn run
    /// one at a time so that none reaps another's child.
    static SPAWNING: Mutex<()> = Mutex::new(());

    fn settings(timeout: Option<f64>, grace: f64) -> Settings {
        let timeout = timeout.map(|t| t.to_string());
        let grace = grace.to_string();
        Settings::from_vars(move |name| match name {
            settings::TIMEOUT_VAR => timeout.clone(),
            settings::GRACE_VAR => Some(grace.clone()),
            _ => None,
        })
        .unwrap()
    }

    fn sh(script: &str) -> Command {
        let mut c = Command::new("/bin/sh");
        c.args(["-c", script]);
        c
    }

    #[test]
    fn passes_the_exit_status_through() {
        let _one = SPAWNING.lock().unwrap_or_else(|e| e.into_inner());
        let e = run(sh("exit 3"), &settings(None, 1.0)).unwrap();
        assert_eq!((e.status.code(), e.stop, e.killed), (Some(3), None, false));
        let e = run(sh("kill -KILL $$"), &settings(None, 1.0)).unwrap();
        assert_eq!(e.status.signal(), Some(9));
        assert_eq!(exit_code(&e.status), 137);
    }

    #[test]
    fn time_limit_terminates_the_group_then_kills_it() {
        let _one = SPAWNING.lock().unwrap_or_else(|e| e.into_inner());
        let t = Instant::now();
        let e = run(sh("sleep 5"), &settings(Some(0.2), 5.0)).unwrap();
        assert_eq!((e.stop, e.killed), (Some(Stop::TimeLimit), false));
        assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
        let e = run(sh("trap '' TERM; sleep 5"), &settings(Some(0.1), 0.2)).unwrap();
        assert_eq!((e.stop, e.killed), (Some(Stop::TimeLimit), true));
        assert_eq!(e.status.signal(), Some(9));
        assert!(t.elapsed() < Duration::from_secs(4), "{:?}", t.elapsed());
    }

    #[test]
    fn a_spawn_failure_is_an_error() {
        let _one = SPAWNING.lock().unwrap_or_else(|e| e.into_inner());
        let e = run(Command::new("/nonexistent/interpreter"), &settings(None, 1.0)).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn names_signals() {
        assert_eq!(signal_name(9), "SIGKILL");
        assert_eq!(signal_name(15), "SIGTERM");
        assert_eq!(signal_name(40), "signal 40");
    }
}

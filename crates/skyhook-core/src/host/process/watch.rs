// SPDX-License-Identifier: Apache-2.0
//! The supervision loop of one child: waits for its end while taking signals and
//! watching the time limit, then stops whatever of its tree is still running and
//! reaps every child of this process: when it returns, no process of the tree is
//! left, neither running nor as a zombie. A process counts as gone only once
//! reaped (or absent from `/proc`), never because `/proc` shows it as a zombie: one
//! may end between a reap and a walk of `/proc`, and a process whose first thread
//! has ended shows as a zombie while its other threads still run.

use std::io;
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::libc;
use nix::sys::signal::{self, Signal};
use nix::sys::wait::{WaitPidFlag, waitpid};
use nix::unistd::Pid;

use super::signals::SignalGuard;
use super::tree::{self, Proc};
use super::{PassOn, Stop, Supervision};

/// Longest sleep between two looks at the child: a SIGCHLD taken by another thread
/// delays the end by at most this much (a single-threaded step wakes at once).
const MAX_NAP: Duration = Duration::from_millis(100);
/// How often the tree is looked at again while it is being stopped.
const POLL: Duration = Duration::from_millis(10);
/// How long processes killed (SIGKILL) may take to disappear.
const KILL_WAIT: Duration = Duration::from_secs(2);
/// How many processes a log line names before "and N more".
const NAMED_MAX: usize = 10;

/// The state of one supervision.
pub(super) struct Watch<'a> {
    how: &'a Supervision,
    signals: &'a SignalGuard,
    /// The child's pid, also its process group's id.
    child: i32,
    /// This process's pid in `/proc`; `None` without a usable `/proc`.
    me: Option<i32>,
    /// Once reaped, the child's group id may name another group one day.
    child_reaped: bool,
    time_limit_at: Option<Instant>,
    grace_end: Option<Instant>,
    killed_at: Option<Instant>,
    /// Why the child was stopped, if it was.
    pub stop: Option<Stop>,
    /// Whether the tree was killed (SIGKILL) after the grace period.
    pub killed: bool,
    /// A signal received after the child had ended, while its leftovers were stopped.
    pub late: Option<Signal>,
}

impl<'a> Watch<'a> {
    pub(super) fn new(how: &'a Supervision, signals: &'a SignalGuard, child: i32, started: Instant) -> Self {
        let me = tree::own_pid();
        if me.is_none() {
            log::warn!(
                "/proc is missing or belongs to another pid namespace: only {}'s process group {child} \
                 can be stopped, not processes it moved to a session of their own",
                how.what
            );
        }
        Watch {
            how,
            signals,
            child,
            me,
            child_reaped: false,
            time_limit_at: how.time_limit.as_ref().map(|t| started + t.duration),
            grace_end: None,
            killed_at: None,
            stop: None,
            killed: false,
            late: None,
        }
    }

    /// Waits for the child's end, passing signals on and enforcing the time limit.
    pub(super) fn until_exit(&mut self, child: &mut Child) -> io::Result<ExitStatus> {
        loop {
            if let Some(status) = child.try_wait()? {
                self.child_reaped = true;
                return Ok(status);
            }
            reap_orphans(Some(self.child));
            let now = Instant::now();
            if self.stop.is_none() && self.time_limit_at.is_some_and(|at| now >= at) {
                let limit = self
                    .how
                    .time_limit
                    .as_ref()
                    .map(|t| t.label.as_str())
                    .unwrap_or_default();
                log::error!(
                    "time limit {limit} reached: stopping {}'s process group {} and every process it \
                     started with SIGTERM, SIGKILL in {}",
                    self.how.what,
                    self.child,
                    self.how.grace.label
                );
                self.begin_stop(Stop::TimeLimit, Signal::SIGTERM, now);
                continue;
            }
            if self.grace_over(now) {
                let running: Vec<Proc> = self.left().into_iter().filter(Proc::is_running).collect();
                self.kill(&running);
                continue;
            }
            let next = [
                self.time_limit_at.filter(|_| self.stop.is_none()),
                self.grace_end.filter(|_| !self.killed),
            ]
            .into_iter()
            .flatten()
            .min();
            let nap = next.map_or(MAX_NAP, |n| n.saturating_duration_since(now).min(MAX_NAP));
            if let Some(sig) = self.signals.wait(nap) {
                self.received(sig, Instant::now());
            }
        }
    }

    /// After the child's end: stops every process of its tree still running
    /// (SIGTERM, the rest of the grace period, SIGKILL) and returns once no process
    /// of the tree is left at all, running or ended: every child of this process
    /// has been reaped (none is left a zombie), bounded by [`KILL_WAIT`].
    pub(super) fn clear_tree(&mut self) {
        let settle_until = Instant::now() + KILL_WAIT;
        loop {
            let left = self.left();
            if left.is_empty() {
                return;
            }
            let running: Vec<Proc> = left.iter().filter(|p| p.is_running()).cloned().collect();
            let now = Instant::now();
            if self.grace_end.is_none() && !running.is_empty() {
                log::warn!(
                    "{} ended but left {} running: {}; stopping them (SIGTERM, SIGKILL after {}), as \
                     nothing a step starts may outlive it",
                    self.how.what,
                    count(running.len(), "process", "processes"),
                    named(&running),
                    self.how.grace.label
                );
                self.grace_end = Some(now + self.how.grace.duration);
                self.signal_all(&left, Signal::SIGTERM);
            } else if self.grace_over(now) && !running.is_empty() {
                self.kill(&running);
            } else if let Some(at) = self.killed_at {
                self.signal_all(&left, Signal::SIGKILL); // started since the last round
                if now - at > KILL_WAIT {
                    log::error!(
                        "{} still present {} s after SIGKILL (stuck in the kernel, uninterruptible I/O?): {}",
                        count(left.len(), "process is", "processes are"),
                        KILL_WAIT.as_secs(),
                        named(&left)
                    );
                    return;
                }
            } else if running.is_empty() && now > settle_until {
                // Only ended processes, which the next round reaps (or whose parent
                // in the tree does): one that stays is not ours to wait for longer.
                log::error!(
                    "{} ended but not reaped after {} s: {}",
                    count(left.len(), "process has", "processes have"),
                    KILL_WAIT.as_secs(),
                    named(&left)
                );
                return;
            }
            if let Some(sig) = self.signals.wait(POLL) {
                self.received(sig, Instant::now());
            }
        }
    }

    /// Acts on a signal taken: SIGTERM and SIGINT are passed on.
    fn received(&mut self, sig: Signal, now: Instant) {
        if !matches!(sig, Signal::SIGTERM | Signal::SIGINT) {
            return;
        }
        let what = &self.how.what;
        if self.child_reaped {
            log::warn!("received {sig} while stopping what {what} left running: passing it on");
            self.late = Some(sig);
            self.signal_all(&self.left(), sig);
        } else if self.stop.is_none() {
            match self.how.pass_on {
                PassOn::Tree => log::warn!(
                    "received {sig}: passing it on to {what}'s process group {} and every process it \
                     started; they are killed if they have not ended in {}",
                    self.child,
                    self.how.grace.label
                ),
                PassOn::Child => log::warn!("received {sig}: passing it on to {what} (pid {})", self.child),
            }
            self.begin_stop(Stop::Signal(sig), sig, now);
        } else {
            log::warn!("received {sig} again: passing it on");
            self.pass_on(sig);
        }
    }

    fn begin_stop(&mut self, stop: Stop, sig: Signal, now: Instant) {
        self.stop = Some(stop);
        if stop == Stop::TimeLimit || self.how.pass_on == PassOn::Tree {
            self.grace_end = Some(now + self.how.grace.duration);
        }
        self.pass_on(sig);
    }

    /// Sends `sig` where this supervision sends signals (after a time limit: the tree).
    fn pass_on(&self, sig: Signal) {
        if self.how.pass_on == PassOn::Child && self.stop != Some(Stop::TimeLimit) {
            send(|| signal::kill(Pid::from_raw(self.child), sig), sig, self.child);
        } else {
            self.signal_all(&self.left(), sig);
        }
    }

    fn grace_over(&self, now: Instant) -> bool {
        !self.killed && self.grace_end.is_some_and(|end| now >= end)
    }

    fn kill(&mut self, left: &[Proc]) {
        log::error!(
            "{}'s process tree ({}) has not ended within the grace period of {}; killing it (SIGKILL)",
            self.how.what,
            named(left),
            self.how.grace.label
        );
        self.signal_all(left, Signal::SIGKILL);
        self.killed = true;
        self.killed_at = Some(Instant::now());
    }

    /// Sends `sig` to each of `procs`, and to the child's process group while its id
    /// is certainly still the group's (the child not reaped) or when `/proc` cannot
    /// tell the processes apart.
    fn signal_all(&self, procs: &[Proc], sig: Signal) {
        if !self.child_reaped || self.me.is_none() {
            send(|| signal::killpg(Pid::from_raw(self.child), sig), sig, self.child);
        }
        for p in procs.iter().filter(|p| p.is_running()) {
            if let Err(e) = tree::signal(p, sig) {
                log::warn!("cannot send {sig} to process {}: {e}", p.pid);
            }
        }
    }

    /// The processes of the tree still present, after the ended children of this
    /// process are reaped: the running ones, and the zombies the reap could not
    /// take yet (ended since, or children of a process of the tree that does not
    /// reap them). A zombie is gone only once reaped, so it is never skipped: a
    /// process ending between the reap and the walk is reaped on the next round.
    /// Once the child is reaped, every survivor has been reparented here: no
    /// child, no walk.
    fn left(&self) -> Vec<Proc> {
        reap_orphans(if self.child_reaped { None } else { Some(self.child) });
        let Some(me) = self.me else {
            return group_leftover(self.child);
        };
        if self.child_reaped && !has_children() {
            return Vec::new();
        }
        tree::descendants(me).unwrap_or_default()
    }
}

/// Without `/proc`: the child's process group, as one entry, while it has members.
fn group_leftover(group: i32) -> Vec<Proc> {
    match signal::killpg(Pid::from_raw(group), None) {
        Err(Errno::ESRCH) => Vec::new(),
        _ => vec![Proc {
            pid: group,
            ppid: 0,
            group,
            start: 0,
            state: 'S',
            threads: 1,
            cpu_ticks: 0,
        }],
    }
}

fn send(f: impl FnOnce() -> nix::Result<()>, sig: Signal, pid: i32) {
    if let Err(e) = f()
        && e != Errno::ESRCH
    {
        log::warn!("cannot send {sig} to {pid}: {e}");
    }
}

/// Whether this process has any child, running or ended.
fn has_children() -> bool {
    // SAFETY: siginfo_t is plain data; all zeroes is a valid value.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: `info` is valid for writing; WNOWAIT only looks, reaps nothing.
    let r = unsafe { libc::waitid(libc::P_ALL, 0, &mut info, libc::WEXITED | libc::WNOHANG | libc::WNOWAIT) };
    !(r != 0 && Errno::last() == Errno::ECHILD)
}

/// Reaps every child that has ended except `child` (which `run` reaps): the
/// orphans reparented here, so that they do not pile up as zombies.
fn reap_orphans(child: Option<i32>) {
    loop {
        // SAFETY: as in `has_children`.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: as in `has_children`.
        let r = unsafe { libc::waitid(libc::P_ALL, 0, &mut info, libc::WEXITED | libc::WNOHANG | libc::WNOWAIT) };
        if r != 0 {
            match Errno::last() {
                Errno::EINTR => continue,
                _ => return, // ECHILD: no children at all
            }
        }
        // SAFETY: waitid filled `info` for an exited child (or left si_pid 0).
        let pid = unsafe { info.si_pid() };
        if pid == 0 || Some(pid) == child {
            return; // nothing has ended, or only the child, which `run` reaps
        }
        // Reaped whatever the status (nix reports EINVAL for unnamed signals).
        let _ = waitpid(Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG));
    }
}

/// `1 process` / `3 processes`.
fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `pid 12 (sleep 300), pid 14 (daemon -f) and 3 more`.
fn named(procs: &[Proc]) -> String {
    let text: Vec<String> = procs
        .iter()
        .take(NAMED_MAX)
        .map(|p| format!("pid {}", p.describe()))
        .collect();
    match procs.len().checked_sub(NAMED_MAX) {
        Some(more) if more > 0 => format!("{} and {more} more", text.join(", ")),
        _ => text.join(", "),
    }
}

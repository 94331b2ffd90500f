// SPDX-License-Identifier: Apache-2.0
//! The processes descended from this one, found in `/proc`, and signals sent to
//! them without ever hitting a stranger that took over a pid.
//!
//! A descendant is a process whose chain of parents leads to this process. As a
//! child subreaper, this process is the parent of every orphan of its tree (also
//! `setsid` and double-forked daemons), so the walk finds them all. Each process
//! is remembered with its start time; before a signal is sent the pid is pinned
//! with a pidfd and its start time compared again, so a pid reused by an unrelated
//! process between the walk and the signal is left alone.

use std::fs;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::io::AsRawFd;

use nix::errno::Errno;
use nix::libc;
use nix::sys::signal::Signal;

/// Longest command line quoted for a process in a log line.
const COMMAND_MAX: usize = 80;

/// One process of the tree, as `/proc/<pid>/stat` described it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proc {
    /// Its pid.
    pub pid: i32,
    /// Its parent's pid.
    pub ppid: i32,
    /// Its process group.
    pub group: i32,
    /// When it started (clock ticks since boot): with the pid, its identity.
    pub start: u64,
    /// Its scheduler state letter (`Z` for a zombie).
    pub state: char,
    /// How many threads it counts; a zombie's first thread with others still
    /// running counts them too.
    pub threads: u64,
    /// The CPU time it has used, user and system (clock ticks).
    pub cpu_ticks: u64,
}

impl Proc {
    /// Whether it still runs. A zombie has ended, only its exit status is left;
    /// but `/proc` also shows a process whose first thread has ended while other
    /// threads still run as a zombie: it counts more than one thread.
    pub fn is_running(&self) -> bool {
        !matches!(self.state, 'Z' | 'X' | 'x') || self.threads > 1
    }

    /// `123 (sleep 300)`: the pid with a bounded excerpt of its command line.
    pub fn describe(&self) -> String {
        let cmdline = fs::read(format!("/proc/{}/cmdline", self.pid)).unwrap_or_default();
        let mut words: String = String::from_utf8_lossy(&cmdline).replace('\0', " ").trim().to_string();
        if words.is_empty() {
            words = stat_field_comm(self.pid).unwrap_or_else(|| "?".into());
        }
        if words.chars().count() > COMMAND_MAX {
            words = format!("{}…", words.chars().take(COMMAND_MAX).collect::<String>());
        }
        format!("{} ({words})", self.pid)
    }
}

/// `/proc/<pid>/stat` parsed; `None` when the process is gone.
pub fn read(pid: i32) -> Option<Proc> {
    parse_stat(&fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Parses a stat line: `pid (comm) state ppid … starttime …`. The command name may
/// hold spaces and parentheses, so the fields are counted from its last `)`.
pub fn parse_stat(line: &str) -> Option<Proc> {
    let (head, rest) = line.rsplit_once(") ")?;
    let pid = head.split_once(" (")?.0.trim().parse().ok()?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the command: state is field 3 of stat(5), ppid 4, pgrp 5, utime 14,
    // stime 15, num_threads 20, starttime 22.
    let number = |field: usize| -> Option<u64> { fields.get(field - 3)?.parse().ok() };
    Some(Proc {
        pid,
        state: fields.first()?.chars().next()?,
        ppid: fields.get(1)?.parse().ok()?,
        group: fields.get(2)?.parse().ok()?,
        threads: number(20)?,
        start: number(22)?,
        cpu_ticks: number(14)? + number(15)?,
    })
}

fn stat_field_comm(pid: i32) -> Option<String> {
    let line = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, comm) = line.split_once(" (")?;
    Some(comm.rsplit_once(") ")?.0.to_string())
}

/// This process's pid as `/proc` numbers it, when `/proc` is the procfs of this
/// process's pid namespace (otherwise its pids mean other processes to `kill`).
pub fn own_pid() -> Option<i32> {
    let seen: i32 = fs::read_link("/proc/self").ok()?.to_str()?.parse().ok()?;
    (seen == std::process::id() as i32).then_some(seen)
}

/// Every process descended from `root`, parents before their children; `None`
/// when `/proc` cannot be listed.
pub fn descendants(root: i32) -> Option<Vec<Proc>> {
    Some(descendants_of(root, &all()?))
}

/// Every process `/proc` shows; `None` when it cannot be listed.
pub fn all() -> Option<Vec<Proc>> {
    Some(
        fs::read_dir("/proc")
            .ok()?
            .flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .filter_map(read)
            .collect(),
    )
}

/// The processes of `all` whose parent chain leads to `root`, parents first.
pub fn descendants_of(root: i32, all: &[Proc]) -> Vec<Proc> {
    let mut found: Vec<Proc> = Vec::new();
    let mut parents = vec![root];
    while let Some(parent) = parents.pop() {
        for p in all.iter().filter(|p| p.ppid == parent && p.pid != root) {
            if !found.iter().any(|f| f.pid == p.pid) {
                found.push(p.clone());
                parents.push(p.pid);
            }
        }
    }
    found
}

/// Sends `sig` to `p` if the process with its pid is still the one seen (same
/// start time). A process already gone is not an error.
pub fn signal(p: &Proc, sig: Signal) -> Result<(), Errno> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, p.pid, 0) };
    if fd < 0 {
        return match Errno::last() {
            Errno::ESRCH => Ok(()),
            // Kernels before 5.3: no pidfd; the start time check narrows the race.
            Errno::ENOSYS => signal_by_pid(p, sig),
            e => Err(e),
        };
    }
    // SAFETY: a descriptor just returned by pidfd_open, owned here alone.
    let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
    if read(p.pid).is_none_or(|now| now.start != p.start) {
        return Ok(()); // ended, and its pid now names another process
    }
    // SAFETY: a valid pidfd, a signal number, no siginfo, no flags.
    let r = unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            fd.as_raw_fd(),
            sig as i32,
            std::ptr::null::<libc::siginfo_t>(),
            0,
        )
    };
    match (r, Errno::last()) {
        (0, _) | (_, Errno::ESRCH) => Ok(()),
        (_, e) => Err(e),
    }
}

fn signal_by_pid(p: &Proc, sig: Signal) -> Result<(), Errno> {
    if read(p.pid).is_none_or(|now| now.start != p.start) {
        return Ok(());
    }
    match nix::sys::signal::kill(nix::unistd::Pid::from_raw(p.pid), sig) {
        Ok(()) | Err(Errno::ESRCH) => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(pid: i32, ppid: i32) -> Proc {
        Proc {
            pid,
            ppid,
            group: pid,
            start: 1,
            state: 'S',
            threads: 1,
            cpu_ticks: 0,
        }
    }

    #[test]
    fn parses_a_stat_line_whose_command_has_spaces_and_parentheses() {
        let line = "4242 (my (odd) cmd) S 17 4240 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10";
        assert_eq!(
            parse_stat(line),
            Some(Proc {
                pid: 4242,
                ppid: 17,
                group: 4240,
                start: 987654,
                state: 'S',
                threads: 1,
                cpu_ticks: 3,
            })
        );
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn a_zombie_first_thread_with_threads_left_still_runs() {
        let zombie = "77 (app) Z 10 77 77 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 5000 0 0";
        let leader_gone = "78 (app) Z 10 78 78 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 3 0 5000 0 0";
        assert!(!parse_stat(zombie).unwrap().is_running());
        assert!(parse_stat(leader_gone).unwrap().is_running());
    }

    #[test]
    fn finds_the_whole_tree_below_the_root_only() {
        // 10 is us; 11 and 12 children; 13 a grandchild; 20 unrelated with a child 21.
        let all = [p(10, 1), p(11, 10), p(12, 10), p(13, 11), p(20, 1), p(21, 20)];
        let mut pids: Vec<i32> = descendants_of(10, &all).iter().map(|p| p.pid).collect();
        pids.sort();
        assert_eq!(pids, [11, 12, 13]);
        assert!(descendants_of(13, &all).is_empty());
    }

    #[test]
    fn sees_this_process_in_its_own_procfs() {
        let me = own_pid().expect("the test machine's /proc is this pid namespace's");
        let stat = read(me).unwrap();
        assert_eq!(stat.pid as u32, std::process::id());
        assert!(stat.is_running());
    }
}

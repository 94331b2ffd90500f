// SPDX-License-Identifier: Apache-2.0
//! Running tests one per process, a number of processes at a time: each test is
//! `<binary> --exact <name> --test-threads=1` in its package's directory (as cargo
//! runs test binaries), its output captured and printed whole when it fails.
//!
//! A hung test ends the run with its name instead of hanging it. A test is taken
//! for hung when none of its processes (its process group and its descendants) has
//! used the CPU, started or ended for [`Limits::idle`] (a deadlock: found in
//! minutes, not at the end of the time limit), or when it still runs after
//! [`Limits::total`]. It is then killed with its process group, and the log names
//! each of its processes with its state and the kernel function it waits in. Where
//! the caller allows it ([`Limits::retry`], under emulation), a test that went idle
//! or failed is run once more: it passes only if that second run passes, and the
//! summary names it.

use std::io::{self, Read};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use skyhook_core::host::process::tree::{self, Proc};

/// How long the output pipes may stay open once a test's process has ended (a
/// process it left behind may hold them).
const DRAIN: Duration = Duration::from_secs(2);
/// How often a running test is looked at.
const POLL: Duration = Duration::from_millis(20);
/// How often a running test's processes are read from `/proc`.
const SAMPLE: Duration = Duration::from_millis(250);
/// How many of a hung test's processes the log names.
const PROCESSES_NAMED: usize = 8;

/// A test binary of the build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binary {
    /// The executable.
    pub executable: PathBuf,
    /// Its package's directory: the working directory and `CARGO_MANIFEST_DIR`.
    pub dir: PathBuf,
    /// How the log names it (`tuning tests/killpoints`).
    pub label: String,
}

impl Binary {
    /// A command running this binary as cargo would.
    pub fn command(&self) -> Command {
        let mut cmd = Command::new(&self.executable);
        cmd.current_dir(&self.dir).env("CARGO_MANIFEST_DIR", &self.dir);
        cmd
    }
}

/// One test of one binary.
#[derive(Debug, Clone)]
pub struct Test<'a> {
    /// Its binary.
    pub binary: &'a Binary,
    /// Its full name (`module::name`).
    pub name: String,
}

/// When a running test is taken for hung, and what is done then.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// How long a test may run in all.
    pub total: Duration,
    /// How long all of a test's processes may go without using the CPU, starting or
    /// ending.
    pub idle: Duration,
    /// Whether a test that went idle or failed is run once more (under qemu-user,
    /// whose fork in a multi-threaded guest can deadlock the child: the test goes
    /// idle, or fails when a limit of its own, shorter than [`Limits::idle`], stops
    /// the hung step first). A failure or deadlock of the test's own shows again,
    /// and natively no test is ever retried.
    pub retry: bool,
}

/// How a test ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// It passed.
    Passed,
    /// The harness ignored it (`#[ignore]` without `--ignored`).
    Ignored,
    /// None of its processes used the CPU for the idle limit: killed, for this reason.
    Idle(String),
    /// It failed, for this reason.
    Failed(String),
}

/// What a run of tests found.
#[derive(Debug, Default)]
pub struct Summary {
    /// Tests that passed.
    pub passed: usize,
    /// Tests the harness ignored.
    pub ignored: usize,
    /// `label  name` of each test that failed, sorted.
    pub failed: Vec<String>,
    /// `label  name` of each test that went idle or failed, then passed when run
    /// again, sorted.
    pub passed_when_run_again: Vec<String>,
}

/// Runs `tests`, `jobs` at a time, each with `mode` (harness arguments) and within
/// `limits`; prints one line per test as it ends, and a failed test's output.
pub fn run(tests: &[Test], mode: &[String], jobs: usize, limits: Limits) -> Summary {
    let next = AtomicUsize::new(0);
    let summary = Mutex::new(Summary::default());
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1) {
            scope.spawn(|| {
                while let Some(test) = tests.get(next.fetch_add(1, Ordering::SeqCst)) {
                    let who = format!("{}  {}", test.binary.label, test.name);
                    let started = Instant::now();
                    let (mut verdict, mut output) = run_one(test, mode, &limits);
                    let mut run_again = false;
                    if let (Verdict::Idle(why) | Verdict::Failed(why), true) = (&verdict, limits.retry) {
                        let took = started.elapsed().as_secs_f64();
                        let mark = if matches!(verdict, Verdict::Idle(_)) {
                            "IDLE  "
                        } else {
                            "FAILED"
                        };
                        outln!("{mark}  {took:7.1}s  {who}: {why}\n{output}\n    running it once more");
                        run_again = true;
                        (verdict, output) = run_one(test, mode, &limits);
                    }
                    let took = started.elapsed().as_secs_f64();
                    let mut summary = summary.lock().unwrap_or_else(|p| p.into_inner());
                    match verdict {
                        Verdict::Passed => {
                            summary.passed += 1;
                            if run_again {
                                summary.passed_when_run_again.push(who.clone());
                            }
                            outln!("ok      {took:7.1}s  {who}");
                        }
                        Verdict::Ignored => {
                            summary.ignored += 1;
                            outln!("ignored {took:7.1}s  {who}");
                        }
                        Verdict::Idle(why) | Verdict::Failed(why) => {
                            outln!("FAILED  {took:7.1}s  {who}: {why}\n{output}");
                            summary.failed.push(who);
                        }
                    }
                }
            });
        }
    });
    let mut summary = summary.into_inner().unwrap_or_else(|p| p.into_inner());
    summary.failed.sort();
    summary.passed_when_run_again.sort();
    summary
}

/// Runs one test in its own process: its verdict and its output.
fn run_one(test: &Test, mode: &[String], limits: &Limits) -> (Verdict, String) {
    let mut cmd = test.binary.command();
    cmd.arg("--exact")
        .arg(&test.name)
        .arg("--test-threads=1")
        .args(mode)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = match cmd.spawn() {
        Ok(child) => child,
        Err(e) => {
            return (
                Verdict::Failed(format!("cannot start {}: {e}", test.binary.executable.display())),
                String::new(),
            );
        }
    };
    let output = Output::capture(&mut child);
    let ended = watch(&mut child, limits);
    let text = output.take();
    let verdict = match ended {
        Ok(Ended::Exited(status)) => judge(status, &text),
        Ok(Ended::Idle(why)) => Verdict::Idle(why),
        Ok(Ended::TooLong(why)) => Verdict::Failed(why),
        Err(e) => Verdict::Failed(format!("cannot wait for it: {e}")),
    };
    (verdict, text)
}

/// How the watch over a test's process ended.
enum Ended {
    /// It exited.
    Exited(ExitStatus),
    /// It went idle and was killed, for this reason.
    Idle(String),
    /// It ran past the total limit and was killed, for this reason.
    TooLong(String),
}

/// Waits for `child` to end. When it runs past `limits.total`, or its processes all
/// go `limits.idle` without using the CPU, kills its process group (the child is not
/// reaped yet, so its pid still names the group) and says why, naming its processes.
fn watch(child: &mut Child, limits: &Limits) -> io::Result<Ended> {
    let started = Instant::now();
    let pid = i32::try_from(child.id()).unwrap_or(i32::MAX);
    let mut seen = Vec::new();
    let (mut sampled, mut active) = (started, started);
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Ended::Exited(status));
        }
        let now = Instant::now();
        if now.duration_since(sampled) >= SAMPLE {
            sampled = now;
            let processes = processes_of(pid);
            let activity: Vec<(i32, u64, u64)> = processes.iter().map(|p| (p.pid, p.start, p.cpu_ticks)).collect();
            if activity != seen {
                (seen, active) = (activity, now);
            }
            // (whether it went idle, what it did)
            let over = if now.duration_since(started) >= limits.total {
                Some((false, format!("still running after {} s", limits.total.as_secs())))
            } else if now.duration_since(active) >= limits.idle {
                Some((
                    true,
                    format!("none of its processes used the CPU for {} s", limits.idle.as_secs()),
                ))
            } else {
                None
            };
            if let Some((idle, what)) = over {
                let named = name_processes(&processes);
                let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
                child.wait()?;
                let why = format!("{what}: killed with its process group; its processes were {named}");
                return Ok(if idle { Ended::Idle(why) } else { Ended::TooLong(why) });
            }
        }
        std::thread::sleep(POLL);
    }
}

/// A test's processes: the test's own, its descendants and the other members of its
/// process group, sorted by pid.
fn processes_of(pid: i32) -> Vec<Proc> {
    let all = tree::all().unwrap_or_default();
    let mut processes = tree::descendants_of(pid, &all);
    processes.extend(
        all.into_iter()
            .filter(|p| (p.pid == pid || p.group == pid) && p.is_running()),
    );
    processes.sort_by_key(|p| p.pid);
    processes.dedup_by_key(|p| p.pid);
    processes
}

/// `123 (kdump-1 --exact a) S in do_wait; 130 (kdump-1 --exact a) S in
/// futex_wait_queue, forked and not yet exec'd`: each process with its state and the
/// kernel function it waits in. A child with its parent's command line was forked
/// and has not reached its exec: the qemu-user fork deadlock looks like that.
fn name_processes(processes: &[Proc]) -> String {
    let cmdline = |pid: i32| std::fs::read(format!("/proc/{pid}/cmdline")).ok();
    let mut named: Vec<String> = processes
        .iter()
        .take(PROCESSES_NAMED)
        .map(|p| {
            let wchan = std::fs::read_to_string(format!("/proc/{}/wchan", p.pid)).unwrap_or_default();
            let waits = match wchan.trim() {
                "" | "0" => String::new(),
                function => format!(" in {function}"),
            };
            let forked = processes.iter().any(|parent| parent.pid == p.ppid)
                && cmdline(p.pid).is_some_and(|own| Some(own) == cmdline(p.ppid));
            let forked = if forked { ", forked and not yet exec'd" } else { "" };
            format!("{} {}{waits}{forked}", p.describe(), p.state)
        })
        .collect();
    if processes.len() > PROCESSES_NAMED {
        named.push(format!("{} more", processes.len() - PROCESSES_NAMED));
    }
    if named.is_empty() {
        return "gone from /proc".into();
    }
    named.join("; ")
}

/// A test's verdict from its exit status and the harness's `test result:` line.
pub fn judge(status: ExitStatus, output: &str) -> Verdict {
    // `test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 9 filtered out; …`
    let count = |what: &str| -> usize {
        output
            .lines()
            .filter_map(|l| l.strip_prefix("test result: "))
            .flat_map(|l| l.split(';'))
            .filter_map(|part| {
                let mut words = part.split_whitespace().rev();
                if words.next()? != what {
                    return None;
                }
                words.next()?.parse::<usize>().ok()
            })
            .sum()
    };
    if !status.success() {
        return Verdict::Failed(format!("{status}"));
    }
    match (count("passed"), count("ignored")) {
        (1, 0) => Verdict::Passed,
        (0, 1) => Verdict::Ignored,
        (passed, ignored) => Verdict::Failed(format!(
            "the harness ran {passed} test(s) and ignored {ignored} where one was asked for by its exact name"
        )),
    }
}

/// The output of a test's process: stdout and stderr, in the order they arrived.
struct Output {
    text: Arc<Mutex<Vec<u8>>>,
    done: mpsc::Receiver<()>,
    readers: usize,
}

impl Output {
    fn capture(child: &mut Child) -> Output {
        let text = Arc::new(Mutex::new(Vec::new()));
        let (tx, done) = mpsc::channel();
        let mut readers = 0;
        let streams: [Option<Box<dyn Read + Send>>; 2] = [
            child.stdout.take().map(|s| Box::new(s) as Box<dyn Read + Send>),
            child.stderr.take().map(|s| Box::new(s) as Box<dyn Read + Send>),
        ];
        for mut stream in streams.into_iter().flatten() {
            let (text, tx) = (Arc::clone(&text), tx.clone());
            readers += 1;
            std::thread::spawn(move || {
                let mut chunk = [0u8; 8192];
                while let Ok(n) = stream.read(&mut chunk) {
                    if n == 0 {
                        break;
                    }
                    text.lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .extend_from_slice(&chunk[..n]);
                }
                let _ = tx.send(());
            });
        }
        Output { text, done, readers }
    }

    /// What arrived, once both pipes ended or [`DRAIN`] passed.
    fn take(self) -> String {
        let deadline = Instant::now() + DRAIN;
        for _ in 0..self.readers {
            let left = deadline.saturating_duration_since(Instant::now());
            if self.done.recv_timeout(left).is_err() {
                break;
            }
        }
        let bytes = std::mem::take(&mut *self.text.lock().unwrap_or_else(|p| p.into_inner()));
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::ExitStatusExt;

    /// A stand-in for a libtest binary: `--exact NAME` runs the shell case NAME.
    const HARNESS: &str = r#"#!/bin/sh
[ "$1" = --exact ] || exit 64
pass() { echo "running 1 test"; echo "test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 9 filtered out"; }
busy_for() { end=$(( $(date +%s) + $1 )); while [ "$(date +%s)" -lt "$end" ]; do :; done; }
case "$2" in
  passes) pass;;
  ignored) echo "test result: ok. 0 passed; 0 failed; 1 ignored; 0 measured; 9 filtered out";;
  fails) echo "assertion failed: the node differs"; echo "test result: FAILED. 0 passed; 1 failed; 0 ignored"; exit 101;;
  hangs) sleep 60 & echo $! > left-behind.pid; sleep 60;;
  forks) ( sleep 60; echo woke );;
  hangs-once) if [ -e hung-once ]; then pass; else touch hung-once; sleep 60; fi;;
  fails-once) if [ -e failed-once ]; then pass; else touch failed-once; exit 101; fi;;
  busy) busy_for 4; pass;;
  spins) busy_for 60;;
  unknown) echo "test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 10 filtered out";;
esac
"#;

    /// The stand-in harness in a fresh directory, as a binary labelled `demo tests/x`.
    fn harness() -> (tempfile::TempDir, Binary) {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("harness");
        std::fs::write(&exe, HARNESS).unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        let binary = Binary {
            executable: exe,
            dir: dir.path().to_path_buf(),
            label: "demo tests/x".into(),
        };
        (dir, binary)
    }

    fn tests<'a>(binary: &'a Binary, names: &[&str]) -> Vec<Test<'a>> {
        names
            .iter()
            .map(|name| Test {
                binary,
                name: name.to_string(),
            })
            .collect()
    }

    /// Two seconds idle, six in all: a test busy for four passes.
    const LIMITS: Limits = Limits {
        total: Duration::from_secs(6),
        idle: Duration::from_secs(2),
        retry: true,
    };

    #[test]
    fn each_test_gets_its_verdict_and_a_hung_one_is_killed_with_its_group() {
        let (dir, binary) = harness();
        let names = [
            "passes",
            "ignored",
            "fails",
            "hangs",
            "hangs-once",
            "fails-once",
            "busy",
            "spins",
            "unknown",
        ];
        let started = Instant::now();
        let summary = run(&tests(&binary, &names), &[], 2, LIMITS);
        assert!(
            started.elapsed() < Duration::from_secs(40),
            "the hung tests were not stopped"
        );
        assert_eq!((summary.passed, summary.ignored), (4, 1));
        assert_eq!(
            summary.failed,
            [
                "demo tests/x  fails",
                "demo tests/x  hangs",
                "demo tests/x  spins",
                "demo tests/x  unknown"
            ]
        );
        assert_eq!(
            summary.passed_when_run_again,
            ["demo tests/x  fails-once", "demo tests/x  hangs-once"]
        );
        let pid = std::fs::read_to_string(dir.path().join("left-behind.pid")).unwrap();
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).unwrap_or_default();
        let state = stat.rsplit_once(") ").and_then(|(_, rest)| rest.chars().next());
        assert!(
            matches!(state, None | Some('Z')),
            "what the hung test started in its group still runs: {stat}"
        );
    }

    #[test]
    fn an_idle_test_is_killed_early_named_with_its_processes_and_a_retry_only_when_allowed() {
        let (_dir, binary) = harness();
        let test = &tests(&binary, &["hangs"])[0];
        let started = Instant::now();
        let (verdict, _) = run_one(test, &[], &LIMITS);
        assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
        let Verdict::Idle(why) = verdict else {
            panic!("{verdict:?}")
        };
        assert!(
            why.starts_with(
                "none of its processes used the CPU for 2 s: killed with its process group; its processes were "
            ),
            "{why}"
        );
        // The shell and its two sleeps, each with its command line and state.
        assert!(why.contains("harness --exact hangs --test-threads=1) S"), "{why}");
        assert_eq!(why.matches("(sleep 60) S").count(), 2, "{why}");

        // A subshell is a fork without an exec: it keeps its parent's command line.
        let (verdict, _) = run_one(&tests(&binary, &["forks"])[0], &[], &LIMITS);
        let Verdict::Idle(why) = verdict else {
            panic!("{verdict:?}")
        };
        assert_eq!(why.matches(", forked and not yet exec'd").count(), 1, "{why}");
        assert!(
            why.contains("harness --exact forks --test-threads=1) S in do_wait, forked and not yet exec'd"),
            "{why}"
        );

        let no_retry = Limits { retry: false, ..LIMITS };
        let summary = run(&tests(&binary, &["hangs-once", "fails-once"]), &[], 1, no_retry);
        assert_eq!(summary.failed, ["demo tests/x  fails-once", "demo tests/x  hangs-once"]);
        assert!(summary.passed_when_run_again.is_empty());
    }

    #[test]
    fn the_verdict_needs_exactly_the_one_test_asked_for() {
        let ok = ExitStatus::from_raw(0);
        let line =
            |s: &str| format!("running 1 test\ntest result: ok. {s}; 0 measured; 3 filtered out; finished in 0.1s\n");
        assert_eq!(judge(ok, &line("1 passed; 0 failed; 0 ignored")), Verdict::Passed);
        assert_eq!(judge(ok, &line("0 passed; 0 failed; 1 ignored")), Verdict::Ignored);
        assert!(matches!(
            judge(ok, &line("0 passed; 0 failed; 0 ignored")),
            Verdict::Failed(_)
        ));
        assert!(matches!(judge(ok, "no summary at all"), Verdict::Failed(_)));
        assert!(matches!(
            judge(ExitStatus::from_raw(101 << 8), &line("1 passed; 0 failed; 0 ignored")),
            Verdict::Failed(_)
        ));
    }
}

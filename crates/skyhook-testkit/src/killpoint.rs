// SPDX-License-Identifier: Apache-2.0
//! The kill-point harness (crash consistency): runs a mode once under `strace` to
//! list the step's mutating system calls, then, for each of them (or every Nth) and
//! for [`SIGNALS`] (SIGKILL: the pod killed, the node losing power; SIGTERM: the
//! agent or the kubelet stopping the step, where it tells more, below), starts
//! again from the same tree, has strace send the signal to the step at exactly that
//! call, waits until whatever the step had started has ended (host tools finish
//! their work), runs the mode again normally and requires the node to end exactly
//! where the uninterrupted run ended: same host tree (contents, modes, symlinks,
//! live values in the fake `/proc/sys`, package state), same stand-in state, no
//! `*.skyhook-tmp*` file anywhere, and the check mode passing.
//!
//! Only the step's own process is traced (not `-f`): its helper threads only relay
//! command output, and killing a stand-in would simulate a failing tool, not a killed
//! step. Legitimately different, hence not compared: the stand-ins' call log
//! (`calls.log`), timestamps (a [`Tree`] holds none) and whatever a scenario lists
//! with [`KillPoints::ignoring`] (e.g. a stand-in's log of service restarts).
//!
//! SIGTERM is sent only where it can end the step otherwise than the SIGKILL at the
//! next mutating call ([`Call::term_tells_more`]): strace delivers SIGTERM as the
//! call returns, and a step that neither blocks nor handles SIGTERM dies right
//! there, before anything else changes the node, which is the node that SIGKILL
//! before the next mutating call leaves. So SIGTERM is tried where the step blocks
//! it (the process supervisor takes it and passes it on to the child), where it
//! handles it, at every call that starts a process or thread and at the last call;
//! the uninterrupted run's trace tells which (`rt_sigprocmask`, `rt_sigaction`).
//!
//! A campaign places at most [`AT_MOST`] kill points ([`KillPoints::at_most`] sets
//! another figure): past it, every Nth mutating call, from a rotating start — the
//! run of day D tries calls D mod N, D mod N + N, …, so N consecutive days of runs
//! together try every call, and SIGTERM is still sent only where it tells more than
//! the next call's SIGKILL, which another day's run tries. A failure names its
//! rotation: [`OFFSET_VAR`] reruns exactly those kill points. [`AT_MOST_VAR`] caps
//! every campaign's kill points for a whole run: a quick local run of the campaigns
//! (`SKYHOOK_KILL_POINTS_AT_MOST=6 cargo test -p tuning --test killpoints`).

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::saved::Saved;
use crate::{Node, Tree, limited};

/// System calls that change what SIGTERM does to the step, traced beside [`MUTATING`]
/// in the uninterrupted run ([`Call::term_taken`]).
const SIGNAL_STATE: &str = "rt_sigprocmask,rt_sigaction";

/// System calls that change the node, the way strace spells them (`?`: may not
/// exist on this architecture).
const MUTATING: &str = "?rename,?renameat,renameat2,?unlink,unlinkat,?mkdir,mkdirat,?rmdir,\
write,pwrite64,writev,fsync,fdatasync,fchmod,fchmodat,?fchmodat2,?chmod,openat,?open,?creat,\
execve,clone,clone3,?fork,?vfork,?symlink,symlinkat,?link,linkat,ftruncate,?truncate";

/// The environment variable that caps the kill points of every campaign in this
/// process (a positive integer; campaigns made with [`KillPoints::every_call`] are
/// exempt): a sample spread evenly over each run instead of up to [`KillPoints::at_most`].
pub const AT_MOST_VAR: &str = "SKYHOOK_KILL_POINTS_AT_MOST";

/// Kill points per campaign unless it says otherwise ([`KillPoints::at_most`]): the
/// largest campaigns make about 200 mutating calls, and every call of theirs cost the
/// test step minutes; spread over a few days' rotations they are all tried.
pub const AT_MOST: usize = 20;

/// The environment variable that chooses the rotation of every sampled campaign in
/// this process (a non-negative integer, taken modulo each campaign's stride):
/// the value a failure names, to try exactly its kill points again. Unset: the
/// day's rotation (days since the Unix epoch).
pub const OFFSET_VAR: &str = "SKYHOOK_KILL_POINTS_OFFSET";

/// The signals sent at each kill point, as strace names them, with the exit code a
/// step they end has (128 + the signal's number).
pub const SIGNALS: [(&str, i32); 2] = [("KILL", 128 + 9), ("TERM", 128 + 15)];

/// How long one run of a step may take before the harness calls it hung.
const STEP_LIMIT: Duration = Duration::from_secs(60);

/// One mutating system call of the uninterrupted run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// Position among the run's mutating calls (0-based).
    pub index: usize,
    /// The system call's name (`openat`).
    pub name: String,
    /// Which invocation of that system call it is (1-based, counting every
    /// invocation, mutating or not): strace's `when=`.
    pub ordinal: usize,
    /// The strace line, node paths shortened to host paths.
    pub line: String,
    /// Whether the step blocked or handled SIGTERM when it made this call.
    pub term_taken: bool,
}

impl Call {
    /// Whether this call starts a process or a thread.
    fn starts_a_task(&self) -> bool {
        matches!(self.name.as_str(), "clone" | "clone3" | "fork" | "vfork" | "execve")
    }

    /// Whether SIGTERM here can end the step otherwise than SIGKILL at the next
    /// mutating call (`next_killed`: there is a next call, a kill point of this run
    /// or of another rotation of a sampled campaign). Not
    /// at an open that would empty the simulated `/proc/sys` ([`empties_simulated_proc_sys`]).
    pub fn term_tells_more(&self, next_killed: bool) -> bool {
        !empties_simulated_proc_sys(self) && (!next_killed || self.term_taken || self.starts_a_task())
    }
}

/// A kill-point campaign over one mode of one node, configured by its builder methods.
pub struct KillPoints<'a> {
    node: &'a Node,
    mode: String,
    check: Option<String>,
    at_most: usize,
    every_call: bool,
    ignore: Vec<String>,
}

/// What a campaign found.
#[derive(Debug, Clone)]
pub struct Report {
    /// The mode run.
    pub mode: String,
    /// How many mutating system calls the uninterrupted run made.
    pub mutating: usize,
    /// Every how many of them a kill point was placed.
    pub stride: usize,
    /// The rotation: the first kill point is the mutating call of this index
    /// (0-based; below `stride`).
    pub offset: usize,
    /// Kill points tried, each signal of [`SIGNALS`] counted.
    pub tried: usize,
    /// Kill points (each signal counted) after which the rerun converged.
    pub converged: usize,
    /// One description per kill point that did not converge.
    pub failures: Vec<String>,
}

impl<'a> KillPoints<'a> {
    /// A campaign over `mode` on `node`, whose current tree is the starting point
    /// of every run (the node is put back to it after the campaign).
    pub fn new(node: &'a Node, mode: &str) -> Self {
        KillPoints {
            node,
            mode: mode.into(),
            check: None,
            at_most: AT_MOST,
            every_call: false,
            ignore: Vec::new(),
        }
    }

    /// The check mode that must pass after convergence (`config-check`).
    pub fn check(mut self, mode: &str) -> Self {
        self.check = Some(mode.into());
        self
    }

    /// At most `n` kill points: every Nth mutating call, N chosen to stay within `n`.
    pub fn at_most(mut self, n: usize) -> Self {
        self.at_most = n.max(1);
        self
    }

    /// A kill point at every mutating call, whatever [`AT_MOST_VAR`] says: for a
    /// campaign whose test holds that every call was tried.
    pub fn every_call(mut self) -> Self {
        self.every_call = true;
        self
    }

    /// Leaves a stand-in file (relative to the commands directory) out of the
    /// comparison, because a rerun legitimately changes it.
    pub fn ignoring(mut self, path: &str) -> Self {
        self.ignore.push(path.into());
        self
    }

    /// Runs the campaign, prints its report (after the package's name, when cargo
    /// runs the test) and asserts that every kill point converged: what a package's
    /// kill-point test does. Returns the report for further assertions.
    #[track_caller]
    pub fn assert_converges(self) -> Report {
        let report = self.run();
        let package = std::env::var("CARGO_PKG_NAME").unwrap_or_default();
        eprintln!("{package} {report}");
        report.assert_converged();
        report
    }

    /// Runs the campaign; the node ends as it started.
    pub fn run(self) -> Report {
        let saved = Saved::of(self.node);
        let calls = self.enumerate();
        let expected = self.state();
        self.require_check("the uninterrupted run");
        let budget = budget(self.at_most, self.every_call, cap_from_env());
        let stride = calls.len().div_ceil(budget).max(1);
        let offset = rotation() % stride;
        let mut report = Report {
            mode: self.mode.clone(),
            mutating: calls.len(),
            stride,
            offset,
            tried: 0,
            converged: 0,
            failures: Vec::new(),
        };
        let points = kill_points(calls.len(), stride, offset);
        let mut term_points = 0;
        for &index in &points {
            let call = &calls[index];
            let term = call.term_tells_more(index + 1 < calls.len());
            term_points += usize::from(term);
            for signal in SIGNALS {
                if signal.0 == "TERM" && !term {
                    continue;
                }
                saved.restore();
                report.tried += 1;
                match self.kill_and_rerun(call, signal, &expected) {
                    Ok(()) => report.converged += 1,
                    Err(why) => report
                        .failures
                        .push(format!("SIG{} at {}: {why}", signal.0, describe(call))),
                }
            }
        }
        saved.restore();
        crate::figures::record(
            "kill points",
            &report.mode,
            format!(
                "{} mutating calls; {} kill points × SIGKILL (every {}), {} of them × SIGTERM: {} runs, {} converged",
                report.mutating,
                points.len(),
                stride,
                term_points,
                report.tried,
                report.converged
            ),
        );
        report
    }

    /// The uninterrupted run under strace: its mutating calls. Panics when it fails.
    fn enumerate(&self) -> Vec<Call> {
        let log = self.node.copy_dir().parent().expect("node dir").join("strace.log");
        let out = limited::run(
            self.straced(&["-y", "-e", &format!("trace={MUTATING},{SIGNAL_STATE}")], &log),
            STEP_LIMIT,
        );
        assert_eq!(
            out.code,
            Some(0),
            "the uninterrupted {} must succeed before kill points mean anything:\n{}",
            self.mode,
            out.output
        );
        let text = std::fs::read_to_string(&log).expect("strace log");
        let _ = std::fs::remove_file(&log);
        let calls = mutating_calls(&text, self.node);
        assert!(!calls.is_empty(), "{}: strace saw no mutating call:\n{text}", self.mode);
        calls
    }

    /// Sends `signal` to the step at `call`, reruns the mode, compares with `expected`.
    fn kill_and_rerun(&self, call: &Call, signal: (&str, i32), expected: &State) -> Result<(), String> {
        let (name, code) = signal;
        let inject = format!("inject={}:signal={name}:when={}", call.name, call.ordinal);
        let trace = format!("trace={}", call.name);
        let dev_null = Path::new("/dev/null");
        let killed = limited::run(self.straced(&["-e", &trace, "-e", &inject], dev_null), STEP_LIMIT);
        // A step that handles SIGTERM itself (shellscript passes it to its script) may
        // end otherwise; it must still converge.
        if killed.code != Some(code) && (name != "TERM" || killed.code.is_none()) {
            return Err(format!(
                "the step was not ended by SIG{name} there (exit {:?}):\n{}",
                killed.code,
                excerpt(&killed.output)
            ));
        }
        wait_for_leftovers(self.node, LEFTOVER_LIMIT);
        let rerun = limited::run(self.node.command(&self.mode), STEP_LIMIT);
        if rerun.code != Some(0) {
            return Err(format!(
                "the rerun exited {:?}:\n{}",
                rerun.code,
                excerpt(&rerun.output)
            ));
        }
        let temporaries = temporaries(self.node);
        if !temporaries.is_empty() {
            return Err(format!("temporaries left: {}", temporaries.join(", ")));
        }
        let diff = expected.diff(&self.state());
        if !diff.is_empty() {
            return Err(format!(
                "the node differs from the uninterrupted run:\n    {}",
                diff.join("\n    ")
            ));
        }
        match &self.check {
            Some(check) => self.check_passes(check),
            None => Ok(()),
        }
    }

    fn require_check(&self, after: &str) {
        if let Some(check) = &self.check {
            if let Err(why) = self.check_passes(check) {
                panic!("after {after}: {why}");
            }
        }
    }

    fn check_passes(&self, check: &str) -> Result<(), String> {
        let out = limited::run(self.node.command(check), STEP_LIMIT);
        match out.code {
            Some(0) => Ok(()),
            code => Err(format!("{check} exited {code:?}:\n{}", excerpt(&out.output))),
        }
    }

    /// The step's command run by strace with `options`, trace written to `log`.
    fn straced(&self, options: &[&str], log: &Path) -> Command {
        let step = self.node.command(&self.mode);
        let mut c = Command::new("strace");
        c.args(["-qq", "-o"])
            .arg(log)
            .args(options)
            .arg("--")
            .arg(step.get_program());
        c.args(step.get_args()).env_clear();
        for (k, v) in step.get_envs() {
            if let Some(v) = v {
                c.env(k, v);
            }
        }
        c.current_dir(step.get_current_dir().expect("the step's working directory"));
        c
    }

    fn state(&self) -> State {
        let mut ignore: Vec<&str> = vec!["calls.log"];
        ignore.extend(self.ignore.iter().map(String::as_str));
        let root = self.node.snapshot();
        let texts = root
            .0
            .keys()
            .filter_map(|p| {
                let bytes = std::fs::read(self.node.root().join(p)).ok()?;
                (bytes.len() <= 16 << 10).then(|| (p.clone(), String::from_utf8_lossy(&bytes).into_owned()))
            })
            .collect();
        State {
            texts,
            root,
            copy_dir: Tree::of(self.node.copy_dir()),
            stand_ins: Tree::of_except(self.node.commands_dir(), &ignore),
        }
    }
}

impl Report {
    /// Asserts that every kill point tried converged, listing those that did not.
    #[track_caller]
    pub fn assert_converged(&self) {
        assert!(
            self.failures.is_empty(),
            "{}: {} of {} kill point(s) did not converge ({} mutating calls, every {}th tried from \
             call {}; {OFFSET_VAR}={} tries these again):\n{}",
            self.mode,
            self.failures.len(),
            self.tried,
            self.mutating,
            self.stride,
            self.offset + 1,
            self.offset,
            self.failures.join("\n")
        );
    }
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {} mutating calls, {} kill points tried (every {} from call {}, each signal counted), {} converged",
            self.mode,
            self.mutating,
            self.tried,
            self.stride,
            self.offset + 1,
            self.converged
        )
    }
}

/// Whether `call` opens a simulated `/proc/sys` file with `O_TRUNC`. strace sends
/// SIGKILL before the call runs but SIGTERM after it returns, and on a real node's
/// procfs `O_TRUNC` empties nothing, while the simulation's `/proc/sys` is made of
/// regular files that it does empty: a state no node can reach, so SIGTERM is not
/// sent there (SIGKILL is).
fn empties_simulated_proc_sys(call: &Call) -> bool {
    matches!(call.name.as_str(), "openat" | "open") && call.line.contains("/proc/sys/") && call.line.contains("O_TRUNC")
}

/// Waits until what the killed step had started and left running (a stand-in in the
/// middle of its work) has ended, before the rerun: otherwise the orphan races the
/// rerun (seen: a grubby stand-in's temporary left behind after the rerun ended).
/// The stand-ins play host tools and daemons, which finish their own work when the
/// step that called them dies; they are not themselves crash-safe, so they are
/// waited for, not killed (killing one mid-write left a half-written file no real
/// tool would). Past `limit` ([`LEFTOVER_LIMIT`] in a campaign) what is left is
/// killed. The leftovers are the processes whose command line names the node's
/// commands directory or its host root.
fn wait_for_leftovers(node: &Node, limit: Duration) {
    let markers = [node.commands_dir(), node.root()].map(|p| p.as_os_str().as_encoded_bytes().to_vec());
    let deadline = std::time::Instant::now() + limit;
    let mut quiet = false;
    loop {
        let left = leftovers(&markers);
        if left.is_empty() {
            // Twice, 10 ms apart: a child the step started just before its kill may
            // still be in its exec, whose new command line the kernel sets up last.
            if quiet {
                return;
            }
            quiet = true;
            std::thread::sleep(Duration::from_millis(10));
            continue;
        }
        quiet = false;
        if std::time::Instant::now() >= deadline {
            for pid in left {
                let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
            }
            std::thread::sleep(Duration::from_millis(50));
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// How long [`wait_for_leftovers`] waits in a campaign before it kills.
const LEFTOVER_LIMIT: Duration = Duration::from_secs(20);

/// The pids of the processes (other than this one) whose command line contains one
/// of `markers`.
fn leftovers(markers: &[Vec<u8>]) -> Vec<i32> {
    let own = std::process::id() as i32;
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if pid == own {
            continue;
        }
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        if markers
            .iter()
            .any(|m| cmdline.windows(m.len()).any(|w| w == m.as_slice()))
        {
            found.push(pid);
        }
    }
    found
}

/// The indexes of the mutating calls a campaign of `calls` calls kills at: every
/// `stride`th from `offset`. The `stride` rotations together try every call once.
fn kill_points(calls: usize, stride: usize, offset: usize) -> Vec<usize> {
    (offset..calls).step_by(stride.max(1)).collect()
}

/// The rotation of this run's sampled campaigns: [`OFFSET_VAR`], else the day.
/// Panics, naming the variable, when it is not a non-negative integer.
fn rotation() -> usize {
    match std::env::var_os(OFFSET_VAR) {
        Some(value) => {
            let text = value.to_string_lossy();
            text.trim().parse::<usize>().unwrap_or_else(|_| {
                panic!(
                    "{OFFSET_VAR}={:?}: not a rotation; set the number a failed campaign named, or unset it",
                    text.chars().take(40).collect::<String>()
                )
            })
        }
        None => {
            let since_epoch = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default();
            (since_epoch.as_secs() / 86_400) as usize
        }
    }
}

/// How many kill points a campaign may place: `at_most`, lowered to `cap`
/// ([`AT_MOST_VAR`]) unless the campaign tries `every_call`.
fn budget(at_most: usize, every_call: bool, cap: Option<usize>) -> usize {
    match (every_call, cap) {
        (true, _) => usize::MAX,
        (false, Some(cap)) => at_most.min(cap),
        (false, None) => at_most,
    }
}

/// [`AT_MOST_VAR`]'s value; panics, naming the variable, when it is not a positive
/// integer.
fn cap_from_env() -> Option<usize> {
    let value = std::env::var_os(AT_MOST_VAR)?;
    let text = value.to_string_lossy();
    match text.trim().parse::<usize>() {
        Ok(n) if n > 0 => Some(n),
        _ => panic!(
            "{AT_MOST_VAR}={:?}: not a number of kill points; set a positive integer or unset it",
            text.chars().take(40).collect::<String>()
        ),
    }
}

/// Everything a converged rerun must reproduce, plus the text of the host's small
/// files to show how a changed one differs.
struct State {
    root: Tree,
    copy_dir: Tree,
    stand_ins: Tree,
    texts: std::collections::BTreeMap<std::path::PathBuf, String>,
}

impl State {
    fn diff(&self, other: &State) -> Vec<String> {
        let mut out: Vec<String> = self
            .root
            .diff(&other.root)
            .into_iter()
            .map(|d| self.explain(other, d))
            .collect();
        for (label, d) in [
            ("copy dir", self.copy_dir.diff(&other.copy_dir)),
            ("stand-ins", self.stand_ins.diff(&other.stand_ins)),
        ] {
            out.extend(d.into_iter().map(|l| format!("{label} {l}")));
        }
        out
    }
}

impl State {
    /// `d` (a [`Tree::diff`] line) with the first line that differs, for a changed text file.
    fn explain(&self, other: &State, d: String) -> String {
        let Some(path) = d.strip_prefix("changed: /") else {
            return d;
        };
        let (Some(a), Some(b)) = (
            self.texts.get(std::path::Path::new(path)),
            other.texts.get(std::path::Path::new(path)),
        ) else {
            return d;
        };
        match a.lines().zip(b.lines()).find(|(x, y)| x != y) {
            Some((x, y)) => format!("{d}: expected {:?}, found {:?}", x, y),
            None => format!("{d}: {} lines expected, {} found", a.lines().count(), b.lines().count()),
        }
    }
}

/// The mutating calls of a strace log (`-y`, one process), with per-name ordinals;
/// writes to the stand-ins' call log are left out.
///
/// A write to a file of the fake `/proc/sys` is killed at the open of its file
/// descriptor instead. The fake is a regular file, which the open's `O_TRUNC`
/// empties before the write; the kernel's procfs never does (truncating a sysctl
/// file changes nothing), so on a real node a step killed before its write leaves
/// the kernel value as it was. Killing at the open gives the fake exactly that
/// outcome: value unchanged, as a kill before the write on a real node.
pub fn mutating_calls(log: &str, node: &Node) -> Vec<Call> {
    // The simulation's own bookkeeping (the call log the host layer appends to before
    // each command) is not the package's: no kill point there.
    let calls_log = node.commands_dir().join("calls.log").display().to_string();
    let proc_sys = node.root().join("proc/sys").display().to_string();
    let mut seen = std::collections::BTreeMap::<String, usize>::new();
    let mut opened = std::collections::BTreeMap::<String, (usize, String)>::new();
    let mut calls: Vec<Call> = Vec::new();
    let mut term = TermState::default();
    for line in log.lines() {
        let Some((name, args)) = line.split_once('(') else {
            continue;
        };
        if line.starts_with("---")
            || line.starts_with("+++")
            || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            continue;
        }
        if term.follow(name, args) {
            continue;
        }
        let ordinal = seen.entry(name.to_string()).or_default();
        *ordinal += 1;
        let ordinal = *ordinal;
        if matches!(name, "openat" | "open") {
            if let Some(path) = opened_path(line) {
                opened.insert(path.to_string(), (ordinal, line.to_string()));
            }
        }
        if !is_mutating(name, args, ordinal) || line.contains(&calls_log) {
            continue;
        }
        let (name, ordinal, line) = match fd_path(args).filter(|p| p.starts_with(&proc_sys)) {
            Some(path) => match opened.get(path) {
                Some((open, open_line)) => ("openat", *open, open_line.as_str()),
                None => (name, ordinal, line),
            },
            None => (name, ordinal, line),
        };
        if calls.iter().any(|c| c.name == name && c.ordinal == ordinal) {
            continue;
        }
        calls.push(Call {
            index: calls.len(),
            name: name.to_string(),
            ordinal,
            line: shorten(line, node),
            term_taken: term.taken(),
        });
    }
    calls
}

/// What the step has done to SIGTERM so far, read from its `rt_sigprocmask` and
/// `rt_sigaction` calls as strace prints them (`rt_sigprocmask(SIG_BLOCK, [INT TERM
/// CHLD], [], 8) = 0`, `~[]` for every signal; `rt_sigaction(SIGTERM, {sa_handler=…`).
#[derive(Default)]
struct TermState {
    blocked: bool,
    handled: bool,
}

impl TermState {
    /// Follows one traced call; true when it was one of [`SIGNAL_STATE`] (no kill
    /// point). A call that failed changes nothing.
    fn follow(&mut self, name: &str, args: &str) -> bool {
        let succeeded = args.trim_end().ends_with("= 0");
        match name {
            "rt_sigprocmask" => {
                let mut fields = args.splitn(2, ", ");
                let how = fields.next().unwrap_or("");
                let set = fields.next().and_then(term_in_set);
                match (succeeded, how, set) {
                    (true, "SIG_BLOCK", Some(true)) => self.blocked = true,
                    (true, "SIG_UNBLOCK", Some(true)) => self.blocked = false,
                    (true, "SIG_SETMASK", Some(in_set)) => self.blocked = in_set,
                    _ => {}
                }
                true
            }
            "rt_sigaction" => {
                if succeeded && args.starts_with("SIGTERM, {") {
                    let action = &args["SIGTERM, {".len()..];
                    self.handled = !action.starts_with("sa_handler=SIG_DFL");
                }
                true
            }
            _ => false,
        }
    }

    fn taken(&self) -> bool {
        self.blocked || self.handled
    }
}

/// Whether the signal set that starts `text` (`[INT TERM]`, `~[RTMIN]`) holds
/// SIGTERM; `None` for `NULL` or anything else.
fn term_in_set(text: &str) -> Option<bool> {
    let (complement, rest) = match text.strip_prefix('~') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let listed = rest.strip_prefix('[')?.split_once(']')?.0;
    let named = listed.split_whitespace().any(|s| s == "TERM" || s == "SIGTERM");
    Some(named != complement)
}

/// The path of the file descriptor a call's first argument names (`3</a/b>`, `-y`).
fn fd_path(args: &str) -> Option<&str> {
    args.split_once('<')
        .and_then(|(_, rest)| rest.split_once('>'))
        .map(|(p, _)| p)
}

/// The path of the file descriptor an open returned (`... = 3</a/b>`, `-y`).
fn opened_path(line: &str) -> Option<&str> {
    let (_, ret) = line.rsplit_once(") = ")?;
    ret.split_once('<')
        .and_then(|(_, rest)| rest.rsplit_once('>'))
        .map(|(p, _)| p)
}

/// Whether one traced call changes the node: writes only to files (not pipes,
/// terminals or devices), opens only with `O_CREAT`, never the step's own `execve`.
fn is_mutating(name: &str, args: &str, ordinal: usize) -> bool {
    match name {
        "write" | "pwrite64" | "writev" => fd_path(args).is_some_and(|p| p.starts_with('/') && !p.starts_with("/dev/")),
        "openat" | "open" => args.contains("O_CREAT"),
        "execve" => ordinal > 1,
        _ => true,
    }
}

/// Every `*.skyhook-tmp*` path anywhere in the node.
fn temporaries(node: &Node) -> Vec<String> {
    let mut out = Vec::new();
    for dir in [node.root(), node.copy_dir()] {
        for p in Tree::of(dir).0.keys() {
            if p.to_string_lossy().contains(".skyhook-tmp") {
                out.push(format!("/{}", p.display()));
            }
        }
    }
    out
}

fn describe(call: &Call) -> String {
    format!(
        "mutating call #{} ({} #{}): {}",
        call.index, call.name, call.ordinal, call.line
    )
}

/// A strace line with the node's directories written as the host would see them.
fn shorten(line: &str, node: &Node) -> String {
    let line = line.replace(&node.root().display().to_string(), "");
    let line = line.replace(&node.copy_dir().display().to_string(), "$SKYHOOK_DIR");
    let line = line.replace(&node.commands_dir().display().to_string(), "<stand-ins>");
    line.chars().take(300).collect()
}

/// The first lines of an output, for failure messages.
fn excerpt(output: &str) -> String {
    let lines: Vec<&str> = output.lines().take(12).collect();
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_to_the_fake_proc_sys_is_killed_at_its_open() {
        let n = Node::new("/bin/true");
        let root = n.root().display().to_string();
        let log = format!(
            "openat(AT_FDCWD</>, \"{root}/proc/sys/vm/swappiness\", O_WRONLY|O_CLOEXEC|O_TRUNC) = 3<{root}/proc/sys/vm/swappiness>\n\
             write(3<{root}/proc/sys/vm/swappiness>, \"10\\n\", 3) = 3\n\
             openat(AT_FDCWD</>, \"{root}/etc/x\", O_WRONLY|O_CREAT|O_TRUNC, 0644) = 3<{root}/etc/x>\n\
             write(3<{root}/etc/x>, \"a\", 1) = 1\n"
        );
        let calls: Vec<(String, usize)> = mutating_calls(&log, &n)
            .into_iter()
            .map(|c| (c.name, c.ordinal))
            .collect();
        let expected = [("openat", 1), ("openat", 2), ("write", 2)];
        assert_eq!(calls, expected.map(|(name, o)| (name.to_string(), o)));
    }

    #[test]
    fn sigterm_counts_as_taken_while_blocked_or_handled_only() {
        let n = Node::new("/bin/true");
        let root = n.root().display().to_string();
        let write =
            |f: &str| format!("openat(AT_FDCWD</>, \"{root}/etc/{f}\", O_WRONLY|O_CREAT, 0644) = 3<{root}/etc/{f}>\n");
        let log = [
            write("plain"),
            "rt_sigprocmask(SIG_BLOCK, [INT TERM CHLD], [], 8) = 0\n".into(),
            write("blocked"),
            "rt_sigprocmask(SIG_BLOCK, ~[], [INT TERM CHLD], 8) = 0\n".into(),
            "rt_sigprocmask(SIG_SETMASK, [INT TERM CHLD], NULL, 8) = 0\n".into(),
            write("still-blocked"),
            "rt_sigprocmask(SIG_SETMASK, [], NULL, 8) = 0\n".into(),
            "rt_sigprocmask(SIG_BLOCK, ~[TERM], [], 8) = 0\n".into(),
            write("all-but-term-blocked"),
            "rt_sigprocmask(SIG_UNBLOCK, [TERM], NULL, 8) = -1 EINVAL (Invalid argument)\n".into(),
            "rt_sigaction(SIGTERM, {sa_handler=0x55d1c0, sa_mask=~[RTMIN RT_1], sa_flags=SA_RESTORER, sa_restorer=0x7f}, NULL, 8) = 0\n".into(),
            write("handled"),
            "rt_sigaction(SIGTERM, {sa_handler=SIG_DFL, sa_mask=[], sa_flags=SA_RESTORER, sa_restorer=0x7f}, NULL, 8) = 0\n".into(),
            write("default-again"),
        ]
        .concat();
        let taken: Vec<(String, bool)> = mutating_calls(&log, &n)
            .into_iter()
            .map(|c| (c.line.split('"').nth(1).unwrap_or_default().to_string(), c.term_taken))
            .collect();
        let expected = [
            ("/etc/plain", false),
            ("/etc/blocked", true),
            ("/etc/still-blocked", true),
            ("/etc/all-but-term-blocked", false),
            ("/etc/handled", true),
            ("/etc/default-again", false),
        ];
        assert_eq!(taken, expected.map(|(p, t)| (p.to_string(), t)));
    }

    #[test]
    fn sigterm_is_tried_only_where_it_can_end_the_step_otherwise_than_the_next_sigkill() {
        let call = |name: &str, term_taken: bool| Call {
            index: 0,
            name: name.into(),
            ordinal: 2,
            line: format!("{name}(...)"),
            term_taken,
        };
        assert!(
            !call("write", false).term_tells_more(true),
            "the next call's SIGKILL leaves the same node"
        );
        assert!(call("write", false).term_tells_more(false), "the last call");
        assert!(call("write", true).term_tells_more(true), "blocked or handled");
        assert!(call("clone3", false).term_tells_more(true), "a process starts");
        let mut proc_sys = call("openat", true);
        proc_sys.line = "openat(AT_FDCWD</>, \"/r/proc/sys/vm/x\", O_WRONLY|O_TRUNC) = 3".into();
        assert!(!proc_sys.term_tells_more(false));
    }

    #[test]
    fn the_rotations_of_a_sampled_campaign_together_try_every_call_once() {
        for calls in [1usize, 7, 60, 61, 120, 208] {
            let stride = calls.div_ceil(AT_MOST).max(1);
            let mut tried = Vec::new();
            for offset in 0..stride {
                let points = kill_points(calls, stride, offset);
                assert!(
                    points.len() <= AT_MOST,
                    "{calls} calls, rotation {offset}: {}",
                    points.len()
                );
                assert_eq!(
                    points.first(),
                    Some(&offset),
                    "{calls} calls: a rotation starts at its offset"
                );
                tried.extend(points);
            }
            tried.sort_unstable();
            assert_eq!(tried, (0..calls).collect::<Vec<_>>(), "{calls} calls, every {stride}th");
        }
    }

    #[test]
    fn the_cap_lowers_a_campaigns_kill_points_but_not_one_that_tries_every_call() {
        assert_eq!(budget(40, false, None), 40);
        assert_eq!(budget(40, false, Some(8)), 8);
        assert_eq!(
            budget(5, false, Some(8)),
            5,
            "a cap never raises a campaign's own figure"
        );
        assert_eq!(budget(40, true, Some(8)), usize::MAX);
    }

    /// A `sleep` whose command line names a stand-in in `node`'s commands directory
    /// (its `argv[0]`), as one that the killed step left running would. Returns once
    /// `/proc` shows that command line: spawn returns when the child's exec has
    /// replaced its memory, and the kernel sets up the new arguments a moment later
    /// (an empty `cmdline` in between, seen under load).
    fn leftover(node: &Node, seconds: &str) -> std::process::Child {
        use std::os::unix::process::CommandExt;
        let argv0 = node.commands_dir().join("grubby");
        let child = crate::spawn_gated(Command::new("sleep").arg0(&argv0).arg(seconds)).expect("sleep");
        let markers = [argv0.as_os_str().as_encoded_bytes().to_vec()];
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !leftovers(&markers).contains(&(child.id() as i32)) {
            assert!(std::time::Instant::now() < deadline, "/proc never showed {argv0:?}");
            std::thread::sleep(Duration::from_millis(1));
        }
        child
    }

    #[test]
    fn the_harness_waits_for_what_the_killed_step_left_running_to_finish() {
        let n = Node::new("/bin/true");
        let mut child = leftover(&n, "0.5");
        let started = std::time::Instant::now();
        wait_for_leftovers(&n, Duration::from_secs(20));
        let waited = started.elapsed();
        let status = child.wait().expect("wait");
        assert!(
            status.success(),
            "the leftover must end by itself, not be killed: {status:?}"
        );
        assert!(
            waited >= Duration::from_millis(400),
            "the harness returned after {waited:?}, before the leftover had finished"
        );
    }

    #[test]
    fn the_harness_kills_a_leftover_still_running_past_its_limit() {
        let n = Node::new("/bin/true");
        let mut child = leftover(&n, "30");
        let started = std::time::Instant::now();
        wait_for_leftovers(&n, Duration::from_millis(300));
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "it waited out the leftover"
        );
        let status = child.wait().expect("wait");
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(9), "the leftover must be killed: {status:?}");
    }

    #[test]
    fn a_process_of_another_node_is_not_a_leftover() {
        let n = Node::new("/bin/true");
        let other = Node::new("/bin/true");
        let mut child = leftover(&other, "30");
        let started = std::time::Instant::now();
        wait_for_leftovers(&n, Duration::from_secs(20));
        let waited = started.elapsed();
        let still_running = child.try_wait().expect("try_wait").is_none();
        let _ = child.kill();
        let _ = child.wait();
        assert!(still_running, "another node's process was killed");
        assert!(
            waited < Duration::from_secs(5),
            "it waited {waited:?} for another node's process"
        );
    }
}

// SPDX-License-Identifier: Apache-2.0
//! The script as a supervised process: output streamed live and apart, signals to
//! the step passed on to the script's whole process group, the grace period, the
//! time limit, and exit codes of scripts ended by a signal.

mod common;

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use common::{node, report_line, wait_for};
use nix::sys::signal::{self, SigHandler, SigSet, SigmaskHow, Signal, kill};
use nix::unistd::Pid;
use skyhook_testkit::Node;

/// Starts the step in `mode` with both output pipes captured.
fn spawn(n: &Node, mode: &str) -> Child {
    skyhook_testkit::spawn_gated(n.command(mode).stdout(Stdio::piped()).stderr(Stdio::piped())).expect("start the step")
}

/// Reads a pipe to its end in a thread.
fn slurp(pipe: impl Read + Send + 'static) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut s = String::new();
        BufReader::new(pipe).read_to_string(&mut s).unwrap();
        s
    })
}

/// Sends `sig` to the step, waits for it, returns (exit code, stderr).
fn signal_and_wait(mut child: Child, sig: Signal) -> (i32, String, Duration) {
    let err = slurp(child.stderr.take().unwrap());
    let out = slurp(child.stdout.take().unwrap());
    // Taken before the signal goes: a test thread descheduled between the two would
    // otherwise measure less than the step waited.
    let sent = Instant::now();
    kill(Pid::from_raw(child.id() as i32), sig).unwrap();
    let status = child.wait().unwrap();
    let took = sent.elapsed();
    out.join().unwrap();
    (
        status.code().expect("the step exits, it is not killed"),
        err.join().unwrap(),
        took,
    )
}

#[test]
fn stdout_and_stderr_stream_live_apart_and_in_order() {
    let n = node();
    n.configmap(
        "apply.sh",
        "echo out-1\nsleep 0.3\necho err-1 >&2\nsleep 0.3\necho out-2\nsleep 0.3\necho err-2 >&2\nsleep 0.3\n",
    );
    let start = Instant::now();
    let mut child = spawn(&n, "apply");
    let (tx, rx) = mpsc::channel();
    let readers: Vec<_> = [
        ("stdout", Box::new(child.stdout.take().unwrap()) as Box<dyn Read + Send>),
        ("stderr", Box::new(child.stderr.take().unwrap())),
    ]
    .into_iter()
    .map(|(stream, pipe)| {
        let tx = tx.clone();
        thread::spawn(move || {
            for line in BufReader::new(pipe).lines() {
                tx.send((start.elapsed(), stream, line.unwrap())).unwrap();
            }
        })
    })
    .collect();
    drop(tx);
    let status = child.wait().unwrap();
    let ended = start.elapsed();
    readers.into_iter().for_each(|r| r.join().unwrap());
    assert!(status.success());
    let mut lines: Vec<(Duration, &str, String)> = rx
        .iter()
        .filter(|(_, _, l)| l.starts_with("out-") || l.starts_with("err-"))
        .collect();
    lines.sort_by_key(|(t, _, _)| *t);
    let seen: Vec<(&str, &str)> = lines.iter().map(|(_, s, l)| (*s, l.as_str())).collect();
    assert_eq!(
        seen,
        [
            ("stdout", "out-1"),
            ("stderr", "err-1"),
            ("stdout", "out-2"),
            ("stderr", "err-2")
        ],
        "each line on its own stream, in the order written"
    );
    for pair in lines.windows(2) {
        assert!(
            pair[1].0 - pair[0].0 > Duration::from_millis(150),
            "not live: {lines:?}"
        );
    }
    assert!(
        ended - lines[0].0 > Duration::from_millis(700),
        "out-1 arrived only at the end: {lines:?}"
    );
}

#[test]
fn sigterm_reaches_the_scripts_children_and_the_step_exits_143() {
    let n = node();
    n.configmap(
        "apply.sh",
        r#"sh -c 'trap "echo got TERM > \"$SKYHOOK_DIR/child-got-term\"; exit 0" TERM
touch "$SKYHOOK_DIR/ready"
while :; do sleep 0.05; done' &
wait
"#,
    );
    let child = spawn(&n, "apply");
    wait_for(&n.copy_dir().join("ready"));
    let (code, stderr, _) = signal_and_wait(child, Signal::SIGTERM);
    assert_eq!(code, 143, "{stderr}");
    assert_eq!(
        std::fs::read_to_string(n.copy_dir().join("child-got-term"))
            .ok()
            .as_deref(),
        Some("got TERM\n"),
        "the script's child did not get SIGTERM:\n{stderr}"
    );
    assert!(
        stderr.contains("received SIGTERM: passing it on to the script's process group"),
        "{stderr}"
    );
    assert!(
        stderr.contains("apply.sh was stopped: the step received SIGTERM"),
        "{stderr}"
    );
    assert!(report_line(&stderr).contains("exit_code=143"), "{stderr}");
}

#[test]
fn sigint_stops_the_script_with_exit_130() {
    let n = node();
    n.configmap("config.sh", "touch \"$SKYHOOK_DIR/ready\"\nsleep 10\n");
    let child = spawn(&n, "config");
    wait_for(&n.copy_dir().join("ready"));
    let (code, stderr, took) = signal_and_wait(child, Signal::SIGINT);
    assert_eq!(code, 130, "{stderr}");
    assert!(stderr.contains("received SIGINT"), "{stderr}");
    assert!(took < Duration::from_secs(5), "{took:?}");
}

/// Starts the step as a background job starts it (`nohup`, `cmd &` in a script,
/// many CI agents): SIGINT and SIGQUIT ignored. SIGUSR1 ignored and SIGUSR2 blocked
/// besides, as any parent may leave them.
fn spawn_in_background(n: &Node, mode: &str) -> Child {
    let mut command = n.command(mode);
    // SAFETY: between fork and exec, only sigaction and sigprocmask (async-signal-safe).
    unsafe {
        command.pre_exec(|| {
            for sig in [Signal::SIGINT, Signal::SIGQUIT, Signal::SIGUSR1] {
                signal::signal(sig, SigHandler::SigIgn)?;
            }
            signal::sigprocmask(SigmaskHow::SIG_BLOCK, Some(&SigSet::from(Signal::SIGUSR2)), None)?;
            Ok(())
        });
    }
    skyhook_testkit::spawn_gated(command.stdout(Stdio::piped()).stderr(Stdio::piped())).expect("start the step")
}

#[test]
fn sigint_stops_the_script_of_a_step_started_with_sigint_ignored() {
    let n = node();
    n.configmap("config.sh", "touch \"$SKYHOOK_DIR/ready\"\nsleep 10\n");
    let child = spawn_in_background(&n, "config");
    wait_for(&n.copy_dir().join("ready"));
    let (code, stderr, took) = signal_and_wait(child, Signal::SIGINT);
    assert_eq!(code, 130, "{stderr}");
    assert!(stderr.contains("received SIGINT"), "{stderr}");
    assert!(
        took < Duration::from_secs(5),
        "the script ignored SIGINT: {took:?}\n{stderr}"
    );
}

#[test]
fn the_script_starts_with_no_signal_ignored_or_blocked() {
    let n = node();
    n.configmap(
        "apply.sh",
        "grep -E '^Sig(Blk|Ign):' /proc/self/status > \"$SKYHOOK_DIR/signals\"\n",
    );
    let mut child = spawn_in_background(&n, "apply");
    let err = slurp(child.stderr.take().unwrap());
    let out = slurp(child.stdout.take().unwrap());
    let status = child.wait().unwrap();
    let (stderr, _) = (err.join().unwrap(), out.join().unwrap());
    assert!(status.success(), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(n.copy_dir().join("signals")).unwrap(),
        "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n",
        "what the step inherited reached the script's commands"
    );
}

#[test]
fn a_script_ignoring_sigterm_is_killed_after_the_grace_period() {
    let mut n = node();
    n.env("SHELLSCRIPT_GRACE_PERIOD", "0.3");
    n.configmap(
        "apply.sh",
        "trap '' TERM\ntouch \"$SKYHOOK_DIR/ready\"\nsleep 10\necho 'not reached'\n",
    );
    let child = spawn(&n, "apply");
    wait_for(&n.copy_dir().join("ready"));
    let (code, stderr, took) = signal_and_wait(child, Signal::SIGTERM);
    assert_eq!(code, 143, "{stderr}");
    assert!(
        stderr.contains("has not ended within the grace period of 0.3 s (SHELLSCRIPT_GRACE_PERIOD); killing it"),
        "{stderr}"
    );
    assert!(stderr.contains("then killed it after the grace period"), "{stderr}");
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_secs(5),
        "{took:?}"
    );
}

#[test]
fn the_time_limit_stops_the_script_with_exit_124() {
    let mut n = node();
    n.env("SHELLSCRIPT_TIMEOUT", "0.4");
    n.configmap("apply.sh", "echo started\nsleep 10\necho 'not reached'\n");
    let start = Instant::now();
    let r = n.run("apply");
    let took = start.elapsed();
    r.expect_code(124)
        .expect_output("started")
        .expect_output("time limit SHELLSCRIPT_TIMEOUT=0.4 (0.4 s) reached: stopping the script's process group")
        .expect_output("apply.sh exceeded its time limit SHELLSCRIPT_TIMEOUT=0.4 (0.4 s) and was stopped")
        .expect_output("outcome=time-limit");
    assert!(!r.output().contains("not reached"));
    assert!(took < Duration::from_secs(5), "{took:?}");
}

#[test]
fn a_script_killed_by_a_signal_exits_128_plus_the_signal() {
    let n = node();
    for (signal, code) in [("KILL", 137), ("USR1", 138), ("TERM", 143)] {
        n.configmap("apply.sh", format!("echo before\nkill -{signal} $$\necho after\n"));
        let r = n.run("apply");
        r.expect_code(code)
            .expect_output("before")
            .expect_output(&format!("(SIG{signal}) (not sent by this step); exit code {code}"))
            .expect_output(&format!("outcome=killed-by-SIG{signal}"));
        assert!(!r.stdout.contains("after"), "{}", r.stdout);
    }
}

#[test]
fn orphans_of_the_script_are_reaped_while_it_runs() {
    let n = node();
    // Three double-forked processes: orphaned at once, reparented to the step.
    n.configmap(
        "apply.sh",
        r#"for i in 1 2 3; do ( sleep 0.05 & ); done
sleep 0.6
awk -v step=$PPID '$4 == step && $3 == "Z"' /proc/[0-9]*/stat 2>/dev/null | wc -l | sed 's/^ */zombies=/'
"#,
    );
    n.run("apply").expect_code(0).expect_output("zombies=0\n");
}

#[test]
fn a_step_killed_outright_still_stops_its_script() {
    let n = node();
    n.configmap(
        "apply.sh",
        r#"trap 'echo got TERM > "$SKYHOOK_DIR/script-got-term"; exit 0' TERM
touch "$SKYHOOK_DIR/ready"
while :; do sleep 0.05; done
"#,
    );
    let mut child =
        skyhook_testkit::spawn_gated(n.command("apply").stdout(Stdio::null()).stderr(Stdio::null())).unwrap();
    wait_for(&n.copy_dir().join("ready"));
    child.kill().unwrap();
    child.wait().unwrap();
    wait_for(&n.copy_dir().join("script-got-term"));
}

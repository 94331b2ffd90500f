// SPDX-License-Identifier: Apache-2.0
//! Nothing the script starts outlives the step: a process moved to a session of
//! its own (`setsid`, ignoring SIGTERM) and a double-forked daemon, both holding
//! the step's stdout and stderr, are gone once the step has ended — after a
//! normal end, after the time limit and after SIGTERM — and they do not delay the
//! step's end (its output pipes reach their end at once, not when they would exit).

mod common;

use std::io::Read;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::{node, report_line, wait_for};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use skyhook_testkit::Node;

/// Starts the two daemons, writes their pids, marks `ready`, then runs `rest`.
/// The loop shell ignores SIGTERM, so only SIGKILL after the grace period ends it;
/// its command line carries the copy dir, so any survivor can be found by it.
fn script(rest: &str) -> String {
    format!(
        r#"setsid sh -c 'trap "" TERM; echo $$ > "$1/setsid.pid"; i=0; while [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done' leftover-setsid "$SKYHOOK_DIR" &
( sh -c 'echo $$ > "$1/daemon.pid"; sleep 20; :' leftover-daemon "$SKYHOOK_DIR" & )
until [ -s "$SKYHOOK_DIR/setsid.pid" ] && [ -s "$SKYHOOK_DIR/daemon.pid" ]; do sleep 0.01; done
touch "$SKYHOOK_DIR/ready"
{rest}
"#
    )
}

fn node_with(rest: &str) -> Node {
    let mut n = node();
    n.host_program("setsid", "/usr/bin/setsid");
    n.env("SHELLSCRIPT_GRACE_PERIOD", "0.3");
    n.configmap("apply.sh", script(rest));
    n
}

/// The pid a daemon wrote.
fn pid(n: &Node, file: &str) -> i32 {
    std::fs::read_to_string(n.copy_dir().join(file))
        .unwrap_or_else(|e| panic!("{file}: {e}"))
        .trim()
        .parse()
        .unwrap()
}

/// Processes (not zombies) whose command line names this node's copy dir.
fn survivors(n: &Node) -> Vec<String> {
    let marker = n.copy_dir().display().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let pid: i32 = e.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let state = stat.rsplit_once(") ")?.1.chars().next()?;
            (cmdline.contains(&marker) && state != 'Z').then(|| format!("{pid}: {cmdline}"))
        })
        .collect()
}

/// Asserts both daemons are gone (by pid and by command line); kills any survivor
/// so that a failing test leaves nothing behind either.
#[track_caller]
fn assert_all_gone(n: &Node, output: &str) {
    let running = |pid: i32| {
        std::fs::read_to_string(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c.contains("leftover-"))
            && std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .is_ok_and(|s| s.rsplit_once(") ").is_some_and(|(_, r)| !r.starts_with('Z')))
    };
    let (setsid, daemon) = (pid(n, "setsid.pid"), pid(n, "daemon.pid"));
    let left: Vec<i32> = [setsid, daemon].into_iter().filter(|p| running(*p)).collect();
    let others = survivors(n);
    for p in &left {
        let _ = kill(Pid::from_raw(*p), Signal::SIGKILL);
    }
    assert!(left.is_empty(), "still running: {left:?}\n{output}");
    assert!(others.is_empty(), "still running: {others:?}\n{output}");
}

#[test]
fn after_a_normal_end_the_scripts_leftovers_are_stopped_and_named() {
    let n = node_with("echo done");
    let start = Instant::now();
    let r = n.run("apply"); // waits for the end of both pipes, as the agent does
    let took = start.elapsed();
    let out = r.output();
    r.expect_code(0)
        .expect_output("done")
        .expect_output("the script ended but left ")
        .expect_output(&format!("pid {} (sh -c trap", pid(&n, "setsid.pid")))
        .expect_output(&format!("pid {} (sh -c echo", pid(&n, "daemon.pid")))
        .expect_output("(sleep 20)")
        .expect_output("stopping them (SIGTERM, SIGKILL after 0.3 s (SHELLSCRIPT_GRACE_PERIOD))")
        .expect_output(
            "has not ended within the grace period of 0.3 s (SHELLSCRIPT_GRACE_PERIOD); killing it (SIGKILL)",
        );
    assert!(report_line(&out).contains("exit_code=0 "), "{out}");
    assert_all_gone(&n, &out);
    // 0.3 s of grace for the SIGTERM-proof one; the sleep 20 ends at once.
    assert!(took < Duration::from_secs(2), "the step took {took:?}\n{out}");
    eprintln!("normal end with leftovers: step and its pipes done in {took:?}");
}

#[test]
fn after_the_time_limit_the_whole_tree_is_gone_and_the_step_exits_124() {
    let mut n = node_with("sleep 30");
    n.env("SHELLSCRIPT_TIMEOUT", "0.5");
    let start = Instant::now();
    let r = n.run("apply");
    let took = start.elapsed();
    let out = r.output();
    r.expect_code(124)
        .expect_output("time limit SHELLSCRIPT_TIMEOUT=0.5 (0.5 s) reached: stopping the script's process group")
        .expect_output("killing it (SIGKILL)");
    assert!(report_line(&out).contains("outcome=time-limit"), "{out}");
    assert_all_gone(&n, &out);
    // 0.5 s limit + 0.3 s grace; before, the pipes stayed open 20 s or more.
    assert!(took < Duration::from_secs(3), "the step took {took:?}\n{out}");
    eprintln!("time limit with leftovers: step and its pipes done in {took:?}");
}

#[test]
fn after_sigterm_the_whole_tree_is_gone_and_the_step_exits_143() {
    let n = node_with("while :; do sleep 0.05; done");
    let mut child = skyhook_testkit::spawn_gated(n.command("apply").stdout(Stdio::piped()).stderr(Stdio::piped()))
        .expect("start the step");
    let mut out_pipe = child.stdout.take().unwrap();
    let err = std::thread::spawn({
        let mut pipe = child.stderr.take().unwrap();
        move || {
            let mut s = String::new();
            pipe.read_to_string(&mut s).unwrap();
            s
        }
    });
    wait_for(&n.copy_dir().join("ready"));
    kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM).unwrap();
    let sent = Instant::now();
    let code = child.wait().unwrap().code();
    let mut out = String::new();
    out_pipe.read_to_string(&mut out).unwrap();
    let stderr = err.join().unwrap();
    let took = sent.elapsed();
    assert_eq!(code, Some(143), "{stderr}");
    assert!(
        stderr.contains("received SIGTERM: passing it on to the script's process group"),
        "{stderr}"
    );
    assert!(report_line(&stderr).contains("exit_code=143"), "{stderr}");
    assert_all_gone(&n, &stderr);
    assert!(
        took < Duration::from_secs(3),
        "the step took {took:?} after SIGTERM\n{stderr}"
    );
    eprintln!("SIGTERM with leftovers: step and its pipes done in {took:?}");
}

#[test]
fn a_script_that_leaves_nothing_behind_says_nothing_about_leftovers() {
    let n = node();
    n.configmap("apply.sh", "( true & )\nsleep 0.1 &\nwait\necho done\n");
    let r = n.run("apply");
    r.expect_code(0).expect_output("done");
    assert!(!r.output().contains("left"), "{}", r.output());
}

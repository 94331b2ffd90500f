// SPDX-License-Identifier: Apache-2.0
//! What the package adds around the script: the time from starting the step binary
//! to the script's first instruction, and from the script's last instruction to the
//! step's exit. Run with `cargo bench -p shellscript` (release-optimised binary).
//!
//! Method: the script's interpreter is this benchmark executable itself (named by
//! the script's shebang), in a probe role that prints the monotonic clock at its
//! first and last instruction. Each round runs the probe twice, interleaved:
//! - through the step: `shellscript apply` → `#!<probe>` → probe;
//! - directly: probe, with the same arguments, environment and directory.
//!
//! start = probe start − spawn; end = wait returned − probe end. The direct run
//! measures what exec and process teardown cost anyway; the package's overhead is
//! the difference of the medians. A second scenario runs a script without shebang
//! (bash, found through the host) against `bash <script>` directly, end to end.
//!
//! Environment: `SHELLSCRIPT_BENCH_RUNS` (default 500), `SHELLSCRIPT_BENCH_BINARY`
//! (default: the binary cargo built; point it at `dist/shellscript/skyhook_dir/shellscript`
//! to measure the static release build). Exits 1 when the median overhead is 5 ms or more.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use nix::libc;
use skyhook_testkit::Node;

const PROBE: &str = "SHELLSCRIPT_BENCH_PROBE";
const BUDGET: Duration = Duration::from_millis(5);

fn now_ns() -> u128 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: a valid timespec to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u128 * 1_000_000_000 + ts.tv_nsec as u128
}

fn main() {
    let first = now_ns();
    if std::env::var_os(PROBE).is_some() {
        let last = now_ns();
        println!("{first} {last}");
        return;
    }
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo bench -- --list` and friends
    }
    let runs: usize = std::env::var("SHELLSCRIPT_BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(500);
    let binary = std::env::var("SHELLSCRIPT_BENCH_BINARY").unwrap_or_else(|_| env!("CARGO_BIN_EXE_shellscript").into());
    let probe = std::env::current_exe().expect("the benchmark's own path");

    let n = Node::new(&binary);
    n.configmap("apply.sh", format!("#!{}\n", probe.display()));
    n.configmap("config.sh", "true\n");
    let script = n.copy_dir().join("configmaps/apply.sh");
    let bash = n.copy_dir().join("configmaps/config.sh");
    // A node as the agent runs it: host root `/`, real program lookup.
    let step = |mode: &str| {
        let mut c = n.command(mode);
        c.env_remove("SKYHOOK_HOST_ROOT")
            .env_remove("SKYHOOK_HOST_COMMANDS")
            .env(PROBE, "1")
            .stdin(Stdio::null())
            .stderr(Stdio::null());
        c
    };
    let direct = |program: &Path, script: &Path, mode: &str| {
        let agent = step(mode);
        let mut d = Command::new(program);
        d.arg(script)
            .arg(mode)
            .env_clear()
            .envs(agent.get_envs().filter_map(|(k, v)| Some((k, v?))))
            .current_dir(n.copy_dir())
            .stdin(Stdio::null())
            .stderr(Stdio::null());
        d
    };

    println!("shellscript overhead: {runs} rounds, binary {binary}");
    let (mut start, mut end, mut base_start, mut base_end) = (vec![], vec![], vec![], vec![]);
    let (mut bash_step, mut bash_direct) = (vec![], vec![]);
    for _ in 0..runs {
        let (s, e) = probe_run(step("apply"));
        start.push(s);
        end.push(e);
        let (s, e) = probe_run(direct(&probe, &script, "apply"));
        base_start.push(s);
        base_end.push(e);
        bash_step.push(wall(step("config")));
        bash_direct.push(wall(direct(Path::new("/bin/bash"), &bash, "config")));
    }
    let ms = |ns: f64| ns / 1e6;
    let row = |what: &str, step: &mut Vec<u128>, base: &mut Vec<u128>| {
        let (m, b) = (median(step), median(base));
        skyhook_testkit::bench::figure(
            &format!("{what} (median of {runs} rounds)"),
            format!(
                "step {:.3} ms, direct {:.3} ms, overhead {:.3} ms (p90 step {:.3} ms)",
                ms(m),
                ms(b),
                ms(m - b),
                ms(percentile(step, 0.9))
            ),
        );
        m - b
    };
    let s = row("start → script start", &mut start, &mut base_start);
    let e = row("script end → exit", &mut end, &mut base_end);
    let total = ms(s + e);
    skyhook_testkit::bench::figure(
        &format!("overhead, start + end (median of {runs} rounds)"),
        format!("{total:.3} ms (budget {} ms)", BUDGET.as_millis()),
    );
    let b = row("bash script, end to end", &mut bash_step, &mut bash_direct);
    let worst = total.max(ms(b));
    if worst >= BUDGET.as_secs_f64() * 1e3 {
        println!("FAIL: median overhead {worst:.3} ms is over the budget");
        std::process::exit(1);
    }
    println!("ok: median overhead within the {} ms budget", BUDGET.as_millis());
}

/// Runs a command whose interpreter is the probe; returns (start, end) overheads in ns.
fn probe_run(mut c: Command) -> (u128, u128) {
    c.stdout(Stdio::piped());
    let spawned = now_ns();
    let mut child = c.spawn().expect("spawn");
    let mut out = String::new();
    child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    let status = child.wait().unwrap();
    let exited = now_ns();
    assert!(status.success(), "{status}: {out}");
    let mut stamps = out.split_whitespace().map(|t| t.parse::<u128>().expect("probe output"));
    let (first, last) = (stamps.next().unwrap(), stamps.next().unwrap());
    (first - spawned, exited - last)
}

/// Runs a command to its end; returns the wall time in ns.
fn wall(mut c: Command) -> u128 {
    c.stdout(Stdio::null());
    let t = now_ns();
    let status = c.status().expect("spawn");
    assert!(status.success(), "{status}");
    now_ns() - t
}

fn median(v: &mut [u128]) -> f64 {
    percentile(v, 0.5)
}

fn percentile(v: &mut [u128], p: f64) -> f64 {
    v.sort_unstable();
    let i = ((v.len() - 1) as f64 * p).round() as usize;
    v[i] as f64
}

// SPDX-License-Identifier: Apache-2.0
//! Figures for the packages' benches. A build machine shared with other builds
//! inflates wall time by however long the step waited for a core; the CPU time
//! (user + system) a step used does not move with the load, so the benches report
//! it beside the wall time. Each figure a bench reports ([`figure`]) is printed and,
//! under `SKYHOOK_FIGURES`, recorded for the generated figures file (FIGURES.md), the
//! one place the READMEs point to for measured numbers.

use std::time::{Duration, Instant};

use nix::sys::resource::{Usage, UsageWho, getrusage};

use crate::Node;

/// User plus system time of one `getrusage` answer.
fn cpu_of(usage: &Usage) -> Duration {
    let d = |t: nix::sys::time::TimeVal| Duration::new(t.tv_sec().max(0) as u64, (t.tv_usec().max(0) as u32) * 1000);
    d(usage.user_time()) + d(usage.system_time())
}

/// The CPU time of every child process of this one that ended so far.
pub fn children_cpu() -> Duration {
    cpu_of(&getrusage(UsageWho::RUSAGE_CHILDREN).expect("getrusage(RUSAGE_CHILDREN)"))
}

/// The CPU time the calling thread used so far (for in-process work, which runs on
/// it): other threads of the process (a parallel test, a bench harness's own) do not
/// count.
pub fn own_cpu() -> Duration {
    cpu_of(&getrusage(UsageWho::RUSAGE_THREAD).expect("getrusage(RUSAGE_THREAD)"))
}

/// How long one piece of work took: on the clock, and on the CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// Wall-clock time.
    pub wall: Duration,
    /// User plus system CPU time.
    pub cpu: Duration,
}

/// Runs `mode` on `node` once, requiring exit 0; its wall time and the CPU time of
/// the step's processes (the binary and the stand-ins it ran).
pub fn time_mode(node: &Node, mode: &str) -> Timing {
    let cpu = children_cpu();
    let start = Instant::now();
    let run = node.run(mode);
    let wall = start.elapsed();
    run.expect_code(0);
    Timing {
        wall,
        cpu: children_cpu() - cpu,
    }
}

impl Timing {
    /// `wall` and `cpu` in `unit` (`"ns"`, `"µs"` or `"ms"`), as `13.6 µs wall, 9.7 µs
    /// CPU`, one decimal.
    pub fn in_unit(&self, unit: &str) -> String {
        let scale = match unit {
            "ns" => 1e9,
            "µs" => 1e6,
            _ => 1e3,
        };
        format!(
            "{:.1} {unit} wall, {:.1} {unit} CPU",
            self.wall.as_secs_f64() * scale,
            self.cpu.as_secs_f64() * scale
        )
    }
}

/// Runs `work` `runs` times in this process; the time of one run, on average.
pub fn time_in_process(runs: u32, mut work: impl FnMut()) -> Timing {
    work();
    let (cpu, start) = (own_cpu(), Instant::now());
    for _ in 0..runs {
        work();
    }
    Timing {
        wall: start.elapsed() / runs,
        cpu: (own_cpu() - cpu) / runs,
    }
}

/// The 1-minute load average (`/proc/loadavg`), printed beside the figures: `?`
/// where it cannot be read.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}

/// The median of `samples` (the upper one of an even count); `None` when empty.
pub fn median(mut samples: Vec<Duration>) -> Option<Duration> {
    samples.sort();
    samples.get(samples.len() / 2).copied()
}

/// The section of the figures file benches record in.
pub const SECTION: &str = "benches";

/// Prints `what: value` and records it (section [`SECTION`], under the bench's name)
/// for the figures file.
pub fn figure(what: &str, value: impl std::fmt::Display) {
    let value = value.to_string();
    println!("{what}: {value}");
    crate::figures::record_as(SECTION, &bench_name(), what, &value);
}

/// The running bench's target name: its executable's name without cargo's hash
/// suffix (`checks-0123abcd` → `checks`).
fn bench_name() -> String {
    let exe = std::env::args().next().unwrap_or_default();
    let file = std::path::Path::new(&exe)
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    match file.rsplit_once('-') {
        Some((name, hash)) if !hash.is_empty() && hash.chars().all(|c| c.is_ascii_hexdigit()) => name.to_string(),
        _ => file,
    }
}

/// Medians of wall and CPU time over `timings`, as `wall 7.1 ms, CPU 3.0 ms (50 runs)`.
pub fn summary(timings: &[Timing]) -> String {
    let ms = |d: Option<Duration>| d.map_or(f64::NAN, |d| d.as_secs_f64() * 1e3);
    format!(
        "median wall {:.1} ms, median CPU {:.1} ms ({} runs)",
        ms(median(timings.iter().map(|t| t.wall).collect())),
        ms(median(timings.iter().map(|t| t.cpu).collect())),
        timings.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_is_the_middle_sample() {
        let ms = Duration::from_millis;
        assert_eq!(median(vec![ms(9), ms(1), ms(5)]), Some(ms(5)));
        assert_eq!(median(vec![ms(4), ms(1), ms(3), ms(2)]), Some(ms(3)));
        assert_eq!(median(Vec::new()), None);
    }

    #[test]
    fn a_timing_reads_in_the_unit_asked() {
        let t = Timing {
            wall: Duration::from_nanos(13_600),
            cpu: Duration::from_nanos(9_700),
        };
        assert_eq!(t.in_unit("µs"), "13.6 µs wall, 9.7 µs CPU");
        assert_eq!(t.in_unit("ns"), "13600.0 ns wall, 9700.0 ns CPU");
    }

    #[test]
    fn in_process_work_is_timed_on_the_cpu() {
        let busy = Duration::from_millis(10);
        let t = time_in_process(3, || {
            let start = own_cpu();
            while own_cpu() - start < busy {
                std::hint::black_box(0u64);
            }
        });
        assert!(t.cpu >= busy && t.wall + Duration::from_millis(1) >= t.cpu, "{t:?}");
    }
}

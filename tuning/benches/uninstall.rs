// SPDX-License-Identifier: Apache-2.0
//! Cost of uninstall (and of the config before it) with many managed files: an
//! entry of 500 and of 2,000 `service_<unit>.conf` keys, each a drop-in in a
//! `<unit>.service.d` directory of its own that the package creates. The real
//! (release) binary, run as the agent runs it, against a scratch root with a
//! `systemctl` stand-in.
//!
//! Both must grow linearly with the number of files: the bench fails (panics) when
//! the larger entry's median CPU time is more than [`MAX_GROWTH`] times the
//! smaller's (linear is ×4; one pass over every file per file removed is ×16).
//!
//! `cargo bench -p tuning --bench uninstall` (optionally `-- <runs>`, default 5
//! runs per size).

use std::time::Duration;

use skyhook_testkit::Node;
use skyhook_testkit::bench::{self, Timing, time_mode};

const SIZES: [usize; 2] = [500, 2_000];
/// Largest accepted growth of the CPU time from the smaller size to the larger.
const MAX_GROWTH: f64 = 6.0;

/// A systemd node whose configMap asks for `units` service drop-ins.
fn node(units: usize) -> Node {
    let n = Node::new(env!("CARGO_BIN_EXE_tuning")).named("bench").version("2.0.0");
    n.file(
        "/etc/os-release",
        skyhook_testkit::skyhook_core::os::distro::fixtures::UBUNTU_2204,
    );
    n.file("/etc/systemd/system/multi-user.target.wants/ssh.service", "");
    n.systemd_running(true);
    // Every call succeeds with no output: no unit runs, so none has limits to check.
    n.stand_in("systemctl", ":\n");
    for i in 0..units {
        n.configmap(&format!("service_bench{i}.conf"), "[Service]\nLimitNOFILE=1048576\n");
    }
    n
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Median CPU and wall time of `timings`.
fn medians(timings: &[Timing]) -> (Duration, Duration) {
    let median = |v: Vec<Duration>| bench::median(v).expect("at least one run");
    (
        median(timings.iter().map(|t| t.cpu).collect()),
        median(timings.iter().map(|t| t.wall).collect()),
    )
}

fn main() {
    let runs: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(5);
    println!(
        "config then uninstall of an entry of N service drop-ins, median of {runs} runs (release binary, \
         scratch root; load average {})",
        bench::load_average()
    );
    let mut rows = Vec::new();
    for units in SIZES {
        let n = node(units);
        let (mut config, mut uninstall) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            config.push(time_mode(&n, "config"));
            uninstall.push(time_mode(&n, "uninstall"));
        }
        let (config, uninstall) = (medians(&config), medians(&uninstall));
        bench::figure(
            &format!("config, then uninstall, {units} files (median of {runs})"),
            format!(
                "config {:.1} ms CPU / {:.1} ms wall; uninstall {:.1} ms CPU / {:.1} ms wall ({:.1} µs CPU per file)",
                ms(config.0),
                ms(config.1),
                ms(uninstall.0),
                ms(uninstall.1),
                ms(uninstall.0) * 1e3 / units as f64
            ),
        );
        rows.push((units, config.0, uninstall.0));
    }
    let (small, config_small, uninstall_small) = rows[0];
    let (large, config_large, uninstall_large) = rows[1];
    let growth = |a: Duration, b: Duration| b.as_secs_f64() / a.as_secs_f64();
    let (config_growth, uninstall_growth) = (
        growth(config_small, config_large),
        growth(uninstall_small, uninstall_large),
    );
    bench::figure(
        "growth of the CPU time",
        format!(
            " {small}→{large} files (×{}): config CPU ×{config_growth:.1}, uninstall CPU ×{uninstall_growth:.1} \
         (linear ×{}, accepted up to ×{MAX_GROWTH})",
            large / small,
            large / small
        ),
    );
    assert!(
        uninstall_growth <= MAX_GROWTH && config_growth <= MAX_GROWTH,
        "the cost does not grow linearly with the number of files: from {small} to {large} files, uninstall's \
         CPU time grew ×{uninstall_growth:.1} and config's ×{config_growth:.1}, more than ×{MAX_GROWTH}"
    );
}

// SPDX-License-Identifier: Apache-2.0
//! Cost of uninstall (and of the config before it) with many profiles: a configMap
//! of 500 and of 2,000 profiles, each a `tuned.conf` in a profile directory of its
//! own that the package creates. The real (release) binary on a simulated Ubuntu
//! node with tuned installed (the tests' stand-ins).
//!
//! Both must grow linearly with the number of profiles: the bench fails (panics)
//! when the larger configMap's median CPU time is more than [`MAX_GROWTH`] times the
//! smaller's (linear is ×4; one pass over every directory per file removed is ×16).
//!
//! `cargo bench -p tuned --bench uninstall` (optionally `-- <runs>`, default 5 runs
//! per size).

use std::time::Duration;

use skyhook_testkit::Node;
use skyhook_testkit::bench::{self, Timing, time_mode};

#[path = "../tests/common/mod.rs"]
mod common;

const SIZES: [usize; 2] = [500, 2_000];
/// Largest accepted growth of the CPU time from the smaller size to the larger.
const MAX_GROWTH: f64 = 6.0;

/// A node with tuned installed whose configMap holds `profiles` profiles (the first
/// one active).
fn node(profiles: usize) -> Node {
    let n = common::debian(Some("2.21.0"));
    n.configmap("tuned_profile", "bench0");
    for i in 0..profiles {
        n.configmap(
            &format!("bench{i}"),
            "[main]\nsummary=bench\ninclude=throughput-performance\n\n[sysctl]\nvm.swappiness=10\n",
        );
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
        "config then uninstall of a configMap of N profiles, median of {runs} runs (release binary, simulated \
         node; load average {})",
        bench::load_average()
    );
    let mut rows = Vec::new();
    for profiles in SIZES {
        let n = node(profiles);
        let (mut config, mut uninstall) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            config.push(time_mode(&n, "config"));
            uninstall.push(time_mode(&n, "uninstall"));
            // uninstall removes tuned itself: put it back for the next config.
            common::preinstall(&n, "2.21.0");
        }
        let (config, uninstall) = (medians(&config), medians(&uninstall));
        bench::figure(
            &format!("config, then uninstall, {profiles} profiles (median of {runs})"),
            format!(
                "config {:.1} ms CPU / {:.1} ms wall; uninstall {:.1} ms CPU / {:.1} ms wall ({:.1} µs CPU per profile)",
                ms(config.0),
                ms(config.1),
                ms(uninstall.0),
                ms(uninstall.1),
                ms(uninstall.0) * 1e3 / profiles as f64
            ),
        );
        rows.push((profiles, config.0, uninstall.0));
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
            " {small}→{large} profiles (×{}): config CPU ×{config_growth:.1}, uninstall CPU \
         ×{uninstall_growth:.1} (linear ×{}, accepted up to ×{MAX_GROWTH})",
            large / small,
            large / small
        ),
    );
    assert!(
        uninstall_growth <= MAX_GROWTH && config_growth <= MAX_GROWTH,
        "the cost does not grow linearly with the number of profiles: from {small} to {large} profiles, \
         uninstall's CPU time grew ×{uninstall_growth:.1} and config's ×{config_growth:.1}, more than ×{MAX_GROWTH}"
    );
}

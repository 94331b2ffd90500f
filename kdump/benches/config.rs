// SPDX-License-Identifier: Apache-2.0
//! How long the steps an operator waits for take, on a simulated Ubuntu node (stand-in
//! tools, so the figures are the package's own cost, not apt's or update-grub's):
//! a config that changes nothing (the common case: every configMap edit re-runs
//! config), config-check, post-interrupt-check, and parsing a crashkernel range list.
//!
//! Run with `cargo bench -p kdump`.

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use kdump::crashkernel::CrashKernel;

fn summary(mut samples: Vec<Duration>) -> String {
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    format!(
        "median {:.1} ms, p90 {:.1} ms ({} runs)",
        at(0.5).as_secs_f64() * 1e3,
        at(0.9).as_secs_f64() * 1e3,
        samples.len()
    )
}

fn time_mode(node: &skyhook_testkit::Node, mode: &str, runs: usize) -> String {
    let samples = (0..runs)
        .map(|_| {
            let start = Instant::now();
            let run = node.run(mode);
            let took = start.elapsed();
            assert_eq!(run.code, 0, "{mode}: {}", run.output());
            took
        })
        .collect();
    summary(samples)
}

fn main() {
    let node = common::node(common::UBUNTU);
    node.run("apply");
    node.configmap("crashkernel", "1G-4G:192M,4G-64G:256M,64G-:512M")
        .configmap("kdump.conf", "USE_KDUMP=1\nKDUMP_COREDIR=\"/var/crash\"\n");
    assert_eq!(node.run("config").code, 0);
    common::reboot(&node, common::UBUNTU, 512 << 20);
    println!("config, nothing to change:  {}", time_mode(&node, "config", 50));
    println!("config-check:               {}", time_mode(&node, "config-check", 50));
    println!(
        "post-interrupt-check:       {}",
        time_mode(&node, "post-interrupt-check", 50)
    );

    let n = 200_000;
    let start = Instant::now();
    for _ in 0..n {
        std::hint::black_box(CrashKernel::parse(std::hint::black_box("1G-4G:192M,4G-64G:256M,64G-:512M")).unwrap());
    }
    let per = start.elapsed().as_secs_f64() / n as f64;
    println!("parse a 3-range crashkernel value: {:.0} ns", per * 1e9);
}

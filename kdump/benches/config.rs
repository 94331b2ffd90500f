// SPDX-License-Identifier: Apache-2.0
//! How long the steps an operator waits for take, on a simulated Ubuntu node (stand-in
//! tools, so the figures are the package's own cost, not apt's or update-grub's):
//! a config that changes nothing (the common case: every configMap edit re-runs
//! config), config-check, post-interrupt-check, and parsing a crashkernel range list.
//!
//! Run with `cargo bench -p kdump`.

#[path = "../tests/common/mod.rs"]
mod common;

use kdump::crashkernel::CrashKernel;
use skyhook_testkit::bench::{self, Timing};

fn time_mode(node: &skyhook_testkit::Node, mode: &str, runs: usize) -> String {
    let timings: Vec<Timing> = (0..runs).map(|_| bench::time_mode(node, mode)).collect();
    bench::summary(&timings)
}

fn main() {
    println!(
        "kdump, release binary on a simulated Ubuntu node (load average {}):",
        bench::load_average()
    );
    let node = common::node(common::UBUNTU);
    node.run("apply");
    node.configmap("crashkernel", "1G-4G:192M,4G-64G:256M,64G-:512M")
        .configmap("kdump.conf", "USE_KDUMP=1\nKDUMP_COREDIR=\"/var/crash\"\n");
    assert_eq!(node.run("config").code, 0);
    common::reboot(&node, common::UBUNTU, 512 << 20);
    bench::figure("config, nothing to change", time_mode(&node, "config", 50));
    bench::figure("config-check", time_mode(&node, "config-check", 50));
    bench::figure("post-interrupt-check", time_mode(&node, "post-interrupt-check", 50));

    let parse = bench::time_in_process(200_000, || {
        std::hint::black_box(CrashKernel::parse(std::hint::black_box("1G-4G:192M,4G-64G:256M,64G-:512M")).unwrap());
    });
    bench::figure("parse a 3-range crashkernel value", parse.in_unit("ns"));
}

// SPDX-License-Identifier: Apache-2.0
//! Cost of config-check + post-interrupt-check for a `sysctl.conf` of 1,000, 10,000
//! and 20,000 keys: the real (release) binary, run as the agent runs it, against a
//! scratch root with a fake `/proc/sys` and the sysctl.d files of an Ubuntu image.
//! The budget is 100 ms for 10,000 keys, growing linearly.
//!
//! `cargo bench -p tuning` (optionally `-- <runs>`, default 15 runs per size).

use std::time::Duration;

use skyhook_testkit::Node;
use skyhook_testkit::bench::{self, time_mode};

const SIZES: [usize; 3] = [1_000, 10_000, 20_000];
const BUDGET_10K: Duration = Duration::from_millis(100);

/// A node whose kernel has `keys` parameters and whose configMap sets them all.
fn node(keys: usize) -> Node {
    let n = Node::new(env!("CARGO_BIN_EXE_tuning")).named("bench").version("2.0.0");
    n.file(
        "/etc/os-release",
        skyhook_testkit::skyhook_core::os::distro::fixtures::UBUNTU_2204,
    );
    n.file(
        "/etc/sysctl.d/10-network-security.conf",
        "net.ipv4.conf.default.rp_filter=2\nnet.ipv4.conf.all.rp_filter=2\n",
    )
    .file(
        "/etc/sysctl.d/99-cloudimg-ipv6.conf",
        "net.ipv6.conf.all.use_tempaddr = 0\n",
    )
    .file(
        "/usr/lib/sysctl.d/50-default.conf",
        "kernel.core_uses_pid = 1\nfs.protected_regular = 1\n",
    )
    .file("/etc/sysctl.conf", "#net.ipv4.ip_forward=1\n");
    let mut conf = String::with_capacity(keys * 40);
    for i in 0..keys {
        let dir = format!("/proc/sys/bench/g{}", i / 250);
        let (initial, wanted) = if i % 10 == 0 {
            ("4096\t131072\t6291456".to_string(), format!("4096 {i} 16777216"))
        } else {
            ("0".to_string(), i.to_string())
        };
        n.file(&format!("{dir}/k{i}"), format!("{initial}\n"));
        conf.push_str(&format!("bench.g{}.k{i} = {wanted}\n", i / 250));
    }
    n.configmap("sysctl.conf", conf);
    let r = n.run("config");
    r.expect_code(0);
    n
}

fn median(v: Vec<Duration>) -> Duration {
    bench::median(v).expect("at least one run")
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    let runs: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(15);
    println!(
        "config-check + post-interrupt-check, median of {runs} runs (release binary, scratch root, fake /proc/sys; \
         load average {})",
        bench::load_average()
    );
    let mut totals = Vec::new();
    for keys in SIZES {
        let n = node(keys);
        let (mut cc, mut pic, mut wall, mut cpu) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for _ in 0..runs {
            let a = time_mode(&n, "config-check");
            let b = time_mode(&n, "post-interrupt-check");
            cc.push(a.wall);
            pic.push(b.wall);
            wall.push(a.wall + b.wall);
            cpu.push(a.cpu + b.cpu);
        }
        let (t, c) = (median(wall), median(cpu));
        totals.push((keys, t, c));
        bench::figure(
            &format!("config-check + post-interrupt-check, {keys} keys (median of {runs})"),
            format!(
                "{:.1} + {:.1} ms wall, {:.1} ms wall in all, {:.1} ms CPU ({:.2} µs CPU per key)",
                ms(median(cc)),
                ms(median(pic)),
                ms(t),
                ms(c),
                ms(c) * 1e3 / keys as f64
            ),
        );
    }
    let (_, t10, _) = totals.iter().find(|(k, _, _)| *k == 10_000).copied().unwrap();
    println!(
        "10,000 keys: {:.1} ms wall against a budget of {} ms: {}",
        ms(t10),
        BUDGET_10K.as_millis(),
        if t10 < BUDGET_10K {
            "within budget"
        } else {
            "OVER BUDGET"
        }
    );
    let (k1, t1, c1) = totals[0];
    let (k3, t3, c3) = totals[2];
    println!(
        "growth {k1}→{k3} keys (×{:.0}): wall ×{:.1}, CPU ×{:.1}",
        k3 as f64 / k1 as f64,
        t3.as_secs_f64() / t1.as_secs_f64(),
        c3.as_secs_f64() / c1.as_secs_f64()
    );
}

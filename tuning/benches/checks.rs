// SPDX-License-Identifier: Apache-2.0
//! Cost of config-check + post-interrupt-check for a `sysctl.conf` of 1,000, 10,000
//! and 20,000 keys: the real (release) binary, run as the agent runs it, against a
//! scratch root with a fake `/proc/sys` and the sysctl.d files of an Ubuntu image.
//! The budget is 100 ms for 10,000 keys, growing linearly.
//!
//! `cargo bench -p tuning` (optionally `-- <runs>`, default 15 runs per size).

use std::time::{Duration, Instant};

use skyhook_testkit::Node;

const SIZES: [usize; 3] = [1_000, 10_000, 20_000];
const BUDGET_10K: Duration = Duration::from_millis(100);

/// A node whose kernel has `keys` parameters and whose configMap sets them all.
fn node(keys: usize) -> Node {
    let n = Node::new(env!("CARGO_BIN_EXE_tuning")).named("bench").version("2.0.0");
    n.file(
        "/etc/os-release",
        skyhook_testkit::skyhook_core::distro::fixtures::UBUNTU_2204,
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

fn time(n: &Node, mode: &str) -> Duration {
    let start = Instant::now();
    let r = n.run(mode);
    let took = start.elapsed();
    r.expect_code(0);
    took
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    let runs: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(15);
    println!(
        "config-check + post-interrupt-check, median of {runs} runs (release binary, scratch root, fake /proc/sys)"
    );
    println!(
        "{:>7}  {:>16}  {:>24}  {:>10}  {:>10}",
        "keys", "config-check ms", "post-interrupt-check ms", "total ms", "µs/key"
    );
    let mut totals = Vec::new();
    for keys in SIZES {
        let n = node(keys);
        let (mut cc, mut pic, mut total) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..runs {
            let a = time(&n, "config-check");
            let b = time(&n, "post-interrupt-check");
            cc.push(a);
            pic.push(b);
            total.push(a + b);
        }
        let t = median(total);
        totals.push((keys, t));
        println!(
            "{keys:>7}  {:>16.1}  {:>24.1}  {:>10.1}  {:>10.2}",
            ms(median(cc)),
            ms(median(pic)),
            ms(t),
            ms(t) * 1e3 / keys as f64
        );
    }
    let t10 = totals.iter().find(|(k, _)| *k == 10_000).map(|(_, t)| *t).unwrap();
    println!(
        "10,000 keys: {:.1} ms against a budget of {} ms: {}",
        ms(t10),
        BUDGET_10K.as_millis(),
        if t10 < BUDGET_10K {
            "within budget"
        } else {
            "OVER BUDGET"
        }
    );
    let (k1, t1) = totals[0];
    let (k3, t3) = totals[2];
    println!(
        "growth {}→{} keys: ×{:.2} time for ×{:.0} keys",
        k1,
        k3,
        t3.as_secs_f64() / t1.as_secs_f64(),
        k3 as f64 / k1 as f64
    );
}

// SPDX-License-Identifier: Apache-2.0
//! What the shellscript tests share: a node whose host has bash and sh (the real
//! ones of this machine), and a helper to wait for a script to reach a point.

#![allow(dead_code)]

use std::path::Path;
use std::time::{Duration, Instant};

pub use skyhook_testkit::Node;

/// A node for the shellscript binary whose host has bash, sh and env, with the
/// versions an upgrade step gets (harmless in the other modes).
pub fn node() -> Node {
    let mut n = Node::new(env!("CARGO_BIN_EXE_shellscript"));
    n.host_program("bash", "/bin/bash")
        .host_program("sh", "/bin/sh")
        .host_program("env", "/usr/bin/env");
    n.env("PREVIOUS_VERSION", "1.0.0").env("CURRENT_VERSION", "2.0.0");
    n
}

/// Waits until `path` exists (a script's "I got here" mark); panics after 10 s.
#[track_caller]
pub fn wait_for(path: &Path) {
    let start = Instant::now();
    while !path.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The report line of a run's output.
#[track_caller]
pub fn report_line(output: &str) -> String {
    output
        .lines()
        .find(|l| l.contains("shellscript report:"))
        .unwrap_or_else(|| panic!("no report line in:\n{output}"))
        .to_string()
}

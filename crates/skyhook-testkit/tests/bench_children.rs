// SPDX-License-Identifier: Apache-2.0
//! `bench::children_cpu` counts the CPU time of this process's children that ended:
//! alone in its own test binary, because every child that any test of the same
//! process reaps meanwhile would count too (a parallel test's children made this
//! flaky as a unit test).

use std::process::Command;
use std::time::Duration;

use skyhook_testkit::bench::children_cpu;

#[test]
fn a_sleeping_child_costs_little_cpu_time_and_a_busy_one_shows() {
    let before = children_cpu();
    assert!(Command::new("sleep").arg("0.2").status().unwrap().success());
    let slept = children_cpu() - before;
    assert!(slept < Duration::from_millis(150), "sleep 0.2 used {slept:?} of CPU");

    let before = children_cpu();
    let busy = "end=$(( $(date +%s) + 2 )); while [ $(date +%s) -lt $end ]; do :; done";
    assert!(Command::new("sh").args(["-c", busy]).status().unwrap().success());
    let worked = children_cpu() - before;
    assert!(
        worked >= Duration::from_millis(100),
        "one to two seconds of busy shell used only {worked:?} of CPU"
    );
}

// SPDX-License-Identifier: Apache-2.0
//! How long config takes: validating the README example in-process (parse every key,
//! lay out the files, resolve includes and scripts against a node), and a whole
//! `tuned config` run of the binary on a simulated node when nothing changed (the
//! cost of every re-run the agent makes). Run with `cargo bench -p tuned`.

use std::time::{Duration, Instant};

use skyhook_core::host::command::RecordingRunner;
use skyhook_core::{ConfigMaps, Host};
use tuned::layout::{Tuned, TunedVersion};
use tuned::plan::Request;

#[path = "../tests/common/mod.rs"]
mod common;

fn per_run(runs: u32, mut f: impl FnMut()) -> Duration {
    f();
    let start = Instant::now();
    for _ in 0..runs {
        f();
    }
    start.elapsed() / runs
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::new(dir.path(), RecordingRunner::succeeding());
    for (name, content) in common::BUILTIN {
        host.write(format!("/usr/lib/tuned/{name}/tuned.conf"), content.as_bytes(), 0o644)
            .unwrap();
    }
    let layout = Tuned::with("2.21.0".into(), TunedVersion { major: 2, minor: 21 }, "", None);
    let configmaps = ConfigMaps::from_entries([
        ("tuned_profile", "custom_profile".to_string()),
        ("custom_profile", common::README_PROFILE.to_string()),
        ("custom_profile_1", common::README_PROFILE_1.to_string()),
        ("ai_init_script", common::README_SCRIPT.to_string()),
    ]);
    let validate = per_run(2000, || {
        let (request, problems) = Request::read(&configmaps).unwrap();
        assert!(problems.is_empty());
        request.plan(&host, &layout, &Default::default()).unwrap();
    });
    println!(
        "validate the README example (parse + plan): {:.1} µs per run",
        validate.as_secs_f64() * 1e6
    );

    let node = common::debian(Some("2.21.0"));
    common::readme_configmap(&node);
    node.run("config").expect_code(0);
    let rerun = per_run(50, || {
        node.run("config").expect_code(0);
    });
    println!(
        "tuned config re-run, nothing changed (binary + stand-ins `tuned --version`, `tuned-adm active`): {:.1} ms per run",
        rerun.as_secs_f64() * 1e3
    );
}

// SPDX-License-Identifier: Apache-2.0
//! How long config takes: validating the README example in-process (parse every key,
//! lay out the files, resolve includes and scripts against a node), and a whole
//! `tuned config` run of the binary on a simulated node when nothing changed (the
//! cost of every re-run the agent makes). Run with `cargo bench -p tuned`.

use skyhook_core::host::command::RecordingRunner;
use skyhook_core::{ConfigMaps, Host};
use skyhook_testkit::bench::{self, Timing};
use tuned::input::Request;
use tuned::layout::{Tuned, TunedVersion};

#[path = "../tests/common/mod.rs"]
mod common;

fn main() {
    println!("tuned (load average {}):", bench::load_average());
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
    let validate = bench::time_in_process(2000, || {
        let (request, problems) = Request::read(&configmaps).unwrap();
        assert!(problems.is_empty());
        request.plan(&host, &layout, &Default::default()).unwrap();
    });
    bench::figure(
        "validate the README example (parse + plan), mean of 2,000",
        validate.in_unit("µs") + " per run",
    );

    let node = common::debian(Some("2.21.0"));
    common::readme_configmap(&node);
    node.run("config").expect_code(0);
    node.run("config").expect_code(0);
    let reruns: Vec<Timing> = (0..50).map(|_| bench::time_mode(&node, "config")).collect();
    bench::figure(
        "config re-run, nothing changed (binary + stand-ins `tuned --version`, `tuned-adm active`)",
        bench::summary(&reruns),
    );
}

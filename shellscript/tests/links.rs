// SPDX-License-Identifier: Apache-2.0
//! A stage key that is a symbolic link: one resolving inside `configmaps/` (the way
//! Kubernetes mounts a ConfigMap, through `..data`) runs; one leading outside it is
//! refused in every stage before anything runs, naming the key and where it leads.

mod common;

use std::os::unix::fs::{PermissionsExt, symlink};

use common::node;
use skyhook_core::Mode;

/// A script that marks the host when it runs.
const MARKS: &str = "#!/bin/sh\necho ran > \"$SKYHOOK_HOST_ROOT/ran\"\n";

/// Writes `MARKS` as an executable file at `path`.
fn write_script(path: &std::path::Path) {
    std::fs::write(path, MARKS).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn a_stage_key_linking_outside_configmaps_is_refused_and_never_runs() {
    for mode in Mode::ALL {
        let n = node();
        let outside = n.copy_dir().join("outside.sh");
        write_script(&outside);
        let key = format!("{}.sh", mode.underscored());
        symlink(&outside, n.copy_dir().join("configmaps").join(&key)).unwrap();
        let run = n.run(mode.as_str());
        run.expect_code(2);
        let out = run.output();
        assert!(
            out.contains(&format!("{key:?}")) && out.contains("outside the configMap directory"),
            "{mode}: {out}"
        );
        assert!(!n.exists("/ran"), "{mode}: the linked script ran: {out}");
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), MARKS, "{mode}");
    }
}

#[test]
fn a_stage_key_linking_inside_configmaps_runs() {
    let n = node();
    let maps = n.copy_dir().join("configmaps");
    let data = maps.join("..2024_01_01_00_00_00.1");
    std::fs::create_dir(&data).unwrap();
    write_script(&data.join("config.sh"));
    symlink("..2024_01_01_00_00_00.1", maps.join("..data")).unwrap();
    symlink("..data/config.sh", maps.join("config.sh")).unwrap();
    n.run("config").expect_code(0);
    assert_eq!(
        n.read("/ran").as_deref(),
        Some("ran\n"),
        "the control: a link inside runs"
    );
}

// SPDX-License-Identifier: Apache-2.0
//! What systemd reads of a simulated node, for tests that assert which file wins.
//!
//! [`dropins`] models the drop-ins systemd (PID 1, system scope) applies to a unit,
//! in the order it applies them (upstream read: systemd v254+ `src/basic/path-lookup.c`
//! `lookup_paths_init`, the system unit search path; `src/shared/dropin.c`
//! `unit_file_find_dirs` and `unit_file_find_dropin_paths`, the drop-in directories
//! of a unit;
//! `src/basic/conf-files.c` `conf_files_list_strv`, their order; systemd.unit(5)):
//!
//! - The unit search path, first to last: `/etc/systemd/system.control`,
//!   `/run/systemd/system.control`, `/run/systemd/transient`,
//!   `/run/systemd/generator.early`, `/etc/systemd/system`,
//!   `/etc/systemd/system.attached`, `/run/systemd/system`,
//!   `/run/systemd/system.attached`, `/run/systemd/generator`,
//!   `/usr/local/lib/systemd/system`, `/usr/lib/systemd/system`,
//!   `/run/systemd/generator.late`.
//! - In each, the unit's drop-in directories: `<unit>.d`, then for a name with
//!   dashes each prefix ending in a dash (`foo-bar-baz.service`: `foo-bar-.service.d`,
//!   `foo-.service.d`); after those of every directory, the type's (`service.d`) in
//!   each.
//! - Every `*.conf` file there, sorted by file name alone, whichever directory it is
//!   in ("lexicographic order … regardless of which of the directories they reside
//!   in"); of files with one name, only the one in the directory earliest in the
//!   search path counts. A later setting of a key wins.
//!
//! Not modelled: templates and instances (`foo@.service.d`), aliases, masking by a
//! link to `/dev/null`, the user manager's search path.

use std::fs;
use std::path::Path;

use crate::Node;

/// The system manager's unit search path, first (highest priority) to last.
pub const SEARCH_PATH: [&str; 12] = [
    "/etc/systemd/system.control",
    "/run/systemd/system.control",
    "/run/systemd/transient",
    "/run/systemd/generator.early",
    "/etc/systemd/system",
    "/etc/systemd/system.attached",
    "/run/systemd/system",
    "/run/systemd/system.attached",
    "/run/systemd/generator",
    "/usr/local/lib/systemd/system",
    "/usr/lib/systemd/system",
    "/run/systemd/generator.late",
];

/// The drop-in directory names of `unit` (`containerd.service`) itself: its own,
/// then for a name with dashes each prefix ending in a dash, most specific first.
fn dropin_dir_names(unit: &str) -> Vec<String> {
    let (prefix, kind) = unit.rsplit_once('.').expect("a unit name with its type");
    let mut names = vec![format!("{unit}.d")];
    let mut rest = prefix;
    while let Some(dash) = rest.trim_end_matches('-').rfind('-') {
        if dash == 0 {
            break;
        }
        rest = &rest[..=dash];
        names.push(format!("{rest}.{kind}.d"));
        rest = &rest[..dash];
    }
    names
}

/// The drop-ins systemd applies to `unit` on `node`, as host paths, in the order it
/// applies them (the last one's settings win).
pub fn dropins(node: &Node, unit: &str) -> Vec<String> {
    let kind = unit.rsplit_once('.').expect("a unit name with its type").1;
    let mut dirs: Vec<String> = SEARCH_PATH
        .iter()
        .flat_map(|dir| {
            dropin_dir_names(unit)
                .into_iter()
                .map(move |name| format!("{dir}/{name}"))
        })
        .collect();
    dirs.extend(SEARCH_PATH.iter().map(|dir| format!("{dir}/{kind}.d")));
    let mut found: Vec<(String, String)> = Vec::new();
    for host_dir in dirs {
        let Ok(entries) = fs::read_dir(node.path(&host_dir)) else {
            continue;
        };
        for e in entries {
            let file = e.expect("directory entry").file_name().to_string_lossy().into_owned();
            if file.ends_with(".conf") && !found.iter().any(|(f, _)| *f == file) {
                found.push((file.clone(), format!("{host_dir}/{file}")));
            }
        }
    }
    found.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    found.into_iter().map(|(_, path)| path).collect()
}

/// The files pam_limits reads, in its order: `/etc/security/limits.conf`, then every
/// `*.conf` of `/etc/security/limits.d` in "C" locale order (Linux-PAM
/// `pam_limits(8)`: as if concatenated in that order; a later line for the same
/// domain, type and item wins).
pub fn limits_files(node: &Node) -> Vec<String> {
    let mut files: Vec<String> = fs::read_dir(node.path("/etc/security/limits.d"))
        .map(|entries| {
            entries
                .map(|e| e.expect("directory entry").file_name().to_string_lossy().into_owned())
                .filter(|f| f.ends_with(".conf"))
                .collect()
        })
        .unwrap_or_default();
    files.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    let mut out: Vec<String> = Vec::new();
    if Path::new(&node.path("/etc/security/limits.conf")).exists() {
        out.push("/etc/security/limits.conf".into());
    }
    out.extend(files.into_iter().map(|f| format!("/etc/security/limits.d/{f}")));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unit_has_its_own_and_its_prefixes_drop_in_directories() {
        assert_eq!(
            dropin_dir_names("nvidia-fabric-manager.service"),
            [
                "nvidia-fabric-manager.service.d",
                "nvidia-fabric-.service.d",
                "nvidia-.service.d",
            ]
        );
        assert_eq!(dropin_dir_names("containerd.service"), ["containerd.service.d"]);
    }

    #[test]
    fn drop_ins_apply_by_file_name_across_directories_the_earliest_directory_masking_a_name() {
        let node = Node::new("/bin/true");
        node.file("/usr/lib/systemd/system/containerd.service.d/10-vendor.conf", "")
            .file("/usr/lib/systemd/system/containerd.service.d/override.conf", "masked")
            .file("/etc/systemd/system/containerd.service.d/override.conf", "")
            .file("/etc/systemd/system/containerd.service.d/999-gpu-tuning.conf", "")
            .file("/run/systemd/system/service.d/50-all.conf", "")
            .file(
                "/etc/systemd/system/service.d/10-vendor.conf",
                "masked by the unit's own",
            )
            .file("/etc/systemd/system.control/containerd.service.d/50-MemoryMax.conf", "")
            .file("/etc/systemd/system/containerd.service.d/notes.txt", "");
        assert_eq!(
            dropins(&node, "containerd.service"),
            [
                "/usr/lib/systemd/system/containerd.service.d/10-vendor.conf",
                "/etc/systemd/system.control/containerd.service.d/50-MemoryMax.conf",
                "/run/systemd/system/service.d/50-all.conf",
                "/etc/systemd/system/containerd.service.d/999-gpu-tuning.conf",
                "/etc/systemd/system/containerd.service.d/override.conf",
            ]
        );
    }

    #[test]
    fn limits_files_are_read_in_c_locale_order_after_limits_conf() {
        let node = Node::new("/bin/true");
        node.file("/etc/security/limits.conf", "")
            .file("/etc/security/limits.d/nofile.conf", "")
            .file("/etc/security/limits.d/999-gpu-tuning.conf", "")
            .file("/etc/security/limits.d/Zeta.conf", "")
            .file("/etc/security/limits.d/README", "");
        assert_eq!(
            limits_files(&node),
            [
                "/etc/security/limits.conf",
                "/etc/security/limits.d/999-gpu-tuning.conf",
                "/etc/security/limits.d/Zeta.conf",
                "/etc/security/limits.d/nofile.conf",
            ]
        );
    }
}

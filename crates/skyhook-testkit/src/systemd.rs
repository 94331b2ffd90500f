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
//!
//! [`systemctl_show_main_pid!`](crate::systemctl_show_main_pid) is the `show` verb of
//! a systemctl stand-in, and [`run_unit`] / [`stop_unit`] give a unit a main process
//! with its `/proc/<pid>/limits`: what a package reads to know the limits a running
//! service has.

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

/// The `show` verb of a `systemctl` stand-in, as a shell `case` arm (a string
/// literal, for `concat!`), for `$R` the host root. Models systemd v255's
/// `systemctl show` (systemd/systemd `src/systemctl/systemctl-show.c`, the unit's
/// `MainPID` property from `src/core/dbus-service.c`, read on v255, Ubuntu 24.04's):
///
/// - `show --property=MainPID --value <unit>` (also `-p MainPID`) prints the main
///   process id of a running unit, and `0` for a unit that is stopped, failed or not
///   found at all (systemctl answers for a unit it does not know with the property's
///   default and exits 0); without `--value` it prints `MainPID=<pid>`.
/// - The running unit's process id is the content of `/run/stand-in-units/<name>.pid`
///   under the host root (`<name>` without `.service`), written by [`run_unit`];
///   tuned's own unit answers from tuned's pid file, `/run/tuned/tuned.pid`.
///
/// Not modelled: other properties (an error here, so a test sees a new question),
/// several units at once, `--all`, units other than services.
#[macro_export]
macro_rules! systemctl_show_main_pid {
    () => {
        r#"  show) P=; V=; U=
        for a in "$@"; do case "$a" in show|-p) ;; MainPID|--property=MainPID) P=MainPID ;; --value) V=1 ;;
          -*) echo "unexpected systemctl option $a" >&2; exit 1 ;; *) U="$a" ;; esac; done
        [ "$P" = MainPID ] && [ -n "$U" ] || { echo "unexpected systemctl $*" >&2; exit 1; }
        N="${U%.service}"; F="$R/run/stand-in-units/$N.pid"; [ "$N" = tuned ] && F="$R/run/tuned/tuned.pid"
        PID=$(cat "$F" 2>/dev/null); PID=${PID:-0}
        if [ -n "$V" ]; then echo "$PID"; else echo "MainPID=$PID"; fi ;;
"#
    };
}

/// `/proc/<pid>/limits` laid out as the kernel writes it (`fs/proc/base.c`
/// `proc_pid_limits`: a header, then each resource's name padded to 25 columns, its
/// soft and hard limit padded to 20, its unit padded to 10, or nothing for the nice
/// and real-time priorities), for a process with stack limit `stack` (`(soft,
/// hard)`, each `unlimited` or bytes) and the limits a containerd of a stock
/// Ubuntu node has otherwise.
pub fn proc_limits(stack: (&str, &str)) -> String {
    let rows = [
        ("Max cpu time", "unlimited", "unlimited", "seconds"),
        ("Max file size", "unlimited", "unlimited", "bytes"),
        ("Max data size", "unlimited", "unlimited", "bytes"),
        ("Max stack size", stack.0, stack.1, "bytes"),
        ("Max core file size", "unlimited", "unlimited", "bytes"),
        ("Max resident set", "unlimited", "unlimited", "bytes"),
        ("Max processes", "unlimited", "unlimited", "processes"),
        ("Max open files", "1048576", "1048576", "files"),
        ("Max locked memory", "8388608", "8388608", "bytes"),
        ("Max address space", "unlimited", "unlimited", "bytes"),
        ("Max file locks", "unlimited", "unlimited", "locks"),
        ("Max pending signals", "1030527", "1030527", "signals"),
        ("Max msgqueue size", "819200", "819200", "bytes"),
        ("Max nice priority", "0", "0", ""),
        ("Max realtime priority", "0", "0", ""),
        ("Max realtime timeout", "unlimited", "unlimited", "us"),
    ];
    let mut text = format!(
        "{:<25} {:<20} {:<20} {:<10}\n",
        "Limit", "Soft Limit", "Hard Limit", "Units"
    );
    for (name, soft, hard, unit) in rows {
        text.push_str(&format!("{name:<25} {soft:<20} {hard:<20} "));
        if unit.is_empty() {
            text.push('\n');
        } else {
            text.push_str(&format!("{unit:<10}\n"));
        }
    }
    text
}

/// The stack limit a service has when nothing sets it: the kernel's default soft
/// limit (8 MiB, `_STK_LIM`) and an unlimited hard one, as systemd leaves them.
pub const DEFAULT_STACK: (&str, &str) = ("8388608", "unlimited");

/// Makes `unit` (`containerd.service`) run on `node` as process `pid` with stack limit
/// `stack`: [`systemctl_show_main_pid!`] then answers `pid`, and
/// `/proc/<pid>/limits` holds [`proc_limits`]. Running it again with another pid is
/// a restart.
pub fn run_unit(node: &Node, unit: &str, pid: u32, stack: (&str, &str)) {
    let name = unit.strip_suffix(".service").unwrap_or(unit);
    node.file(&format!("/run/stand-in-units/{name}.pid"), format!("{pid}\n"));
    node.file(&format!("/proc/{pid}/limits"), proc_limits(stack));
}

/// Stops `unit` on `node`: its main process is gone (`MainPID` 0, no `/proc/<pid>`).
pub fn stop_unit(node: &Node, unit: &str) {
    let name = unit.strip_suffix(".service").unwrap_or(unit);
    let file = node.path(&format!("/run/stand-in-units/{name}.pid"));
    if let Ok(pid) = fs::read_to_string(&file) {
        let _ = fs::remove_dir_all(node.path(&format!("/proc/{}", pid.trim())));
    }
    let _ = fs::remove_file(file);
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
    fn show_answers_the_main_pid_of_a_running_unit_and_0_otherwise() {
        let node = Node::new("/bin/true");
        let sh = concat!(
            "R=\"$SKYHOOK_HOST_ROOT\"\ncase \"$1\" in\n",
            systemctl_show_main_pid!(),
            "esac\n"
        );
        node.stand_in("systemctl", sh);
        let show = |args: &[&str]| node.run_stand_in("systemctl", args);
        let answer = |args: &[&str]| show(args).expect_code(0).output().trim().to_string();
        let main_pid = ["show", "--property=MainPID", "--value", "containerd.service"];
        assert_eq!(answer(&main_pid), "0", "not running");
        run_unit(&node, "containerd.service", 4321, ("67108864", "67108864"));
        assert_eq!(answer(&main_pid), "4321");
        assert_eq!(answer(&["show", "-p", "MainPID", "containerd"]), "MainPID=4321");
        assert!(
            node.read("/proc/4321/limits")
                .unwrap()
                .contains("Max stack size            67108864             67108864             bytes     \n")
        );
        show(&["show", "--property=ActiveState", "containerd.service"]).expect_code(1);
        stop_unit(&node, "containerd.service");
        assert_eq!(answer(&main_pid), "0", "stopped");
        assert!(!node.exists("/proc/4321"));
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

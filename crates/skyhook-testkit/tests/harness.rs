// SPDX-License-Identifier: Apache-2.0
//! The kill-point harness and the corpus runner themselves: they pass a step that
//! behaves and catch one that does not (a non-idempotent append, a temporary left, a
//! change made before refusing, unbounded output), with small `/bin/sh` steps.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use skyhook_testkit::Node;
use skyhook_testkit::hostile::{Case, Corpus};
use skyhook_testkit::killpoint::{KillPoints, mutating_calls};

/// Writes `body` as an executable `/bin/sh` step in `dir`.
fn step(dir: &Path, body: &str) -> PathBuf {
    let p = dir.join("step");
    std::fs::write(&p, format!("#!/bin/sh\nR=\"$SKYHOOK_HOST_ROOT\"\n{body}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

#[test]
fn strace_lines_are_classified_as_the_harness_documents() {
    let n = Node::new("/bin/true");
    let calls_log = n.commands_dir().join("calls.log");
    let log = format!(
        "execve(\"/bin/step\", [\"step\"], 0x1 /* 3 vars */) = 0\n\
         openat(AT_FDCWD</>, \"/etc/ld.so.cache\", O_RDONLY|O_CLOEXEC) = 3</etc/ld.so.cache>\n\
         write(2<pipe:[77]>, \"info\", 4) = 4\n\
         write(1</dev/null>, \"x\", 1) = 1\n\
         openat(AT_FDCWD</>, \"{root}/etc/.f.skyhook-tmp.1\", O_WRONLY|O_CREAT|O_EXCL, 0644) = 3</etc/x>\n\
         write(3<{root}/etc/.f.skyhook-tmp.1>, \"v\", 1) = 1\n\
         openat(AT_FDCWD</>, \"{log}\", O_WRONLY|O_CREAT|O_APPEND, 0666) = 4<{log}>\n\
         rename(\"{root}/etc/.f.skyhook-tmp.1\", \"{root}/etc/f\") = 0\n\
         --- SIGCHLD {{si_signo=SIGCHLD}} ---\n",
        root = n.root().display(),
        log = calls_log.display()
    );
    let calls = mutating_calls(&log, &n);
    let summary: Vec<(usize, &str, usize)> = calls.iter().map(|c| (c.index, c.name.as_str(), c.ordinal)).collect();
    assert_eq!(summary, [(0, "openat", 2), (1, "write", 3), (2, "rename", 1)]);
    assert!(
        calls[2]
            .line
            .starts_with("rename(\"/etc/.f.skyhook-tmp.1\", \"/etc/f\")"),
        "{}",
        calls[2].line
    );
}

#[test]
fn an_atomic_idempotent_step_converges_at_every_kill_point() {
    let dir = tempfile::tempdir().unwrap();
    let n = Node::new(step(
        dir.path(),
        "case \"$1\" in\n\
         config) rm -f \"$R\"/etc/.f.skyhook-tmp.*; mkdir -p \"$R/etc\"; printf v > \"$R/etc/.f.skyhook-tmp.$$\"; \
         mv \"$R/etc/.f.skyhook-tmp.$$\" \"$R/etc/f\" ;;\n\
         config-check) [ \"$(cat \"$R/etc/f\")\" = v ] ;;\n\
         esac",
    ));
    let report = KillPoints::new(&n, "config").check("config-check").run();
    report.assert_converged();
    assert!(report.tried >= 3, "{report}");
    assert!(
        report.tried > report.mutating && report.tried < 2 * report.mutating,
        "SIGKILL at every call, SIGTERM at the shell's forks and the last call only: {report}"
    );
    assert_eq!(report.converged, report.tried, "{report}");
    assert!(!n.exists("/etc/f"), "the node is put back to its starting tree");
}

#[test]
fn a_step_that_handles_sigterm_badly_is_caught_at_every_call_after_its_trap() {
    let dir = tempfile::tempdir().unwrap();
    // The trap appends: a SIGTERM anywhere after it changes the node in a way the
    // rerun does not undo. Builtins only, so the shell starts no process.
    let n = Node::new(step(
        dir.path(),
        "mkdir -p \"$R/etc\"
         trap 'printf x >> \"$R/etc/log\"; exit 1' TERM
         printf a > \"$R/etc/a\"; printf b > \"$R/etc/b\"; printf c > \"$R/etc/c\"",
    ));
    let report = KillPoints::new(&n, "config").run();
    let term_failures = report.failures.iter().filter(|f| f.starts_with("SIGTERM")).count();
    assert!(
        term_failures >= 3,
        "SIGTERM must be tried at every write after the trap, not only at the last: {}",
        report.failures.join("\n")
    );
    assert!(
        report.failures.iter().all(|f| f.starts_with("SIGTERM")),
        "{}",
        report.failures.join("\n")
    );
}

#[test]
fn a_non_idempotent_step_and_a_left_temporary_are_caught() {
    let dir = tempfile::tempdir().unwrap();
    let n = Node::new(step(
        dir.path(),
        "mkdir -p \"$R/etc\"; echo line >> \"$R/etc/log\"\n\
         printf v > \"$R/etc/.g.skyhook-tmp.$$\"; mv \"$R/etc/.g.skyhook-tmp.$$\" \"$R/etc/g\"",
    ));
    let report = KillPoints::new(&n, "config").run();
    let failures = report.failures.join("\n");
    assert!(
        failures.contains("temporaries left: /etc/.g.skyhook-tmp."),
        "{failures}"
    );
    assert!(failures.contains("changed: /etc/log"), "{failures}");
    assert!(report.converged < report.tried, "{report}");
}

#[test]
fn the_corpus_passes_a_careful_refusal_and_names_every_careless_one() {
    let dir = tempfile::tempdir().unwrap();
    let n = Node::new(step(
        dir.path(),
        "v=$(head -c 20 \"$SKYHOOK_DIR/configmaps/k\")\n\
         case \"$v\" in\n\
         careful*) echo \"error: configMap key \\\"k\\\" line 1: refused \\\"$v\\\"\" >&2; exit 2 ;;\n\
         careless*) touch \"$R/changed\"; exit 2 ;;\n\
         loud*) head -c 100000 /dev/zero | tr '\\0' x; exit 2 ;;\n\
         esac",
    ));
    let cases = [
        Case::new("careful", "config")
            .key("k", "careful value")
            .line(1)
            .says("careful value"),
        Case::new("careless", "config").key("k", "careless value"),
        Case::new("loud", "config").key("k", "loud value"),
        Case::new("wrong code", "config").key("k", "careful").code(0),
    ];
    let report = Corpus::new(&n).run(&cases);
    assert_eq!(report.cases, 4);
    let failures = report.failures.join("\n");
    assert_eq!(report.failures.len(), 3, "{failures}");
    assert!(
        report.failures[0]
            .starts_with("- careless (config): output lacks \"k\"; the node changed: host left behind: /changed"),
        "{failures}"
    );
    assert!(
        report.failures[1].contains("printed 100000 bytes (limit 65536)"),
        "{failures}"
    );
    assert!(report.failures[2].contains("exit 2, expected 0"), "{failures}");
    assert!(!n.exists("/changed"), "the node is put back to its starting tree");
}

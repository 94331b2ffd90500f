// SPDX-License-Identifier: Apache-2.0
//! A simulated GPU node for copy-fail's tests: Ubuntu 22.04, a running kernel whose
//! `algif_aead` is a module (its release and `modules.builtin` without it), the
//! distribution's own modprobe.d files, `/proc/modules` and kmod's `rmmod` as
//! stand-ins (skyhook_testkit::kmod).
#![allow(dead_code)]

pub use skyhook_testkit::kmod::{self, line};
pub use skyhook_testkit::{Node, Run};

/// The package name in the SCR (upstream's).
pub const NAME: &str = "copy-fail";
/// The file that keeps the module out.
pub const FILE: &str = "/etc/modprobe.d/disable-algif.conf";
/// Its content, as the bash package wrote it.
pub const CONTENT: &str = "install algif_aead /bin/false\n";
/// The running kernel's release.
pub const RELEASE: &str = "6.8.0-1013-nvidia";
/// The verdict line's prefix, what an operator greps.
pub const VERDICT: &str = "copy-fail: CVE-2026-31431: node ";

/// A node where `algif_aead` is loaded with reference count `refcount`.
pub fn node_with(refcount: Option<u32>) -> Node {
    let n = Node::new(env!("CARGO_BIN_EXE_copy-fail")).named(NAME).version("1.1.0");
    n.file(
        "/etc/os-release",
        skyhook_testkit::skyhook_core::os::distro::fixtures::UBUNTU_2204,
    )
    .file("/proc/sys/kernel/osrelease", format!("{RELEASE}\n"))
    .file(
        &format!("/lib/modules/{RELEASE}/modules.builtin"),
        "kernel/crypto/aes_generic.ko\nkernel/crypto/sha256_generic.ko\n",
    )
    .file(
        "/etc/modprobe.d/blacklist.conf",
        "# the distribution's\nblacklist pcspkr\n",
    )
    .file("/lib/modprobe.d/aliases.conf", "alias char-major-10-175 agpgart\n")
    .file("/var/lib/dpkg/status", "");
    kmod::install_rmmod(&n);
    let mut modules = match refcount {
        Some(r) => vec![line("af_alg", 1, &["algif_aead"]), line("algif_aead", r, &[])],
        None => vec![line("af_alg", 0, &[])],
    };
    modules.push(line("nvidia", 2, &["nvidia_uvm"]));
    kmod::loaded(&n, &modules);
    n
}

/// A node where `algif_aead` is loaded and nothing uses it.
pub fn node() -> Node {
    node_with(Some(0))
}

/// Runs `mode` and asserts its exit code.
#[track_caller]
pub fn run(n: &Node, mode: &str, code: i32) -> Run {
    let r = n.run(mode);
    r.expect_code(code);
    r
}

/// The verdict lines of a run's output.
pub fn verdicts(r: &Run) -> Vec<String> {
    r.output()
        .lines()
        .filter(|l| l.contains(VERDICT))
        .map(str::to_string)
        .collect()
}

/// Asserts the run printed exactly one verdict line, and that it is `line`.
#[track_caller]
pub fn verdict(r: &Run, line: &str) {
    assert_eq!(verdicts(r), [line.to_string()], "{}", r.output());
}

/// The protected verdict, as logged.
pub const PROTECTED: &str = "info: copy-fail: CVE-2026-31431: node protected: algif_aead not loaded, loading it \
blocked by /etc/modprobe.d/disable-algif.conf";

/// The state file.
pub fn state_file() -> String {
    format!("/var/lib/skyhook-packages/copy-fail/{NAME}/state.json")
}

// SPDX-License-Identifier: Apache-2.0
//! copy-fail in a Debian root: the README's first example through config,
//! config-check, uninstall and uninstall-check, with the real kmod (installed from
//! the mirror) reading what config wrote: `modprobe -n -v algif_aead` resolves to the
//! `install … /bin/false` rule while it is there, and no longer after uninstall; the
//! node then is as it was. The chroot has no `/proc`, so no module is loaded and none
//! is unloaded: the package's reading of `/proc/modules` is the package tests' (the
//! test kit's `kmod` model).

use crate::{APT_FOOTPRINT, Arch, BOOKKEEPING, Node, readme};

/// The file copy-fail owns.
const CONF: &str = "/etc/modprobe.d/disable-algif.conf";

#[test]
#[ignore = "chroot tier: root and the Debian mirror, minutes; .ci/run chroot, or cargo test -p skyhook-pkg --test chroot -- --ignored"]
fn copy_fail_config_and_uninstall_with_the_real_modprobe() {
    copy_fail_config_and_uninstall_on(Arch::Native);
}

#[test]
#[ignore = "chroot tier, an arm64 run: .ci/run chroot_arm64 (the chroot step runs x86_64 only, for CI's time)"]
fn copy_fail_config_and_uninstall_with_the_real_modprobe_arm64() {
    copy_fail_config_and_uninstall_on(Arch::Arm64);
}

/// What the root's own modprobe does when asked to load algif_aead, dry run.
fn modprobe_dry_run(node: &Node) -> String {
    node.sh("modprobe -n -v algif_aead 2>&1; true")
}

fn copy_fail_config_and_uninstall_on(arch: Arch) {
    let ex = readme::of("copy-fail")
        .into_iter()
        .next()
        .expect("copy-fail/README.md has an SCR example");
    let node = Node::fresh_of(arch);
    node.sh("export DEBIAN_FRONTEND=noninteractive; apt-get update -q >/dev/null \
         && apt-get install -y -q --no-install-recommends kmod >/dev/null 2>&1");
    let unprotected = modprobe_dry_run(&node);
    assert!(!unprotected.contains("/bin/false"), "{unprotected}");
    let ignore: Vec<&str> = BOOKKEEPING.iter().chain(APT_FOOTPRINT).copied().collect();
    let before = node.snapshot(&ignore);
    let args = ex.args();
    let run = |modes: &[&str]| {
        let mut all: Vec<&str> = modes.to_vec();
        all.extend(args.iter().map(String::as_str));
        node.run("copy-fail", &all)
    };

    run(&["config", "config-check"]).expect_ok();
    assert!(
        node.read(CONF)
            .is_some_and(|c| c.contains("install algif_aead /bin/false"))
    );
    let protected = modprobe_dry_run(&node);
    assert!(
        protected.contains("install /bin/false"),
        "kmod's modprobe reads config's rule: {protected}"
    );

    // The same again changes nothing.
    let configured = node.snapshot(&ignore);
    run(&["config"]).expect_ok();
    configured.assert_same(&node.snapshot(&ignore));

    run(&["uninstall", "uninstall-check"]).expect_ok();
    assert!(!node.exists(CONF));
    let after = modprobe_dry_run(&node);
    assert!(!after.contains("/bin/false"), "{after}");
    before.assert_same(&node.snapshot(&ignore));
}

// SPDX-License-Identifier: Apache-2.0
//! configMap key `modprobe.conf`: the modprobe.d file written, reconciled and
//! removed like the other files; modules it keeps out unloaded when nothing uses
//! them (rmmod through the host), left loaded with a reason and a reboot asked for
//! when something does; config-check catches an `install` line kmod reads first;
//! post-interrupt-check fails while a module kept out is loaded or built in.

mod common;

use common::*;
use skyhook_testkit::kmod::{self, line};

const CONF: &str =
    "# CVE-2026-31431\ninstall algif_aead /bin/false\nblacklist nouveau\noptions nvidia NVreg_EnableGpuFirmware=0\n";

fn modprobe_file() -> String {
    format!("/etc/modprobe.d/zz-skyhook-{NAME}-tuning.conf")
}

/// A node with `rmmod` and `/proc/modules` listing `modules`.
fn with_modules(modules: &[String]) -> Node {
    let n = node();
    kmod::install_rmmod(&n);
    kmod::loaded(&n, modules);
    n
}

#[test]
fn the_file_is_written_and_a_kept_out_module_nothing_uses_is_unloaded() {
    let n = with_modules(&[line("algif_aead", 0, &[]), line("af_alg", 1, &["algif_aead"])]);
    n.configmap("modprobe.conf", CONF);
    let r = run(&n, "config", 0);
    let file = n.read(&modprobe_file()).unwrap();
    assert!(
        file.starts_with("# Managed by the Skyhook package tuning (gpu)"),
        "{file}"
    );
    assert!(file.ends_with(CONF), "verbatim below the header: {file}");
    assert_eq!(n.mode(&modprobe_file()), Some(0o644));
    assert_eq!(n.calls(), ["rmmod algif_aead"]);
    assert!(!kmod::is_loaded(&n, "algif_aead"));
    assert!(kmod::is_loaded(&n, "af_alg"), "only what the value keeps out");
    r.expect_output("unloaded algif_aead (rmmod: nothing used it)")
        .expect_output("interrupt needed: none");
    run(&n, "config-check", 0);
    run(&n, "post-interrupt-check", 0);
    // Nothing differs: nothing written, nothing run.
    let tree = n.snapshot();
    n.clear_calls();
    run(&n, "config", 0).expect_output("the node already matches the configMap");
    assert!(n.calls().is_empty(), "{:?}", n.calls());
    tree.assert_same(&n.snapshot());
}

#[test]
fn a_module_in_use_stays_loaded_with_a_reboot_asked_for_and_post_interrupt_check_fails() {
    let n = with_modules(&[line("algif_aead", 2, &[])]);
    n.configmap("modprobe.conf", CONF);
    run(&n, "config", 0)
        .expect_output("algif_aead is loaded and stays loaded (in use: reference count 2): not unloaded")
        .expect_output("interrupt needed: {type: reboot}");
    assert!(n.calls().is_empty(), "no rmmod for a module in use: {:?}", n.calls());
    assert!(kmod::is_loaded(&n, "algif_aead"));
    run(&n, "config-check", 0).expect_output("not checked: algif_aead is still loaded (in use: reference count 2)");
    run(&n, "post-interrupt-check", 1).expect_output(
        "algif_aead is loaded (in use: reference count 2) although configMap key modprobe.conf line 2 \
         (install algif_aead /bin/false) keeps it out: reboot the node",
    );
    // After the reboot the module is not loaded.
    kmod::loaded(&n, &[]);
    run(&n, "post-interrupt-check", 0);
}

#[test]
fn blacklisted_modules_used_by_another_are_left_loaded() {
    let n = with_modules(&[line("nouveau", 0, &["drm_ttm_helper"])]);
    n.configmap("modprobe.conf", "blacklist nouveau\n");
    run(&n, "config", 0)
        .expect_output("nouveau is loaded and stays loaded (in use: reference count 0, used by drm_ttm_helper)");
    assert!(n.calls().is_empty());
    run(&n, "post-interrupt-check", 1).expect_output("nouveau is loaded");
}

#[test]
fn rmmod_failing_or_missing_leaves_the_module_loaded_and_config_succeeds() {
    let n = node();
    kmod::loaded(&n, &[line("algif_aead", 0, &[])]);
    n.configmap("modprobe.conf", CONF);
    run(&n, "config", 0)
        .expect_output("rmmod could not be run")
        .expect_output("interrupt needed: {type: reboot}");
    assert!(n.exists(&modprobe_file()));
    n.stand_in(
        "rmmod",
        "echo 'rmmod: ERROR: could not remove module algif_aead: Device or resource busy' >&2; exit 1",
    );
    run(&n, "config", 0).expect_output("rmmod algif_aead failed (exit code 1): rmmod: ERROR: could not remove module");
}

#[test]
fn options_for_a_loaded_module_need_a_reboot() {
    let n = with_modules(&[line("nvidia", 3, &["nvidia_uvm"])]);
    n.configmap("modprobe.conf", "options nvidia NVreg_EnableGpuFirmware=0\n");
    run(&n, "config", 0)
        .expect_output("nvidia is loaded: its options apply when it is next loaded: needs {type: reboot}")
        .expect_output("interrupt needed: {type: reboot}");
    assert!(n.calls().is_empty(), "options never unload: {:?}", n.calls());
    run(&n, "post-interrupt-check", 0);
}

#[test]
fn a_module_built_into_the_running_kernel_fails_post_interrupt_check() {
    let n = with_modules(&[]);
    n.file("/proc/sys/kernel/osrelease", "6.8.0-1013-nvidia\n").file(
        "/lib/modules/6.8.0-1013-nvidia/modules.builtin",
        "kernel/crypto/af_alg.ko\nkernel/crypto/algif_aead.ko\n",
    );
    n.configmap("modprobe.conf", "install algif-aead /bin/false\n");
    run(&n, "config", 0);
    run(&n, "post-interrupt-check", 1).expect_output(
        "algif_aead is built into the running kernel (6.8.0-1013-nvidia, modules.builtin): a modprobe.d line cannot keep it out",
    );
}

#[test]
fn config_check_names_a_modprobe_file_kmod_reads_first_that_installs_another_command() {
    let n = with_modules(&[]);
    n.configmap("modprobe.conf", CONF);
    run(&n, "config", 0);
    n.file(
        "/lib/modprobe.d/50-local.conf",
        "# ours\ninstall algif_aead /sbin/modprobe --ignore-install algif_aead\n",
    )
    .file("/etc/modprobe.d/zzz-later.conf", "install algif_aead /bin/sh -c true\n")
    .file("/etc/modprobe.d/10-same.conf", "install algif_aead /bin/false\n")
    .file("/etc/modprobe.d/20-not-conf.txt", "install algif_aead /bin/sh\n");
    let r = run(&n, "config-check", 1);
    r.expect_output(
        "/lib/modprobe.d/50-local.conf line 2 installs algif_aead with \"/sbin/modprobe --ignore-install algif_aead\", \
         and kmod reads it before /etc/modprobe.d/zz-skyhook-gpu-tuning.conf, so it wins over configMap key \
         modprobe.conf line 2",
    )
    .expect_output("1 unmet expectation(s)");
    // The same name in /etc hides the one in /lib, as kmod hides it.
    n.file("/etc/modprobe.d/50-local.conf", "blacklist nouveau\n");
    run(&n, "config-check", 0);
}

#[test]
fn removing_the_key_removes_the_file_and_loads_nothing() {
    let n = with_modules(&[line("algif_aead", 0, &[])]);
    let before = n.snapshot();
    n.configmap("modprobe.conf", CONF);
    run(&n, "config", 0);
    n.remove_configmap("modprobe.conf").clear_calls();
    run(&n, "config", 0)
        .expect_output("modprobe.d file removed (its key is gone)")
        .expect_output("interrupt needed: none");
    assert!(!n.exists(&modprobe_file()));
    assert!(n.calls().is_empty(), "nothing loaded: {:?}", n.calls());
    run(&n, "config-check", 0);
    // The node is as before apart from the module config unloaded.
    kmod::loaded(&n, &[line("algif_aead", 0, &[])]);
    before.assert_same(&n.snapshot());
}

#[test]
fn uninstall_without_the_configmap_removes_the_file_and_loads_nothing() {
    let n = with_modules(&[line("algif_aead", 1, &[])]);
    let before = n.snapshot();
    n.configmap("modprobe.conf", CONF);
    run(&n, "config", 0);
    n.clear_configmaps().clear_calls();
    run(&n, "uninstall", 0).expect_output("modprobe.d file removed: the modules it kept out load again on demand");
    assert!(n.calls().is_empty(), "{:?}", n.calls());
    run(&n, "uninstall-check", 0);
    before.assert_same(&n.snapshot());
}

#[test]
fn a_file_at_its_name_that_no_record_holds_is_taken_over_and_removed() {
    let n = with_modules(&[]);
    n.file("/etc/modprobe.d/blacklist.conf", "blacklist pcspkr\n");
    let before = n.snapshot();
    n.file(&modprobe_file(), "blacklist nouveau\n");
    run(&n, "uninstall-check", 1).expect_output(&format!("{} (modprobe.d file) is still there", modprobe_file()));
    run(&n, "uninstall", 0);
    run(&n, "uninstall-check", 0);
    before.assert_same(&n.snapshot());
}

// SPDX-License-Identifier: Apache-2.0
//! copy-fail's lifecycle on a simulated node: the bash package's file and content,
//! the module unloaded when nothing uses it and left (with a reboot asked for) when
//! something does, the strict config-check and `ALLOW_LOADED_MODULE`, the one
//! verdict line, a kernel with the module built in, an install line kmod reads
//! first, a node the bash package mitigated taken over in place, a foreign file at
//! the path left alone, uninstall with and without the configMap.

mod common;

use common::*;

#[test]
fn config_keeps_algif_aead_out_as_the_bash_package_did_and_unloads_it() {
    let n = node();
    let r = run(&n, "config", 0);
    assert_eq!(
        n.read(FILE).as_deref(),
        Some(CONTENT),
        "exactly the bash package's file"
    );
    assert_eq!(n.mode(FILE), Some(0o644));
    assert_eq!(n.calls(), ["rmmod algif_aead"]);
    assert!(!kmod::is_loaded(&n, "algif_aead"));
    assert!(kmod::is_loaded(&n, "af_alg"), "only the module of the CVE");
    r.expect_output("interrupt needed: none");
    verdict(&run(&n, "config-check", 0), PROTECTED);
    verdict(&run(&n, "post-interrupt-check", 0), PROTECTED);
    // A second config finds nothing to do.
    let tree = n.snapshot();
    n.clear_calls();
    run(&n, "config", 0).expect_output("the node already matches the configMap: nothing written, nothing run");
    assert!(n.calls().is_empty(), "{:?}", n.calls());
    tree.assert_same(&n.snapshot());
}

#[test]
fn a_node_without_the_module_loaded_gets_the_file_and_no_rmmod() {
    let n = node_with(None);
    run(&n, "config", 0).expect_output("interrupt needed: none");
    assert!(n.calls().is_empty(), "{:?}", n.calls());
    verdict(&run(&n, "config-check", 0), PROTECTED);
}

#[test]
fn a_module_in_use_stays_and_config_check_fails_loudly_unless_allowed() {
    let mut n = node_with(Some(1));
    run(&n, "config", 0)
        .expect_output("algif_aead is loaded and stays loaded (in use: reference count 1): not unloaded")
        .expect_output("interrupt needed: {type: reboot}");
    assert!(n.calls().is_empty(), "no rmmod while in use: {:?}", n.calls());
    assert_eq!(n.read(FILE).as_deref(), Some(CONTENT));
    let vulnerable = "warn: copy-fail: CVE-2026-31431: node VULNERABLE: algif_aead loaded (in use: reference count 1)";
    let r = run(&n, "config-check", 1);
    verdict(&r, vulnerable);
    r.expect_output("algif_aead loaded (in use: reference count 1): the node stays vulnerable to CVE-2026-31431 until algif_aead is gone")
        .expect_output("set ALLOW_LOADED_MODULE=true");
    n.env("ALLOW_LOADED_MODULE", "true");
    let r = run(&n, "config-check", 0);
    verdict(&r, vulnerable);
    r.expect_output("ALLOW_LOADED_MODULE=true accepts it here; post-interrupt-check does not");
    let r = run(&n, "post-interrupt-check", 1);
    verdict(&r, vulnerable);
    r.expect_output("algif_aead is loaded (in use: reference count 1) although configMap key modprobe.conf line 1");
    // The reboot: the module is not loaded any more.
    kmod::loaded(&n, &[line("af_alg", 0, &[])]);
    verdict(&run(&n, "post-interrupt-check", 0), PROTECTED);
    n.clear_env();
    verdict(&run(&n, "config-check", 0), PROTECTED);
}

#[test]
fn a_kernel_with_the_module_built_in_is_reported_vulnerable() {
    let mut n = node_with(None);
    n.file(
        &format!("/lib/modules/{RELEASE}/modules.builtin"),
        "kernel/crypto/af_alg.ko\nkernel/crypto/algif_aead.ko\n",
    );
    run(&n, "config", 0);
    let vulnerable = format!(
        "warn: copy-fail: CVE-2026-31431: node VULNERABLE: algif_aead built into kernel {RELEASE} (a modprobe.d \
         line cannot keep it out: the kernel argument initcall_blacklist=algif_aead_init, or a fixed kernel)"
    );
    verdict(&run(&n, "config-check", 1), &vulnerable);
    verdict(&run(&n, "post-interrupt-check", 1), &vulnerable);
    n.env("ALLOW_LOADED_MODULE", "true");
    verdict(&run(&n, "config-check", 0), &vulnerable);
}

#[test]
fn an_install_line_kmod_reads_first_makes_the_node_vulnerable() {
    let n = node_with(None);
    run(&n, "config", 0);
    n.file(
        "/etc/modprobe.d/crypto.conf",
        "install algif_aead /sbin/modprobe --ignore-install algif_aead\n",
    );
    let vulnerable = "warn: copy-fail: CVE-2026-31431: node VULNERABLE: algif_aead loadable: \
                      /etc/modprobe.d/crypto.conf line 1 installs it with \"/sbin/modprobe --ignore-install \
                      algif_aead\", and kmod reads it before /etc/modprobe.d/disable-algif.conf";
    let r = run(&n, "config-check", 1);
    verdict(&r, vulnerable);
    r.expect_output("/etc/modprobe.d/crypto.conf line 1 installs algif_aead with");
    verdict(&run(&n, "post-interrupt-check", 1), vulnerable);
    // One that keeps it out too changes nothing.
    n.file("/etc/modprobe.d/crypto.conf", "install algif_aead /bin/true\n");
    verdict(&run(&n, "post-interrupt-check", 0), PROTECTED);
}

#[test]
fn a_file_gone_since_config_fails_the_checks_and_config_puts_it_back() {
    let n = node_with(None);
    run(&n, "config", 0);
    std::fs::remove_file(n.path(FILE)).unwrap();
    let vulnerable = "warn: copy-fail: CVE-2026-31431: node VULNERABLE: algif_aead loadable: \
                      /etc/modprobe.d/disable-algif.conf is missing";
    verdict(&run(&n, "post-interrupt-check", 1), vulnerable);
    run(&n, "config-check", 1).expect_output("/etc/modprobe.d/disable-algif.conf is missing");
    run(&n, "config", 0);
    verdict(&run(&n, "post-interrupt-check", 0), PROTECTED);
}

#[test]
fn a_node_the_bash_package_mitigated_is_taken_over_in_place() {
    let n = node_with(None);
    let before = n.snapshot();
    // What the bash copy-fail 1.0.0 left: the file, no record.
    n.file(FILE, CONTENT);
    let times = std::fs::metadata(n.path(FILE)).unwrap().modified().unwrap();
    run(&n, "config", 0).expect_output("taking over /etc/modprobe.d/disable-algif.conf (modprobe.d file)");
    assert_eq!(
        std::fs::metadata(n.path(FILE)).unwrap().modified().unwrap(),
        times,
        "not rewritten"
    );
    assert!(n.read(&state_file()).unwrap().contains(FILE), "recorded");
    verdict(&run(&n, "config-check", 0), PROTECTED);
    run(&n, "uninstall", 0);
    run(&n, "uninstall-check", 0);
    before.assert_same(&n.snapshot());
}

#[test]
fn uninstall_removes_the_bash_packages_file_even_without_a_record_or_configmap() {
    let n = node_with(None);
    let before = n.snapshot();
    n.file(FILE, CONTENT);
    run(&n, "uninstall-check", 1).expect_output("/etc/modprobe.d/disable-algif.conf (modprobe.d file) is still there");
    run(&n, "uninstall", 0);
    run(&n, "uninstall-check", 0);
    before.assert_same(&n.snapshot());
}

#[test]
fn a_foreign_file_at_the_path_is_refused_and_never_removed() {
    let n = node_with(Some(0));
    let foreign = "# ours, site policy\ninstall algif_aead /bin/false\ninstall algif_skcipher /bin/false\n";
    n.file(FILE, foreign);
    let before = n.snapshot();
    run(&n, "config", 1)
        .expect_output("/etc/modprobe.d/disable-algif.conf is already there and was not written by copy-fail")
        .expect_output("move it away");
    before.assert_same(&n.snapshot());
    assert!(n.calls().is_empty(), "nothing run: {:?}", n.calls());
    run(&n, "uninstall", 0);
    run(&n, "uninstall-check", 0);
    assert_eq!(n.read(FILE).as_deref(), Some(foreign), "not ours: kept");
}

#[test]
fn uninstall_with_or_without_the_configmap_and_env_removes_the_file_and_loads_nothing() {
    for keep_env in [true, false] {
        let mut n = node_with(Some(2));
        let before = n.snapshot();
        n.env("ALLOW_LOADED_MODULE", "true");
        run(&n, "config", 0);
        if !keep_env {
            // The older operators' uninstall stub: no configMap, no env.
            n.clear_env();
            n.clear_configmaps();
        }
        n.clear_calls();
        run(&n, "uninstall", 0);
        assert!(n.calls().is_empty(), "nothing loaded: {:?}", n.calls());
        assert!(!n.exists(FILE));
        run(&n, "uninstall-check", 0);
        before.assert_same(&n.snapshot());
    }
}

#[test]
fn a_bad_allow_loaded_module_is_refused_before_any_change_but_uninstall_works() {
    let mut n = node();
    let before = n.snapshot();
    n.env("ALLOW_LOADED_MODULE", "yes");
    for mode in ["config", "config-check", "post-interrupt-check"] {
        let r = run(&n, mode, 2);
        r.expect_output("environment variable ALLOW_LOADED_MODULE is \"yes\"; it must be true");
        assert!(verdicts(&r).is_empty(), "no verdict on bad input");
    }
    before.assert_same(&n.snapshot());
    run(&n, "uninstall", 0);
}

#[test]
fn configmap_keys_are_named_and_ignored() {
    let n = node();
    n.configmap("modprobe.conf", "install algif_aead /bin/true\n");
    run(&n, "config", 0).expect_output("1 configMap key(s) this package does not read");
    assert_eq!(n.read(FILE).as_deref(), Some(CONTENT));
}

#[test]
fn a_node_whose_etc_does_not_persist_is_refused() {
    let n = node();
    n.file(
        "/proc/mounts",
        "/dev/dm-0 / ext2 ro 0 0\ntmpfs /etc tmpfs rw,nosuid,nodev 0 0\n",
    );
    let before = n.snapshot();
    run(&n, "config", 1).expect_output("this node's /etc does not survive a reboot");
    before.assert_same(&n.snapshot());
}

// SPDX-License-Identifier: Apache-2.0
//! config, config-check and post-interrupt-check on a simulated Ubuntu node: each
//! key written and checked, idempotence, reconcile, all-or-nothing, every bad input,
//! override detection, service limits, GRUB on RHEL-like hosts and without GRUB.

mod common;

use common::*;
use skyhook_testkit::boot_tools::{GRUBBY, bls_entry, bls_options};

fn configured() -> Node {
    let n = node();
    full_configmap(&n);
    run(&n, "config", 0);
    n
}

#[test]
fn each_key_is_written_applied_and_checked() {
    let n = configured();
    // sysctl: the drop-in, named to win, and the values live.
    let sysctl = n.read(&sysctl_file()).unwrap();
    assert!(
        sysctl.starts_with("# Managed by the Skyhook package tuning (gpu)"),
        "{sysctl}"
    );
    assert!(sysctl.ends_with("fs.inotify.max_user_watches = 524288\nvm.max_map_count=262144\nnet/ipv4/tcp_rmem = 4096 87380 16777216\n-net.ipv4.not_here = 1\n"));
    assert_eq!(live(&n, "fs/inotify/max_user_watches"), "524288");
    assert_eq!(live(&n, "vm/max_map_count"), "262144");
    assert_eq!(live(&n, "net/ipv4/tcp_rmem"), "4096 87380 16777216");
    assert_eq!(live(&n, "vm/swappiness"), "60", "untouched");
    assert!(!n.exists("/proc/sys/net/ipv4/not_here"), "a '-' key is never created");
    // ulimit: soft and hard, pam_limits added where missing.
    let limits = n.read(&limits_file()).unwrap();
    assert!(
        limits.contains("*\tsoft\tmemlock\tunlimited\n*\thard\tmemlock\tunlimited\n"),
        "{limits}"
    );
    assert!(
        limits.contains("*\tsoft\tnofile\t1048576\n*\thard\tnofile\t1048576\n"),
        "{limits}"
    );
    for f in ["/etc/pam.d/common-session", "/etc/pam.d/common-session-noninteractive"] {
        assert!(n.read(f).unwrap().ends_with("session required pam_limits.so\n"), "{f}");
    }
    // The drop-in, verbatim below the header.
    let dropin = n.read(&containerd_dropin()).unwrap();
    assert!(dropin.ends_with("[Service]\nLimitNOFILE=1048576\nLimitMEMLOCK=infinity\nLimitSTACK=64M:infinity\n"));
    // GRUB: appended to the distribution's default, the cloud image's console kept.
    let grub_cfg = n.read("/boot/grub/grub.cfg").unwrap();
    assert!(
        grub_cfg.contains("ro  console=tty1 console=ttyS0 hugepagesz=1G hugepages=4 hugepagesz=2M hugepages=512"),
        "{grub_cfg}"
    );
    let calls = n.calls();
    assert_eq!(
        calls.iter().filter(|c| *c == "systemctl daemon-reload").count(),
        1,
        "{calls:?}"
    );
    assert_eq!(calls.iter().filter(|c| *c == "update-grub").count(), 1, "{calls:?}");
    run(&n, "config-check", 0);
    // Before the interrupt, the running kernel and containerd lack the new settings.
    service(&n, "containerd.service", 4242, &[("Max open files", "1024", "524288")]);
    let r = run(&n, "post-interrupt-check", 1);
    r.expect_output("the running kernel was not booted with hugepagesz=1G hugepages=4 hugepagesz=2M hugepages=512")
        .expect_output("LimitNOFILE soft 1024 hard 524288")
        .expect_output("does not list Max locked memory");
    reboot(&n);
    service(&n, "containerd.service", 4243, &CONTAINERD_LIMITS);
    run(&n, "post-interrupt-check", 0);
}

#[test]
fn config_prints_the_interrupt_each_change_needs() {
    let n = node();
    full_configmap(&n);
    let r = run(&n, "config", 0);
    r.expect_output("service_containerd.conf: drop-in for containerd.service changed: needs {type: service, services: [containerd]}")
        .expect_output("grub.conf: kernel command line changed: needs {type: reboot}")
        .expect_output("sysctl.conf: 3 kernel parameter(s) set live, 0 put back, drop-in written: applied live, no interrupt needed")
        .expect_output("interrupt needed: {type: reboot}");
    n.configmap("service_containerd.conf", "[Service]\nLimitNOFILE=65536\n");
    run(&n, "config", 0).expect_output("interrupt needed: {type: service, services: [containerd]}");
    n.configmap("sysctl.conf", "vm.swappiness = 1\n");
    run(&n, "config", 0).expect_output("interrupt needed: none");
}

#[test]
fn a_second_config_writes_nothing_and_runs_nothing() {
    let n = configured();
    let tree = n.snapshot();
    let times = mtimes(&n);
    let calls = n.calls();
    run(&n, "config", 0).expect_output("the node already matches the configMap: nothing written, nothing run");
    assert_eq!(n.calls(), calls, "no command");
    tree.assert_same(&n.snapshot());
    assert_eq!(mtimes(&n), times, "no file rewritten");
}

#[test]
fn removed_keys_are_reconciled_away() {
    let n = node();
    let before = n.snapshot();
    full_configmap(&n);
    n.configmap("service_kubelet.conf", "[Service]\nLimitNOFILE=65536\n");
    run(&n, "config", 0);
    assert!(n.exists("/etc/systemd/system/kubelet.service.d/zz-skyhook-gpu-tuning.conf"));
    // One drop-in goes: its file and directory, one daemon-reload, its restart asked for.
    n.remove_configmap("service_kubelet.conf").clear_calls();
    run(&n, "config", 0).expect_output("interrupt needed: {type: service, services: [kubelet]}");
    assert!(!n.exists("/etc/systemd/system/kubelet.service.d"));
    assert_eq!(n.calls(), ["systemctl daemon-reload"]);
    // A sysctl key goes: its earlier value comes back.
    n.configmap("sysctl.conf", "fs.inotify.max_user_watches = 524288\n");
    run(&n, "config", 0);
    assert_eq!(live(&n, "vm/max_map_count"), "65530");
    assert_eq!(live(&n, "net/ipv4/tcp_rmem"), "4096\t131072\t6291456");
    assert_eq!(live(&n, "fs/inotify/max_user_watches"), "524288");
    // grub.conf goes: the drop-in goes and the boot configuration is regenerated.
    n.remove_configmap("grub.conf").clear_calls();
    run(&n, "config", 0).expect_output("interrupt needed: {type: reboot}");
    assert!(!n.exists(&grub_file()));
    assert_eq!(n.calls(), ["update-grub"]);
    assert!(!n.read("/boot/grub/grub.cfg").unwrap().contains("hugepages"));
    run(&n, "config-check", 0);
    // Everything goes: the node is as it was, apart from the live values of keys
    // the configMap never stopped listing… which are put back too.
    n.clear_configmaps();
    run(&n, "config", 0);
    run(&n, "config-check", 0);
    before.assert_same(&n.snapshot());
}

#[test]
fn a_bad_line_changes_nothing_at_all() {
    let n = configured();
    let tree = n.snapshot();
    let calls = n.calls();
    n.configmap(
        "sysctl.conf",
        "vm.swappiness = 10\nkernel.pid_max = 65536\nvm.max_map_count 262144\n",
    );
    n.configmap("grub.conf", "iommu=pt\n");
    let r = run(&n, "config", 2);
    r.expect_output(
        "configMap key \"sysctl.conf\" line 3 (\"vm.max_map_count 262144\"): not a `key = value` assignment",
    )
    .expect_output("nothing on the node was changed");
    tree.assert_same(&n.snapshot());
    assert_eq!(n.calls(), calls);
    assert_eq!(live(&n, "vm/swappiness"), "60");
}

#[test]
fn every_bad_input_is_refused_before_any_change() {
    let cases: [(&str, &[u8], &str); 12] = [
        (
            "sysctl.conf",
            b"=value\n",
            "line 1 (\"=value\"): there is no key before '='",
        ),
        (
            "sysctl.conf",
            b"vm.swappiness=\n",
            "line 1 (\"vm.swappiness=\"): there is no value after '='",
        ),
        (
            "sysctl.conf",
            b"vm.swappiness = 1\0 0\n",
            "the value contains the control character '\\0'",
        ),
        (
            "sysctl.conf",
            b"vm.no_such_key = 1\n",
            "vm.no_such_key does not exist in this kernel",
        ),
        ("sysctl.conf", b"vm = 1\n", "vm is a directory of kernel parameters"),
        ("sysctl.conf", b"vm.swappiness = \xff\n", "not valid UTF-8"),
        (
            "ulimit.conf",
            b"nofiles=1024\n",
            "\"nofiles\" is not a limits.conf item",
        ),
        ("ulimit.conf", b"nofile=\n", "there is no value after '=' for nofile"),
        ("grub.conf", b"dyndbg=\"+p\"\n", "quotes a value that needs none"),
        (
            "grub.conf",
            b"quiet\rsplash\n",
            "line 1 (\"quiet\\rsplash\"): the line contains a carriage return",
        ),
        (
            "service_containerd.conf",
            b"[Service]\nLimitNOFILE=1\0\n",
            "control character '\\0'",
        ),
        (
            "service_containerd.conf",
            b"[service]\nLimitNOFILE=1\n",
            "section [service] is not one systemd reads here",
        ),
    ];
    for (key, value, message) in cases {
        let n = node();
        let tree = n.snapshot();
        n.configmap("sysctl.conf", "vm.swappiness = 10\n").configmap(key, value);
        let r = n.run("config");
        assert_eq!(r.code, 2, "{key}={value:?}:\n{}", r.output());
        r.expect_output(message).expect_output(&format!("\"{key}\""));
        tree.assert_same(&n.snapshot());
        assert!(n.calls().is_empty(), "{key}: {:?}", n.calls());
    }
}

#[test]
fn a_key_with_a_slash_is_refused() {
    let n = node();
    let tree = n.snapshot();
    let dir = n.copy_dir().join("configmaps/service_..");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("x.conf"), "[Service]\nLimitNOFILE=1\n").unwrap();
    run(&n, "config", 2)
        .expect_output("\"service_..\"")
        .expect_output("cannot contain '/'");
    tree.assert_same(&n.snapshot());
    // And a key naming no valid unit.
    std::fs::remove_dir_all(&dir).unwrap();
    n.configmap("service_.conf", "[Service]\n");
    run(&n, "config", 2).expect_output("does not name a systemd service");
    tree.assert_same(&n.snapshot());
}

#[test]
fn every_problem_is_listed_at_once() {
    let n = node();
    n.configmap("sysctl.conf", "=1\nvm.swappiness=\n")
        .configmap("ulimit.conf", "bogus=1\n")
        .configmap("grub.conf", "a'b\n")
        .configmap("sysctl.cfg", "x=1\n");
    let r = run(&n, "config", 2);
    for m in [
        "\"sysctl.conf\" line 1",
        "\"sysctl.conf\" line 2",
        "\"ulimit.conf\" line 1",
        "\"grub.conf\" line 1",
        "\"sysctl.cfg\" is not one this package reads",
    ] {
        r.expect_output(m);
    }
}

#[test]
fn minus_prefixed_keys_may_be_missing() {
    let n = node();
    n.configmap("sysctl.conf", "-net.ipv4.not_here = 1\nvm.swappiness = 10\n");
    run(&n, "config", 0).expect_output("skipped as its '-' prefix asks");
    run(&n, "post-interrupt-check", 0);
    assert_eq!(live(&n, "vm/swappiness"), "10");
}

#[test]
fn config_check_names_the_file_that_overrides_a_key() {
    let n = configured();
    // An image's file that sorts after the bash package's name does not win over ours.
    n.file("/etc/sysctl.d/cloud-optimization.conf", "vm.max_map_count = 1\n");
    n.file("/usr/lib/sysctl.d/zzz-vendor.conf", "kernel.pid_max = 1\n");
    run(&n, "config-check", 0);
    n.file(
        "/etc/sysctl.d/zzz-late.conf",
        "# late\nvm.max_map_count = 65530\nkernel.pid_max = 7\n",
    );
    n.file("/etc/sysctl.conf", "fs.inotify.max_user_watches=8192\n");
    let r = run(&n, "config-check", 1);
    r.expect_output(
        "/etc/sysctl.d/zzz-late.conf line 2 sets vm.max_map_count = 65530, and is applied after \
         /etc/sysctl.d/zz-skyhook-gpu-tuning.conf, so it wins over configMap key sysctl.conf (vm.max_map_count = 262144)",
    )
    .expect_output("/etc/sysctl.conf line 1 sets fs.inotify.max_user_watches = 8192")
    .expect_output("2 unmet expectation(s)");
}

#[test]
fn config_check_lists_every_unmet_expectation() {
    let n = configured();
    n.file(&containerd_dropin(), "[Service]\nLimitNOFILE=1\n");
    std::fs::remove_file(n.path(&limits_file())).unwrap();
    n.file("/etc/pam.d/common-session", COMMON_SESSION);
    n.file("/etc/systemd/system/crio.service.d/999-gpu-tuning.conf", "[Service]\n");
    let r = run(&n, "config-check", 1);
    r.expect_output(&format!(
        "{} does not hold what configMap key service_containerd.conf asks for",
        containerd_dropin()
    ))
    .expect_output(&format!("{} is missing (configMap key ulimit.conf)", limits_file()))
    .expect_output("pam_limits is not in the session stack of /etc/pam.d/common-session")
    .expect_output("/etc/systemd/system/crio.service.d/999-gpu-tuning.conf (service drop-in) is left over")
    .expect_output("4 unmet expectation(s)");
}

#[test]
fn post_interrupt_check_compares_service_limits_from_proc() {
    let n = configured();
    reboot(&n);
    // systemd's forms: 64M is 67108864 bytes; infinity is unlimited; soft:hard.
    service(&n, "containerd.service", 77, &CONTAINERD_LIMITS);
    run(&n, "post-interrupt-check", 0);
    // LimitNOFILE=infinity: systemd sets the kernel's ceiling, fs.nr_open.
    n.configmap(
        "service_containerd.conf",
        "[Service]\nLimitNOFILE=infinity\nLimitCORE=0:infinity\n",
    );
    service(
        &n,
        "containerd.service",
        78,
        &[
            ("Max open files", "1048576", "1048576"),
            ("Max core file size", "0", "unlimited"),
        ],
    );
    run(&n, "post-interrupt-check", 0);
    service(
        &n,
        "containerd.service",
        79,
        &[
            ("Max open files", "1048576", "1048576"),
            ("Max core file size", "0", "0"),
        ],
    );
    run(&n, "post-interrupt-check", 1).expect_output(
        "containerd.service (main process 79) runs with LimitCORE soft 0 hard 0 (/proc/79/limits), but configMap key \
         service_containerd.conf line 3 sets LimitCORE=0:infinity (soft 0 hard unlimited)",
    );
    std::fs::remove_file(n.commands_dir().join("mainpid-containerd.service")).unwrap();
    run(&n, "post-interrupt-check", 1).expect_output("containerd.service has no main process (MainPID=0");
    // Without a running systemd the service limits cannot be checked, and say so.
    n.systemd_running(false);
    run(&n, "post-interrupt-check", 0).expect_output("not checked: containerd.service limits: systemd is not running");
}

#[test]
fn post_interrupt_check_compares_sysctl_values_field_wise() {
    let n = configured();
    reboot(&n);
    service(&n, "containerd.service", 77, &CONTAINERD_LIMITS);
    // The kernel shows multi-value entries with tabs.
    n.file("/proc/sys/net/ipv4/tcp_rmem", "4096\t87380\t16777216\n");
    run(&n, "post-interrupt-check", 0);
    n.file("/proc/sys/vm/max_map_count", "65530\n");
    n.file("/proc/sys/net/ipv4/tcp_rmem", "4096\t87380\t6291456\n");
    run(&n, "post-interrupt-check", 1)
        .expect_output("vm.max_map_count is \"65530\" live, configMap key sysctl.conf line 3 wants \"262144\"")
        .expect_output("net.ipv4.tcp_rmem is \"4096\\t87380\\t6291456\" live")
        .expect_output("2 unmet expectation(s)");
}

#[test]
fn kernel_arguments_must_be_whole_and_in_order() {
    let n = node();
    n.configmap(
        "grub.conf",
        "hugepagesz=1G\nhugepages=4\nhugepagesz=2M\nhugepages=512\n",
    );
    run(&n, "config", 0);
    n.file(
        "/proc/cmdline",
        "ro hugepagesz=2M hugepages=512 hugepagesz=1G hugepages=4\n",
    );
    run(&n, "post-interrupt-check", 1).expect_output("in this order");
    n.file(
        "/proc/cmdline",
        "ro hugepagesz=1G hugepages=40 hugepagesz=2M hugepages=512\n",
    );
    run(&n, "post-interrupt-check", 1);
    reboot(&n);
    run(&n, "post-interrupt-check", 0);
}

#[test]
fn a_failed_boot_regeneration_puts_the_node_back_and_the_next_config_does_it_all() {
    let n = node();
    n.stand_in(
        "update-grub",
        "echo 'grub-probe: error: failed to get canonical path of /dev/root' >&2; exit 1",
    );
    n.configmap("grub.conf", "iommu=pt\n");
    let before = n.snapshot();
    run(&n, "config", 1)
        .expect_output("failed to get canonical path")
        .expect_output("put back the");
    before.assert_same(&n.snapshot());
    run(&n, "config-check", 1).expect_output("are not applied: run config");
    n.stand_in("update-grub", UPDATE_GRUB);
    n.clear_calls();
    run(&n, "config", 0);
    assert_eq!(n.calls(), ["update-grub"], "one regeneration");
    assert!(n.read("/boot/grub/grub.cfg").unwrap().contains("iommu=pt"));
    run(&n, "config-check", 0);
}

#[test]
fn a_host_without_grub_gets_a_clear_error_and_no_change() {
    let n = node();
    n.remove_stand_in("update-grub");
    let tree = n.snapshot();
    full_configmap(&n);
    run(&n, "config", 1).expect_output("has no GRUB (update-grub or grub-mkconfig not found)");
    tree.assert_same(&n.snapshot());
    assert!(n.calls().is_empty());
}

#[test]
fn rhel_hosts_get_kernel_arguments_through_grubby() {
    let n = node();
    n.file(
        "/etc/os-release",
        skyhook_testkit::skyhook_core::os::distro::fixtures::ROCKY_9,
    );
    n.remove_stand_in("update-grub");
    // grubby over a BLS entry, as the real one (the test kit's stateful stand-in).
    let entry = "/boot/loader/entries/0a1b-5.14.0-427.el9.x86_64.conf";
    n.file(
        entry,
        bls_entry(
            "5.14.0-427.el9.x86_64",
            "ro crashkernel=1G-4G:192M,4G-64G:256M rhgb quiet hugepages=2",
        ),
    );
    n.stand_in("grubby", GRUBBY);
    let args = || bls_options(&n, entry);
    let before = n.snapshot();
    n.configmap("grub.conf", "hugepages=4\niommu=pt\n");
    run(&n, "config", 0).expect_output("needs {type: reboot}");
    assert_eq!(
        args(),
        "ro crashkernel=1G-4G:192M,4G-64G:256M rhgb quiet hugepages=4 iommu=pt"
    );
    run(&n, "config-check", 0);
    n.clear_calls();
    run(&n, "config", 0);
    assert!(n.calls().is_empty(), "{:?}", n.calls());
    run(&n, "uninstall", 0);
    assert_eq!(
        args(),
        "ro crashkernel=1G-4G:192M,4G-64G:256M rhgb quiet hugepages=2",
        "the image's hugepages=2 is back"
    );
    run(&n, "uninstall-check", 0);
    before.assert_same(&n.snapshot());
}

#[test]
fn removing_grub_conf_says_the_node_keeps_the_arguments_until_its_next_reboot() {
    let n = configured();
    reboot(&n);
    service(&n, "containerd.service", 4243, &CONTAINERD_LIMITS);
    run(&n, "post-interrupt-check", 0);

    n.remove_configmap("grub.conf");
    run(&n, "config", 0)
        .expect_output("configMap key \"grub.conf\" was removed")
        .expect_output("the operator never interrupts for a removed key, so this node keeps running with them until its next reboot")
        .expect_output("reboot the node (drain it first)");
    assert!(!n.exists(&grub_file()), "the boot configuration changed");
    run(&n, "config-check", 0);
    run(&n, "post-interrupt-check", 0);
}

#[test]
fn names_too_long_for_the_kernel_and_misplaced_limits_are_bad_input() {
    let long_part = format!("net.core.{} = 1\n", "a".repeat(300));
    let long_path = format!("{} = 1\n", vec!["abcdefg"; 600].join("."));
    let cases: [(&str, String, &str); 4] = [
        ("sysctl.conf", long_part, "line 1 (\"net.core.aaaa"),
        ("sysctl.conf", long_path, "line 1 (\"abcdefg.abcdefg"),
        (
            "service_containerd.conf",
            "[Unit]\nLimitNOFILE=lots\n".into(),
            "line 2 (\"LimitNOFILE=lots\"): LimitNOFILE: ",
        ),
        (
            "service_containerd.conf",
            "[Unit]\nDescription=x\nLimitNOFILE=1024\n".into(),
            "line 3 (\"LimitNOFILE=1024\"): LimitNOFILE is in [Unit], where systemd ignores it",
        ),
    ];
    let reasons = [
        "part 3 of the key is 300 bytes long; a kernel parameter name has at most 255 bytes per part",
        "the key's path under /proc/sys is 4809 bytes long; paths have fewer than 4096 bytes",
        "",
        "resource limits belong in [Service]",
    ];
    for ((key, value, message), reason) in cases.into_iter().zip(reasons) {
        let n = node();
        let tree = n.snapshot();
        n.configmap(key, &value);
        let r = n.run("config");
        assert_eq!(r.code, 2, "{key}:\n{}", r.output());
        r.expect_output(&format!("configMap key \"{key}\" "))
            .expect_output(message)
            .expect_output(reason);
        assert!(!r.output().contains("File name too long"), "{}", r.output());
        tree.assert_same(&n.snapshot());
        assert!(n.calls().is_empty(), "{key}: {:?}", n.calls());
    }
}

/// On a node with SELinux enabled, each file config creates is given the policy's
/// label for its path (restorecon, after the rename); a file it rewrites keeps its
/// own; on a node without SELinux restorecon never runs.
#[test]
fn files_created_on_an_selinux_node_get_the_policys_label_and_elsewhere_restorecon_never_runs() {
    use skyhook_testkit::selinux;
    let n = node();
    selinux::enable(&n);
    full_configmap(&n);
    run(&n, "config", 0);
    let labels = selinux::labels(&n);
    for (file, label) in [
        (sysctl_file(), "system_u:object_r:system_conf_t:s0"),
        (containerd_dropin(), "system_u:object_r:systemd_unit_file_t:s0"),
    ] {
        assert!(
            labels.contains(&(file.clone(), label.to_string())),
            "{file}: {labels:?}"
        );
        match selinux::label_of(&n, &file) {
            Some(on_disk) => assert_eq!(on_disk, label, "{file}"),
            None => eprintln!("{file}: this file system keeps no security.selinux; the stand-in's record is asserted"),
        }
    }
    assert!(
        n.calls().iter().any(|c| c == &format!("restorecon {}", limits_file())),
        "every created file: {:?}",
        n.calls()
    );
    // A rerun creates nothing: restorecon does not run again.
    n.clear_calls();
    n.configmap("sysctl.conf", "vm.swappiness = 5\n");
    run(&n, "config", 0);
    assert!(
        !n.calls().iter().any(|c| c == &format!("restorecon {}", sysctl_file())),
        "a rewritten file keeps its label: {:?}",
        n.calls()
    );

    let plain = node();
    plain.stand_in("restorecon", selinux::RESTORECON);
    full_configmap(&plain);
    run(&plain, "config", 0);
    assert!(
        !plain.calls().iter().any(|c| c.starts_with("restorecon")),
        "{:?}",
        plain.calls()
    );
}

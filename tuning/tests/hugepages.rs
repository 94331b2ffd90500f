// SPDX-License-Identifier: Apache-2.0
//! Huge pages on x86_64, arm64 with 4k pages and arm64 with 64k pages (simulated:
//! the sizes the kernel lists under /sys/kernel/mm/hugepages and its default size
//! in /proc/meminfo): config warns about a `hugepagesz=` the running kernel does
//! not support, and post-interrupt-check proves each `hugepages=` count reserved.

mod common;

use common::*;

/// A node whose kernel supports `sizes` (KiB), `default` (KiB) its default size.
fn node_with(sizes: &[u64], default: u64) -> Node {
    let n = node();
    hugepage_sizes(&n, sizes, default);
    n
}

const WARNING: &str = "which the running kernel does not support";

#[test]
fn config_warns_about_a_size_the_running_kernel_does_not_list() {
    // (sizes, default, grub.conf, the warning's list or None for no warning)
    let cases: [(&[u64], u64, &str, Option<&str>); 6] = [
        (&X86_64_HUGEPAGES, 2048, "hugepagesz=1G hugepages=4", None),
        (&X86_64_HUGEPAGES, 2048, "hugepagesz=64K hugepages=4", Some("2M, 1G")),
        (
            &ARM64_4K_HUGEPAGES,
            2048,
            "hugepagesz=32M hugepages=8 hugepagesz=64K hugepages=2",
            None,
        ),
        (
            &ARM64_4K_HUGEPAGES,
            2048,
            "hugepagesz=512M hugepages=2",
            Some("64K, 2M, 32M, 1G"),
        ),
        (
            &ARM64_64K_HUGEPAGES,
            512 << 10,
            "hugepagesz=512M hugepages=2 hugepagesz=16G hugepages=1",
            None,
        ),
        (
            &ARM64_64K_HUGEPAGES,
            512 << 10,
            "default_hugepagesz=1G hugepagesz=1G hugepages=4",
            Some("2M, 512M, 16G"),
        ),
    ];
    for (sizes, default, args, listed) in cases {
        let n = node_with(sizes, default);
        n.configmap("grub.conf", args);
        let r = run(&n, "config", 0);
        match listed {
            None => assert!(!r.output().contains(WARNING), "{args}:\n{}", r.output()),
            Some(list) => {
                let size = args
                    .split_whitespace()
                    .find_map(|a| a.strip_prefix("hugepagesz="))
                    .unwrap();
                r.expect_output(&format!("hugepagesz={size} asks for {size} huge pages, {WARNING} (it lists {list} under /sys/kernel/mm/hugepages"));
            }
        }
        assert!(
            n.read(&grub_file()).unwrap().contains(args),
            "the arguments are still written as asked"
        );
    }
    // default_hugepagesz= is checked as well.
    let n = node_with(&ARM64_64K_HUGEPAGES, 512 << 10);
    n.configmap("grub.conf", "default_hugepagesz=1G");
    run(&n, "config", 0).expect_output(&format!("default_hugepagesz=1G asks for 1G huge pages, {WARNING}"));
}

#[test]
fn post_interrupt_check_proves_each_count_was_reserved_for_its_size() {
    // (sizes, default, grub.conf, a short reservation: nr_hugepages file, value, message)
    let cases: [(&[u64], u64, &str, &str, &str); 3] = [
        (
            &X86_64_HUGEPAGES,
            2048,
            "hugepages=64 hugepagesz=1G hugepages=4",
            "/sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages",
            "hugepages=4 asks for 4 huge pages of 1G, the kernel reserved 2 (/sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages)",
        ),
        (
            &ARM64_4K_HUGEPAGES,
            2048,
            "hugepagesz=32M hugepages=16 hugepagesz=1G hugepages=4",
            "/sys/kernel/mm/hugepages/hugepages-32768kB/nr_hugepages",
            "hugepages=16 asks for 16 huge pages of 32M, the kernel reserved 2",
        ),
        (
            &ARM64_64K_HUGEPAGES,
            512 << 10,
            "hugepages=8 hugepagesz=16G hugepages=1",
            "/sys/kernel/mm/hugepages/hugepages-524288kB/nr_hugepages",
            "hugepages=8 asks for 8 huge pages of 512M, the kernel reserved 2",
        ),
    ];
    for (sizes, default, args, short, message) in cases {
        let n = node_with(sizes, default);
        n.configmap("grub.conf", args);
        run(&n, "config", 0);
        run(&n, "post-interrupt-check", 1).expect_output("the running kernel was not booted with");
        reboot(&n);
        run(&n, "post-interrupt-check", 0);
        n.file(short, "2\n");
        run(&n, "post-interrupt-check", 1)
            .expect_output(message)
            .expect_output("1 unmet expectation(s)");
    }
}

#[test]
fn a_size_the_kernel_ignored_reserves_nothing() {
    let n = node_with(&ARM64_64K_HUGEPAGES, 512 << 10);
    n.configmap("grub.conf", "hugepagesz=1G hugepages=4 hugepagesz=2M hugepages=512");
    run(&n, "config", 0).expect_output(WARNING);
    reboot(&n);
    run(&n, "post-interrupt-check", 1)
        .expect_output(
            "grub.conf: hugepages=4 asks for 4 huge pages of 1G, a size the running kernel does not support (it \
             lists: 2M, 512M, 16G), so it reserved 0 of 4",
        )
        .expect_output("1 unmet expectation(s)");
}

#[test]
fn a_bare_count_without_a_default_size_is_named() {
    let n = node();
    std::fs::remove_file(n.path("/proc/meminfo")).unwrap();
    n.configmap("grub.conf", "hugepages=16");
    run(&n, "config", 0);
    reboot(&n);
    run(&n, "post-interrupt-check", 1).expect_output(
        "hugepages=16 counts pages of the default huge page size, which is unknown: /proc/meminfo is missing",
    );
}

#[test]
fn without_sysfs_the_reservation_is_not_checked_and_without_hugetlb_it_fails() {
    // A chroot or an image build has no /sys: nothing can be proven, and the check
    // says so instead of failing. A booted kernel without huge page support has
    // /sys but no /sys/kernel/mm/hugepages: it reserved nothing, which fails.
    let n = node_with(&X86_64_HUGEPAGES, 2048);
    n.configmap("grub.conf", "hugepagesz=1G hugepages=4");
    run(&n, "config", 0);
    reboot(&n);
    std::fs::remove_dir_all(n.path("/sys")).unwrap();
    run(&n, "post-interrupt-check", 0)
        .expect_output("not checked: grub.conf: the huge pages reserved: this host has no /sys");
    std::fs::create_dir_all(n.path("/sys/kernel")).unwrap();
    run(&n, "post-interrupt-check", 1).expect_output("it supports no huge pages, so it reserved none of hugepages=4");
}

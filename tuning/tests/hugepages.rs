// SPDX-License-Identifier: Apache-2.0
//! Huge pages on x86_64, arm64 with 4k, 16k and 64k pages (simulated: the kernel's
//! machine name, the sizes it lists under /sys/kernel/mm/hugepages and its default
//! size in /proc/meminfo): config refuses, before any change, a `hugepagesz=` the
//! running kernel cannot register, naming the node's page size; a value that is no
//! size at all is bad input; post-interrupt-check proves each `hugepages=` count
//! reserved for its size.

mod common;

use common::*;

/// A node whose kernel (`arch`) registers `sizes` (KiB), `default` (KiB) its default size.
fn node_with(arch: &str, sizes: &[u64], default: u64) -> Node {
    let n = node();
    n.file("/proc/sys/kernel/arch", format!("{arch}\n"));
    hugepage_sizes(&n, sizes, default);
    n
}

#[test]
fn config_refuses_a_size_the_running_kernel_cannot_register_before_any_change() {
    // (arch, sizes, default, grub.conf, None: accepted, or Some((the argument named, the node's description)))
    type Case = (
        &'static str,
        &'static [u64],
        u64,
        &'static str,
        Option<(&'static str, &'static str)>,
    );
    let cases: [Case; 9] = [
        ("x86_64", &X86_64_HUGEPAGES, 2048, "hugepagesz=1G hugepages=4", None),
        (
            "x86_64",
            &X86_64_HUGEPAGES,
            2048,
            "hugepagesz=64K hugepages=4",
            Some((
                "hugepagesz=64K",
                "runs with 4k pages (page size 4k, x86_64) and registers only 2M, 1G",
            )),
        ),
        (
            "aarch64",
            &ARM64_4K_HUGEPAGES,
            2048,
            "hugepagesz=32M hugepages=8 hugepagesz=64K hugepages=2",
            None,
        ),
        (
            "aarch64",
            &ARM64_4K_HUGEPAGES,
            2048,
            "hugepagesz=2M hugepages=5128 hugepagesz=512M hugepages=4 default_hugepagesz=2M",
            Some((
                "hugepagesz=512M",
                "runs with 4k pages (page size 4k, aarch64) and registers only 64K, 2M, 32M, 1G",
            )),
        ),
        (
            "aarch64",
            &ARM64_16K_HUGEPAGES,
            2048,
            "hugepagesz=32M hugepages=8 hugepagesz=1G hugepages=1",
            None,
        ),
        (
            "aarch64",
            &ARM64_16K_HUGEPAGES,
            2048,
            "hugepagesz=2M hugepages=5128 hugepagesz=512M hugepages=4 default_hugepagesz=2M",
            Some((
                "hugepagesz=512M",
                "runs with 16k pages (page size 16k, aarch64) and registers only 2M, 32M, 1G",
            )),
        ),
        (
            "aarch64",
            &ARM64_64K_HUGEPAGES,
            512 << 10,
            "hugepagesz=512M hugepages=2 hugepagesz=16G hugepages=1",
            None,
        ),
        (
            "aarch64",
            &ARM64_64K_HUGEPAGES,
            512 << 10,
            "hugepagesz=1G hugepages=4",
            Some((
                "hugepagesz=1G",
                "runs with 64k pages (page size 64k, aarch64) and registers only 2M, 512M, 16G",
            )),
        ),
        (
            "aarch64",
            &ARM64_64K_HUGEPAGES,
            512 << 10,
            "default_hugepagesz=1G",
            Some((
                "default_hugepagesz=1G",
                "runs with 64k pages (page size 64k, aarch64) and registers only 2M, 512M, 16G",
            )),
        ),
    ];
    for (arch, sizes, default, args, refused) in cases {
        let n = node_with(arch, sizes, default);
        n.configmap("grub.conf", args);
        match refused {
            None => {
                run(&n, "config", 0);
                assert!(n.read(&grub_file()).unwrap().contains(args), "{args}: written as asked");
            }
            Some((arg, node)) => {
                let before = n.snapshot();
                let size = arg.split_once('=').unwrap().1;
                run(&n, "config", 1)
                    .expect_output(&format!(
                        "grub.conf: {arg} asks for {size} huge pages, which this node's kernel {node}"
                    ))
                    .expect_output("Nothing was changed; ask for one of");
                before.assert_same(&n.snapshot());
            }
        }
    }
}

#[test]
fn a_value_that_is_no_size_at_all_is_bad_input() {
    for (text, line, arg) in [
        ("hugepagesz=huge hugepages=2\n", 1, "hugepagesz=huge"),
        ("iommu=pt\ndefault_hugepagesz=1.5G\n", 2, "default_hugepagesz=1.5G"),
    ] {
        let n = node_with("x86_64", &X86_64_HUGEPAGES, 2048);
        n.configmap("grub.conf", text);
        let before = n.snapshot();
        run(&n, "config", 2)
            .expect_output(&format!("configMap key \"grub.conf\" line {line}"))
            .expect_output(&format!("{arg} is not a huge page size"));
        before.assert_same(&n.snapshot());
    }
}

#[test]
fn without_sysfs_config_warns_and_writes() {
    // A chroot or an image build lists no sizes: nothing to decide on, so config warns.
    let n = node_with("aarch64", &ARM64_16K_HUGEPAGES, 2048);
    std::fs::remove_dir_all(n.path("/sys")).unwrap();
    n.configmap("grub.conf", "hugepagesz=512M hugepages=4");
    run(&n, "config", 0).expect_output("this kernel lists no huge page sizes");
    assert!(n.read(&grub_file()).unwrap().contains("hugepagesz=512M hugepages=4"));
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
        let arch = if sizes.len() == 2 { "x86_64" } else { "aarch64" };
        let n = node_with(arch, sizes, default);
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
    // Configured on a 4k kernel, the node then boots a 64k one, which has no 1G.
    let n = node_with("aarch64", &ARM64_4K_HUGEPAGES, 2048);
    n.configmap("grub.conf", "hugepagesz=1G hugepages=4 hugepagesz=2M hugepages=512");
    run(&n, "config", 0);
    hugepage_sizes(&n, &ARM64_64K_HUGEPAGES, 512 << 10);
    reboot(&n);
    run(&n, "post-interrupt-check", 1)
        .expect_output(
            "grub.conf: hugepages=4 asks for 4 huge pages of 1G, a size the running kernel does not register (this \
             node's kernel runs with 64k pages (page size 64k, aarch64) and registers only 2M, 512M, 16G), so it \
             reserved 0 of 4",
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
    let n = node_with("x86_64", &X86_64_HUGEPAGES, 2048);
    n.configmap("grub.conf", "hugepagesz=1G hugepages=4");
    run(&n, "config", 0);
    reboot(&n);
    std::fs::remove_dir_all(n.path("/sys")).unwrap();
    run(&n, "post-interrupt-check", 0)
        .expect_output("not checked: grub.conf: the huge pages reserved: this host has no /sys");
    std::fs::create_dir_all(n.path("/sys/kernel")).unwrap();
    run(&n, "post-interrupt-check", 1).expect_output("it supports no huge pages, so it reserved none of hugepages=4");
}

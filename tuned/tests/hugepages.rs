// SPDX-License-Identifier: Apache-2.0
//! Huge pages asked by the active profiles' `[bootloader]` options, on simulated
//! kernels (the machine name and the sizes listed under /sys/kernel/mm/hugepages):
//! config refuses, before any change, a `hugepagesz=` the running kernel cannot
//! register, naming the node's page size; a value that is no size is bad input;
//! post-interrupt-check proves each pool reserved for its size.

mod common;

use common::*;
use skyhook_testkit::Node;

/// An arm64 profile asking 2M and 512M pools, as NVIDIA's Grace profiles do, on top
/// of a base profile whose 1G pool it replaces.
const BASE: &str = "[main]\nsummary=base\n\n[bootloader]\ncmdline_hugepages=hugepagesz=1G hugepages=2\n";
const GRACE: &str = "[main]\nsummary=grace\ninclude=hp_base\n\n[bootloader]\ncmdline_hugepages=hugepagesz=2M \
                     hugepages=5128 hugepagesz=512M hugepages=4 default_hugepagesz=2M\n";

/// A Debian node with tuned installed whose aarch64 kernel lists `sizes` (KiB).
fn arm64(sizes: &[u64]) -> Node {
    let node = debian(Some("2.21.0"));
    node.file("/proc/sys/kernel/arch", "aarch64\n");
    for kb in sizes {
        node.file(
            &format!("/sys/kernel/mm/hugepages/hugepages-{kb}kB/nr_hugepages"),
            "0\n",
        );
    }
    node.configmap("hp_base", BASE)
        .configmap("grace", GRACE)
        .configmap("tuned_profile", "grace");
    node
}

const K4: [u64; 4] = [64, 2048, 32 << 10, 1 << 20];
const K16: [u64; 3] = [2048, 32 << 10, 1 << 20];
const K64: [u64; 3] = [2048, 512 << 10, 16 << 20];

#[test]
fn config_refuses_a_size_the_running_kernel_cannot_register_before_any_change() {
    for (sizes, page) in [(&K4[..], "4k"), (&K16[..], "16k")] {
        let node = arm64(sizes);
        let before = node.snapshot();
        node.run("config")
            .expect_code(1)
            .expect_output(
                "the [bootloader] options of tuned profile(s) hp_base, grace: hugepagesz=512M asks for 512M huge pages",
            )
            .expect_output(&format!("runs with {page} pages (page size {page}, aarch64)"))
            .expect_output("boot this node on a kernel with 64k pages (which registers 512M)");
        before.assert_same(&node.snapshot());
    }
    // The base's 1G, which a 64k kernel cannot register, is replaced: not asked.
    let node = arm64(&K64);
    node.run("config").expect_code(0);
}

#[test]
fn a_value_that_is_no_size_is_bad_input() {
    let node = arm64(&K64);
    node.configmap(
        "grace",
        "[main]\nsummary=x\n\n[bootloader]\ncmdline=hugepagesz=huge hugepages=4\n",
    );
    let before = node.snapshot();
    node.run("config")
        .expect_code(2)
        .expect_output("configMap key \"grace\" line 5")
        .expect_output("hugepagesz=huge is not a huge page size");
    before.assert_same(&node.snapshot());
}

#[test]
fn post_interrupt_check_proves_each_pool_reserved_for_its_size() {
    let node = arm64(&K64);
    node.run("config").expect_code(0);
    node.run("post-interrupt-check")
        .expect_code(1)
        .expect_output(
            "hugepages=5128 asks for 5128 huge pages of 2M, the kernel reserved 0 \
             (/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages)",
        )
        .expect_output("hugepages=4 asks for 4 huge pages of 512M, the kernel reserved 0");
    node.file("/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages", "5128\n");
    node.file("/sys/kernel/mm/hugepages/hugepages-524288kB/nr_hugepages", "3\n");
    let run = node.run("post-interrupt-check");
    run.expect_code(1)
        .expect_output("hugepages=4 asks for 4 huge pages of 512M, the kernel reserved 3")
        .expect_output("1 unmet expectation(s)");
    node.file("/sys/kernel/mm/hugepages/hugepages-524288kB/nr_hugepages", "4\n");
    node.run("post-interrupt-check").expect_code(0);
    // config-check does not ask for the pools: they exist only after the reboot.
    node.file("/sys/kernel/mm/hugepages/hugepages-524288kB/nr_hugepages", "0\n");
    node.run("config-check").expect_code(0);
}

// SPDX-License-Identifier: Apache-2.0
//! The gb200 performance chain asks 2M and 512M pools (`hugepagesz=2M hugepages=5128
//! hugepagesz=512M hugepages=4 default_hugepagesz=2M`, upstream 0.10.0). On simulated
//! arm64 kernels (the machine name and the sizes listed under
//! /sys/kernel/mm/hugepages): a 4k or 16k kernel cannot register 512M, and config
//! refuses before any change (no GRUB ledger, no profile, no drop-in), naming the
//! page size; a 64k kernel takes it, and post-interrupt-check proves each pool.

#[path = "../../tuned/tests/common/mod.rs"]
mod common;
mod grub_node;

use common::*;
use grub_node::{tuned_writes_bootcmdline, with_grub};
use skyhook_core::os::distro::fixtures;
use skyhook_testkit::Node;

/// An Ubuntu 24.04 gb200 node (service eks: a GRUB drop-in) whose aarch64 kernel
/// lists `sizes` (KiB).
fn gb200(sizes: &[u64]) -> Node {
    let node = debian(Some("2.21.0"));
    node.file("/etc/os-release", fixtures::UBUNTU_2404)
        .file("/proc/sys/kernel/arch", "aarch64\n");
    with_grub(&node);
    for kb in sizes {
        node.file(
            &format!("/sys/kernel/mm/hugepages/hugepages-{kb}kB/nr_hugepages"),
            "0\n",
        );
    }
    node.configmap("accelerator", "gb200")
        .configmap("intent", "performance")
        .configmap("service", "eks");
    node
}

#[test]
fn a_4k_or_16k_kernel_is_refused_before_any_change_naming_its_page_size() {
    for (sizes, page, registers) in [
        (&[64, 2048, 32 << 10, 1 << 20][..], "4k", "64K, 2M, 32M, 1G"),
        (&[2048, 32 << 10, 1 << 20][..], "16k", "2M, 32M, 1G"),
    ] {
        let node = gb200(sizes);
        let before = node.snapshot();
        node.run("config")
            .expect_code(1)
            .expect_output("hugepagesz=512M asks for 512M huge pages")
            .expect_output(&format!(
                "this node's kernel runs with {page} pages (page size {page}, aarch64) and registers only {registers}"
            ))
            .expect_output("boot this node on a kernel with 64k pages (which registers 512M)");
        before.assert_same(&node.snapshot());
    }
}

#[test]
fn on_a_64k_kernel_post_interrupt_check_proves_each_pool() {
    let node = gb200(&[2048, 512 << 10, 16 << 20]);
    tuned_writes_bootcmdline(
        &node,
        "hugepagesz=2M hugepages=5128 hugepagesz=512M hugepages=4 default_hugepagesz=2M",
    );
    node.run("config").expect_code(0);
    node.file("/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages", "5128\n");
    node.run("post-interrupt-check").expect_code(1).expect_output(
        "hugepages=4 asks for 4 huge pages of 512M, the kernel reserved 0 \
             (/sys/kernel/mm/hugepages/hugepages-524288kB/nr_hugepages)",
    );
    node.file("/sys/kernel/mm/hugepages/hugepages-524288kB/nr_hugepages", "4\n");
    let run = node.run("post-interrupt-check");
    assert!(!run.output().contains("huge pages of"), "{}", run.output());
}

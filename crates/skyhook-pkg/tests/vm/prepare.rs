// SPDX-License-Identifier: Apache-2.0
//! The guests of `.ci/run`'s VM step readied ahead of it, with nothing booted: qemu,
//! the payload and the base image of each ([`crate::vm::ready`]). `.ci/run` runs these
//! in its `vm_prepare` step, in the background beside the test suite, so that the VM
//! step's first guests boot at once and the arm64 scenario starts as soon as a test
//! thread is free. Each is a check of its own too: qemu obtained, the payload built,
//! the image made. The scenarios ready their guests themselves when these have not run.

use crate::arch::{Arch, Guest};
use crate::vm;

#[test]
#[ignore = "VM tier: needs root, the Debian mirror and minutes; cargo test -p skyhook-pkg --test vm -- --ignored"]
fn x86_64() {
    vm::ready(Guest::stock(Arch::X86_64));
}

#[test]
#[ignore = "VM tier: needs root, the Debian mirror and minutes; cargo test -p skyhook-pkg --test vm -- --ignored"]
fn arm64_16k() {
    vm::ready(Guest::ARM64_16K);
}

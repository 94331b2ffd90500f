// SPDX-License-Identifier: Apache-2.0
//! The guest of `.ci/run`'s VM step readied ahead of it, with nothing booted: qemu,
//! the payload and the base image ([`crate::vm::ready`]). `.ci/run` runs this in its
//! `vm_prepare` step, in the background beside the test suite, so that the VM step's
//! first guests boot at once. It is a check of its own too: qemu obtained, the
//! payload built, the image made. The scenarios ready their guests themselves when
//! this has not run (the arm64 guests' always: `.ci/run vm_arm64`).

use crate::arch::{Arch, Guest};
use crate::vm;

#[test]
#[ignore = "VM tier: needs root, the Debian mirror and minutes; cargo test -p skyhook-pkg --test vm -- --ignored"]
fn x86_64() {
    vm::ready(Guest::stock(Arch::X86_64));
}

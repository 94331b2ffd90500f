// SPDX-License-Identifier: Apache-2.0
//! What the guests of `.ci/run`'s vm step need, made ahead of the scenarios: its
//! `vm_images` step runs this in the background beside the test step, whose
//! processes leave a core idle for part of their time, so that the vm step starts
//! its guests at once instead of building payloads and base images while they wait.
//! The payloads come first: their release builds share target/'s lock with the
//! chroot tier's `skyhook-pkg dist`, which the test step reaches minutes later. Then
//! the arm64 image, whose root is the chroot tier's cached arm64 root (built here
//! when the cache has none, found cached by the chroot tier after), then the x86_64
//! one. Quick when everything is cached; a failure fails the test with the reason,
//! as a scenario's would.

use crate::arch::{Arch, Guest};
use crate::vm::{prepare_image, prepare_payload};

#[test]
#[ignore = "VM tier: needs root, the Debian mirror and qemu-user; .ci/run vm_images"]
fn guests_of_the_default_run() {
    prepare_payload(Arch::X86_64);
    prepare_payload(Arch::Arm64);
    prepare_image(Guest::ARM64_16K);
    prepare_image(Guest::stock(Arch::X86_64));
}

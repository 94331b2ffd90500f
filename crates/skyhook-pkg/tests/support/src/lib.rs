// SPDX-License-Identifier: Apache-2.0
//! What skyhook-pkg's test targets share: the chroot tier's Debian roots, which the VM
//! tier's arm64 image starts from ([`debian`]), qemu-user emulation for arm64 programs
//! ([`emulation`]), a `grub-probe` for roots without block devices ([`grub_probe`]),
//! this machine's apt sources ([`apt_sources`]), and the empty root the dist tests run
//! a static binary in ([`empty_root`]). A library, so that each test target
//! uses what it needs and nothing is compiled twice.

pub mod apt_sources;
pub mod debian;
pub mod empty_root;
pub mod emulation;
pub mod grub_probe;

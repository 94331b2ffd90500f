// SPDX-License-Identifier: Apache-2.0
//! The VM tier: packages run in a booted Debian bookworm VM — systemd as PID 1, booted
//! through GRUB from its own disk, real reboots — driven boot by boot.
//!
//! - [`arch`]: what differs between x86_64 and arm64 guests.
//! - [`qemu`]: a private qemu-system-x86_64 or qemu-system-aarch64 (apt-get download +
//!   dpkg -x into the cache), run under TCG.
//! - [`image`]: the base disk of each architecture (debootstrap, or for arm64 the
//!   chroot tier's cached root ([`debian`]) completed under qemu-user ([`emulation`]);
//!   ext4 behind a hand-written MBR, GRUB installed from the root by GRUB's own tools:
//!   BIOS GRUB on x86_64, GRUB EFI on its own ESP on arm64), cached and keyed by its recipe; one per
//!   [`arch::Guest`] (arm64 also with bookworm-backports' 16k-page kernel).
//! - [`vm`]: what a scenario uses: [`vm::Vm::new`], [`vm::Vm::boot`] (one boot that runs
//!   a bash script in the guest and returns its exit code, output and files), asserts.
//! - [`kernel64k`]: a 64k-page arm64 kernel package built from the suite's kernel
//!   source (Debian builds none), which the nvidia-setup arm64 scenario installs.
//! - [`prepare`]: the guests of `.ci/run`'s VM step readied ahead of it, nothing booted.
//! - one module per scenario: [`smoke`], [`tuning`], [`tuned`], [`kdump`], [`shellscript`],
//!   [`nvidia`] (nvidia-tuned and nvidia-tuning-gke), [`nvidia_setup`] (the EKS
//!   entries: a second kernel booted, the instance storage's RAID0 array, with NVMe
//!   disks), [`nvidia_setup_aks_bcm`] (aks-h100 with bcm-h100; on arm64 with bcm-gb200),
//!   [`unload_and_bind`] (copy-fail and bind-mount on one machine, with a second
//!   disk); [`catalog`]: what the NVIDIA scenarios expect of a chain, read from
//!   `skyhook-pkg profiles show`.
//!
//! The tests are `#[ignore]`d: the tier needs root, the Debian mirror and minutes of
//! CPU. Run it with `cargo test -p skyhook-pkg --test vm -- --ignored` (one scenario:
//! add its name, e.g. `smoke`). Everything it downloads or builds lives under
//! `SKYHOOK_VM_CACHE` (default `/var/cache/skyhook-packages/vm`), never in the repository.

mod arch;
mod cache;
mod catalog;
mod disk;
mod image;
mod kernel64k;
mod qemu;
mod vm;

mod kdump;
mod nvidia;
mod nvidia_setup;
mod nvidia_setup_aks_bcm;
mod prepare;
mod shellscript;
mod smoke;
mod tuned;
mod tuning;
mod unload_and_bind;

// The chroot tier's cached Debian roots and its qemu-user registration: a foreign
// guest's image starts from that root (`image`), not from a second emulated
// debootstrap.
use skyhook_pkg_support::{apt_sources, debian, emulation, grub_probe};

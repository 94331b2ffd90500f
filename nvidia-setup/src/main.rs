// SPDX-License-Identifier: Apache-2.0
//! The nvidia-setup step binary: `nvidia-setup <mode>`, as config.json runs it, and
//! `nvidia-setup assemble-instance-storage`, as its boot unit runs it.

skyhook_core::package_main!(nvidia_setup::NvidiaSetup);

// SPDX-License-Identifier: Apache-2.0
//! The bind-mount step binary: `bind-mount <mode>`, as config.json runs it.

skyhook_core::package_main!(bind_mount::BindMount);

// SPDX-License-Identifier: Apache-2.0
//! The kdump step binary: `kdump <mode>`, as config.json runs it.

skyhook_core::package_main!(kdump::Kdump);

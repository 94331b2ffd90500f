// SPDX-License-Identifier: Apache-2.0
//! The shellscript step binary: `shellscript <mode>`, as config.json runs it.

skyhook_core::package_main!(shellscript::Shellscript);

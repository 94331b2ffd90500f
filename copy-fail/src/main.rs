// SPDX-License-Identifier: Apache-2.0
//! The copy-fail step binary: `copy-fail <mode>`, as config.json runs it.

skyhook_core::package_main!(copy_fail::CopyFail);

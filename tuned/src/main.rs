// SPDX-License-Identifier: Apache-2.0
//! The tuned step binary: `tuned <mode>`, as config.json runs it.

skyhook_core::package_main!(tuned::Tuned);

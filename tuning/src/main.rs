// SPDX-License-Identifier: Apache-2.0
//! The tuning step binary: `tuning <mode>`, as config.json runs it.

skyhook_core::package_main!(tuning::Tuning);

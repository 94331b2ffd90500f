// SPDX-License-Identifier: Apache-2.0
//! The package's metadata agrees with itself: config.json is valid, its version is
//! the crate's, its package_name the original's, its modes are the binary's, and
//! CHANGELOG.md has the version.

use nvidia_tuning_gke::NvidiaTuningGke;
use skyhook_core::Package;

#[test]
fn config_json_matches_the_crate() {
    skyhook_testkit::assert_package_metadata_as(
        env!("CARGO_MANIFEST_DIR"),
        "nvidia_tuning_gke",
        NvidiaTuningGke::KIND,
        NvidiaTuningGke::VERSION,
        &skyhook_core::runtime::run::modes_of::<NvidiaTuningGke>(),
    );
}

// SPDX-License-Identifier: Apache-2.0
//! The package's metadata agrees with itself: config.json is valid, its version is
//! the crate's, its modes are the binary's, and CHANGELOG.md has the version; its
//! package_name is the original's, `nvidia_tuned`.

use nvidia_tuned::NvidiaTuned;
use skyhook_core::Package;

#[test]
fn config_json_matches_the_crate() {
    skyhook_testkit::assert_package_metadata_as(
        env!("CARGO_MANIFEST_DIR"),
        "nvidia_tuned",
        NvidiaTuned::KIND,
        NvidiaTuned::VERSION,
        &skyhook_core::runtime::run::modes_of::<NvidiaTuned>(),
    );
}

// SPDX-License-Identifier: Apache-2.0
//! The package's metadata agrees with itself: config.json is valid, its
//! `package_name` is the bash package's, its version is the crate's, its modes are
//! the binary's, and CHANGELOG.md has the version.

use nvidia_setup::{NvidiaSetup, PACKAGE_NAME};
use skyhook_core::Package;

#[test]
fn config_json_matches_the_crate() {
    skyhook_testkit::assert_package_metadata_as(
        env!("CARGO_MANIFEST_DIR"),
        PACKAGE_NAME,
        NvidiaSetup::KIND,
        NvidiaSetup::VERSION,
        &skyhook_core::runtime::run::modes_of::<NvidiaSetup>(),
    );
}

// SPDX-License-Identifier: Apache-2.0
//! The package's metadata agrees with itself: config.json is valid, its version is
//! the crate's, its modes are the binary's, and CHANGELOG.md has the version.

use bind_mount::BindMount;
use skyhook_core::Package;

#[test]
fn config_json_matches_the_crate() {
    skyhook_testkit::assert_package_metadata(
        env!("CARGO_MANIFEST_DIR"),
        BindMount::KIND,
        BindMount::VERSION,
        &skyhook_core::runtime::run::modes_of::<BindMount>(),
    );
}

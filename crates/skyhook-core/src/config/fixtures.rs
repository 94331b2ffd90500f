// SPDX-License-Identifier: Apache-2.0
//! Test fixtures: a config.json every check accepts. Compiled into test builds only
//! (the `fixtures` feature, which skyhook-testkit enables): never into a node binary.

/// A config.json of one action mode and its check that passes the schema and every
/// load rule: the tests change one thing in it and look for that one finding.
pub const GOOD: &str = r#"{
    "schema_version": "v1", "package_name": "demo", "package_version": "1.0.0",
    "expected_config_files": [],
    "modes": {
        "config": [{"name": "config", "path": "demo", "arguments": ["config"], "returncodes": [0],
                    "on_host": true, "idempotence": true, "upgrade_step": false, "env": {}}],
        "config-check": [{"name": "config-check", "path": "demo_check", "arguments": ["config-check"], "returncodes": [0],
                    "on_host": true, "idempotence": true, "upgrade_step": false}]
    }
}"#;

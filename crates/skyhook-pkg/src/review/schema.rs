// SPDX-License-Identifier: Apache-2.0
//! The v1 JSON schemas (`schemas/v1/`), embedded, and validation of a config.json
//! against them, each violation located as `modes.config[0].returncodes`, followed
//! by skyhook-core's checks of the model (load rules, step files, version). Only the
//! developer tool validates against the schema, so only it depends on jsonschema.

use std::path::Path;

use jsonschema::{Registry, Resource};
use serde_json::Value;

use skyhook_core::config::{Report, check_rules, check_step_files, check_version, parse};

/// The package schema (draft 2020-12).
pub const PACKAGE_SCHEMA: &str = include_str!("../../../../schemas/v1/skyhook-package.schema.json");
/// The step schema, referenced from the package schema by `$ref`.
pub const STEP_SCHEMA: &str = include_str!("../../../../schemas/v1/skyhook-step.schema.json");

/// Validates a config.json document against the v1 schemas.
pub fn check_schema(instance: &Value, report: &mut Report) {
    let package: Value = serde_json::from_str(PACKAGE_SCHEMA).expect("embedded package schema is JSON");
    let step: Value = serde_json::from_str(STEP_SCHEMA).expect("embedded step schema is JSON");
    let step_id = step["$id"].as_str().expect("step schema has an $id").to_string();
    let registry = Registry::new()
        .add(step_id, Resource::from_contents(step))
        .and_then(|b| b.prepare())
        .expect("embedded step schema registers");
    let validator = jsonschema::options()
        .with_registry(&registry)
        .build(&package)
        .expect("embedded package schema compiles");
    for error in validator.iter_errors(instance) {
        report.error(dotted(error.instance_path().as_str()), error.to_string());
    }
}

/// `/modes/config/0/returncodes` → `modes.config[0].returncodes`.
pub fn dotted(pointer: &str) -> String {
    let mut out = String::new();
    for segment in pointer.split('/').skip(1) {
        let segment = segment.replace("~1", "/").replace("~0", "~");
        if !segment.is_empty() && segment.bytes().all(|b| b.is_ascii_digit()) {
            out.push_str(&format!("[{segment}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&segment);
        }
    }
    if out.is_empty() { "(top level)".to_string() } else { out }
}

/// The whole validation of a package: JSON syntax, schema, the agent's load rules,
/// the step files under `skyhook_dir` (when given), and the version against
/// `crate_version` (when given). Load rules run only on a document that passes the
/// schema, so every message stands on its own.
pub fn validate(text: &str, skyhook_dir: Option<&Path>, crate_version: Option<&str>) -> Report {
    let mut report = Report::default();
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(_) => return parse(text).expect_err("invalid JSON does not parse"),
    };
    check_schema(&value, &mut report);
    if !report.is_ok() {
        return report;
    }
    let cfg = match parse(text) {
        Ok(c) => c,
        Err(r) => return r,
    };
    check_rules(&cfg, &mut report);
    if let Some(dir) = skyhook_dir {
        check_step_files(&cfg, dir, &mut report);
    }
    if let Some(v) = crate_version {
        check_version(&cfg, v, &mut report);
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use skyhook_core::config::fixtures::GOOD;

    fn errors(text: &str) -> Vec<String> {
        validate(text, None, None)
            .errors
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn pointer_to_dotted_location() {
        assert_eq!(dotted(""), "(top level)");
        assert_eq!(dotted("/modes/config/0/returncodes"), "modes.config[0].returncodes");
        assert_eq!(
            dotted("/modes/post-interrupt-check/12/name"),
            "modes.post-interrupt-check[12].name"
        );
    }

    #[test]
    fn accepts_the_good_config() {
        assert_eq!(errors(GOOD), Vec::<String>::new());
    }

    #[test]
    fn each_violation_has_its_own_message_and_place() {
        let cases = [
            (
                GOOD.replace("\"package_name\": \"demo\",", ""),
                "(top level): \"package_name\" is a required property",
            ),
            (
                GOOD.replace("\"1.0.0\"", "\"v1.0\""),
                "package_version: \"v1.0\" does not match",
            ),
            (
                GOOD.replace("\"name\": \"config\"", "\"name\": \"con fig\""),
                "modes.config[0].name: \"con fig\" does not match",
            ),
            (
                GOOD.replace(
                    "[\"config\"], \"returncodes\": [0]",
                    "[\"config\"], \"returncodes\": []",
                ),
                "modes.config[0].returncodes: [] has less than 1 item",
            ),
            (
                GOOD.replace("\"config-check\": [{", "\"confg-check\": [{"),
                "modes: \"confg-check\" is not one of",
            ),
        ];
        for (text, expected) in cases {
            let e = errors(&text);
            assert!(
                e.iter().any(|m| m.starts_with(expected)),
                "expected {expected:?} in {e:?}"
            );
        }
    }

    #[test]
    fn reports_all_problems_at_once() {
        let bad = GOOD
            .replace("\"package_name\": \"demo\",", "")
            .replace("\"1.0.0\"", "\"01.0.0\"");
        assert_eq!(errors(&bad).len(), 2, "{:?}", errors(&bad));
    }

    #[test]
    fn every_package_of_the_workspace_passes_the_schema() {
        let root = crate::workspace::root();
        let packages = crate::workspace::packages(&root);
        assert!(packages.len() >= 8, "{packages:?}");
        for package in packages {
            let text = std::fs::read_to_string(root.join(&package).join("config.json")).unwrap();
            assert_eq!(errors(&text), Vec::<String>::new(), "{package}/config.json");
        }
    }
}

// SPDX-License-Identifier: Apache-2.0
//! Which test targets `skyhook-pkg test` builds: by default all of the chosen packages'
//! (cargo's own choice); with `--skip-target NAME`, each chosen package's library and
//! every integration test target but those named, spelled out for cargo (`--lib --test
//! A --test B …`), so that a left-out target is not even built. The binaries' own
//! unit-test harnesses (`src/main.rs`) are not among them: no package keeps a test
//! there (its logic, and its tests, live in its library; `ci_files` holds this).

use serde_json::Value;

use crate::error::TestError;

/// The cargo arguments choosing the targets to build, from `cargo metadata
/// --no-deps --format-version 1` output: empty (cargo's default) without
/// `skip_targets`; otherwise `--lib` and a `--test` for each integration test target
/// of the `packages` (or, when none is named, the workspace's default members) whose
/// name `skip_targets` does not hold. A skipped name that no chosen package has is an
/// error: a typo would otherwise leave everything in.
pub fn chosen(metadata: &str, packages: &[String], skip_targets: &[String]) -> Result<Vec<String>, TestError> {
    if skip_targets.is_empty() {
        return Ok(Vec::new());
    }
    let metadata: Value = serde_json::from_str(metadata).map_err(|e| TestError::CargoMessage {
        excerpt: metadata.chars().take(120).collect(),
        why: e.to_string(),
    })?;
    let default_members: Vec<&str> = metadata["workspace_default_members"]
        .as_array()
        .map(|ids| ids.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut tests: Vec<&str> = Vec::new();
    let mut seen_skipped: Vec<&str> = Vec::new();
    for package in metadata["packages"].as_array().into_iter().flatten() {
        let name = package["name"].as_str().unwrap_or_default();
        let id = package["id"].as_str().unwrap_or_default();
        let chosen = if packages.is_empty() {
            default_members.contains(&id)
        } else {
            packages.iter().any(|p| p == name)
        };
        if !chosen {
            continue;
        }
        for target in package["targets"].as_array().into_iter().flatten() {
            let is_test = target["kind"].as_array().is_some_and(|k| k.iter().any(|k| k == "test"));
            let Some(test) = target["name"].as_str().filter(|_| is_test) else {
                continue;
            };
            if skip_targets.iter().any(|s| s == test) {
                seen_skipped.push(test);
            } else if !tests.contains(&test) {
                tests.push(test);
            }
        }
    }
    if let Some(unknown) = skip_targets.iter().find(|s| !seen_skipped.contains(&s.as_str())) {
        return Err(TestError::UnknownTarget { name: unknown.clone() });
    }
    tests.sort_unstable();
    let mut args = vec!["--lib".to_string()];
    for test in tests {
        args.extend(["--test".to_string(), test.to_string()]);
    }
    Ok(args)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two packages as `cargo metadata --no-deps` describes them (only the fields read).
    const METADATA: &str = r#"{
      "packages": [
        {"name": "tuning", "id": "path+file:///w/tuning#2.1.0", "targets": [
          {"kind": ["lib"], "name": "tuning"},
          {"kind": ["bin"], "name": "tuning"},
          {"kind": ["test"], "name": "config"},
          {"kind": ["test"], "name": "hostile"},
          {"kind": ["test"], "name": "killpoints"}]},
        {"name": "kdump", "id": "path+file:///w/kdump#2.1.0", "targets": [
          {"kind": ["lib"], "name": "kdump"},
          {"kind": ["test"], "name": "hostile"},
          {"kind": ["test"], "name": "lifecycle"}]},
        {"name": "skyhook-pkg", "id": "path+file:///w/crates/skyhook-pkg#0.1.0", "targets": [
          {"kind": ["bin"], "name": "skyhook-pkg"},
          {"kind": ["test"], "name": "chroot"}]}
      ],
      "workspace_default_members": ["path+file:///w/tuning#2.1.0"]
    }"#;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn without_a_skipped_target_cargo_chooses() {
        assert!(chosen("not read", &strings(&["tuning"]), &[]).unwrap().is_empty());
    }

    #[test]
    fn a_skipped_target_is_left_out_of_every_chosen_package_and_nothing_else_is() {
        let args = chosen(METADATA, &strings(&["tuning", "kdump"]), &strings(&["hostile"])).unwrap();
        assert_eq!(
            args,
            strings(&[
                "--lib",
                "--test",
                "config",
                "--test",
                "killpoints",
                "--test",
                "lifecycle"
            ])
        );
        let args = chosen(METADATA, &strings(&["tuning"]), &strings(&["hostile", "killpoints"])).unwrap();
        assert_eq!(
            args,
            strings(&["--lib", "--test", "config"]),
            "kdump's tests are not chosen"
        );
    }

    #[test]
    fn without_packages_the_default_members_are_chosen() {
        let args = chosen(METADATA, &[], &strings(&["killpoints"])).unwrap();
        assert_eq!(args, strings(&["--lib", "--test", "config", "--test", "hostile"]));
    }

    #[test]
    fn a_skipped_name_no_chosen_package_has_is_refused() {
        let e = chosen(METADATA, &strings(&["kdump"]), &strings(&["killpoint"])).unwrap_err();
        assert!(e.to_string().contains("\"killpoint\""), "{e}");
        let e = chosen("{", &strings(&["kdump"]), &strings(&["hostile"])).unwrap_err();
        assert!(e.to_string().contains("not a JSON message"), "{e}");
    }
}

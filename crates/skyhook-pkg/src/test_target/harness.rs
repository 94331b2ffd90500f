// SPDX-License-Identifier: Apache-2.0
//! The test harness's arguments (after `--`) of `skyhook-pkg test`: which of them
//! choose the tests (given to each binary's `--list`) and which say how a chosen test
//! runs (given to each test's own process). Arguments that make no sense when every
//! test runs alone in its own process are refused by name.

use crate::error::TestError;

/// The harness arguments, sorted by what they are for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Harness {
    /// Filters, `--skip`, `--exact`, `--ignored`, `--include-ignored`: for `--list`.
    pub selection: Vec<String>,
    /// `--ignored`, `--include-ignored`, `--nocapture`, `--show-output`: for each test.
    pub mode: Vec<String>,
}

/// The harness flags that are accepted, for the refusal of any other.
const ACCEPTED: &str = "filters, --skip PATTERN, --exact, --ignored, --include-ignored, --nocapture, --show-output";

impl Harness {
    /// Sorts `args`; refuses a flag it does not know, naming it.
    pub fn parse(args: &[String]) -> Result<Harness, TestError> {
        let mut harness = Harness::default();
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--skip" => {
                    let pattern = args.next().ok_or_else(|| TestError::HarnessArgument {
                        argument: arg.clone(),
                        why: "it needs a pattern after it".into(),
                    })?;
                    harness.selection.extend([arg.clone(), pattern.clone()]);
                }
                "--exact" => harness.selection.push(arg.clone()),
                "--ignored" | "--include-ignored" => {
                    harness.selection.push(arg.clone());
                    harness.mode.push(arg.clone());
                }
                "--nocapture" | "--no-capture" | "--show-output" => harness.mode.push(arg.clone()),
                a if a.starts_with("--skip=") => harness.selection.push(arg.clone()),
                a if a.starts_with("--test-threads") => {
                    return Err(TestError::HarnessArgument {
                        argument: arg.clone(),
                        why: "every test runs alone in its own process; `skyhook-pkg test --jobs N` sets how many run at once".into(),
                    });
                }
                a if a.starts_with('-') => {
                    return Err(TestError::HarnessArgument {
                        argument: arg.clone(),
                        why: format!("not supported with one process per test; supported: {ACCEPTED}"),
                    });
                }
                _ => harness.selection.push(arg.clone()),
            }
        }
        Ok(harness)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn filters_and_skips_choose_the_tests_and_run_modes_reach_each_test() {
        let h = Harness::parse(&args(&[
            "config",
            "--skip",
            "slow",
            "--skip=other",
            "--ignored",
            "--nocapture",
        ]))
        .unwrap();
        assert_eq!(
            h.selection,
            args(&["config", "--skip", "slow", "--skip=other", "--ignored"])
        );
        assert_eq!(h.mode, args(&["--ignored", "--nocapture"]));
    }

    #[test]
    fn a_flag_that_cannot_apply_to_one_process_per_test_is_refused_by_name() {
        let e = Harness::parse(&args(&["--test-threads=1"])).unwrap_err().to_string();
        assert!(e.contains("--test-threads=1") && e.contains("--jobs"), "{e}");
        let e = Harness::parse(&args(&["--format", "json"])).unwrap_err().to_string();
        assert!(e.contains("--format") && e.contains("--skip PATTERN"), "{e}");
        let e = Harness::parse(&args(&["--skip"])).unwrap_err().to_string();
        assert!(e.contains("needs a pattern"), "{e}");
    }
}

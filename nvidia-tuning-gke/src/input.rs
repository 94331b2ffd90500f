// SPDX-License-Identifier: Apache-2.0
//! What the SCR asks for, as the original package read it: configMap keys
//! `accelerator` (a catalog name or `auto`) and `intent`, environment variable
//! `USE_CONTAINERD` (`true` adds the profile's containerd drop-in). Every problem
//! is collected and is bad input (exit 2); keys this package does not read are
//! named in a warning and ignored, as the original ignored them.

use skyhook_core::error::excerpt;
use skyhook_core::{ConfigMaps, Error, Result};

/// The configMap key naming the accelerator.
pub const ACCELERATOR: &str = "accelerator";
/// The configMap key naming the workload intent.
pub const INTENT: &str = "intent";
/// The environment variable that turns the containerd drop-in on.
pub const USE_CONTAINERD: &str = "USE_CONTAINERD";

/// The validated request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The accelerator as given (a name or `auto`), trimmed.
    pub accelerator: String,
    /// The intent, trimmed.
    pub intent: String,
    /// Whether the profile's containerd drop-in is wanted.
    pub use_containerd: bool,
}

impl Request {
    /// Reads the configMap and the value of `USE_CONTAINERD` (`None` when unset).
    pub fn read(cm: &ConfigMaps, use_containerd: Option<&str>) -> Result<Request> {
        let mut problems = Vec::new();
        let accelerator = cm.required_word(ACCELERATOR, "a catalog accelerator name, or auto", &mut problems);
        let intent = cm.required_word(INTENT, "a workload intent such as inference", &mut problems);
        let use_containerd = match use_containerd.map(str::trim) {
            None | Some("") | Some("false") => false,
            Some("true") => true,
            Some(other) => {
                problems.push(format!(
                    "environment variable {USE_CONTAINERD} is {}; it must be true (add the profile's containerd \
                     drop-in) or false (the default); fix the env entry of the package in the SCR",
                    excerpt(other)
                ));
                false
            }
        };
        cm.warn_unread(
            &[ACCELERATOR, INTENT],
            "it reads accelerator and intent; the settings come from its catalog",
        );
        match (accelerator, intent) {
            (Some(accelerator), Some(intent)) if problems.is_empty() => Ok(Request {
                accelerator,
                intent,
                use_containerd,
            }),
            _ => Err(Error::Input(problems)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(entries: &[(&str, &str)], env: Option<&str>) -> Result<Request> {
        Request::read(&ConfigMaps::from_entries(entries.iter().copied()), env)
    }

    #[test]
    fn values_are_trimmed_as_the_original_did() {
        let r = read(&[("accelerator", " gb200\n"), ("intent", "inference\n")], Some("true")).unwrap();
        assert_eq!(
            r,
            Request {
                accelerator: "gb200".into(),
                intent: "inference".into(),
                use_containerd: true
            }
        );
        assert!(
            !read(&[("accelerator", "h100"), ("intent", "x")], None)
                .unwrap()
                .use_containerd
        );
        assert!(
            !read(&[("accelerator", "h100"), ("intent", "x")], Some("false"))
                .unwrap()
                .use_containerd
        );
    }

    #[test]
    fn every_problem_is_reported_with_the_key_and_the_fix() {
        type Case<'a> = (&'a [(&'a str, &'a str)], Option<&'a str>, &'a [&'a str]);
        let cases: &[Case] = &[
            (
                &[("intent", "inference")],
                None,
                &["configMap key \"accelerator\" is missing; it must be a catalog accelerator name, or auto"],
            ),
            (
                &[("accelerator", " \n"), ("intent", "")],
                None,
                &[
                    "configMap key \"accelerator\" is empty",
                    "configMap key \"intent\" is empty",
                ],
            ),
            (
                &[("accelerator", "h100\ngb200"), ("intent", "inference")],
                None,
                &["configMap key \"accelerator\" line 2 (\"gb200\"): the value must be one word"],
            ),
            (
                &[("accelerator", "h100"), ("intent", "inference")],
                Some("yes"),
                &["environment variable USE_CONTAINERD is \"yes\"; it must be true"],
            ),
        ];
        for (entries, env, wanted) in cases {
            let Err(Error::Input(p)) = read(entries, *env) else {
                panic!("{entries:?} accepted")
            };
            assert_eq!(p.len(), wanted.len(), "{p:#?}");
            for (got, want) in p.iter().zip(wanted.iter()) {
                assert!(got.starts_with(want), "{got}\n  does not start with\n{want}");
            }
        }
    }

    #[test]
    fn a_huge_value_is_quoted_as_a_bounded_excerpt() {
        // One word, however long: the catalog refuses it, quoting a bounded excerpt.
        let huge = "x".repeat(100_000);
        let cm = ConfigMaps::from_entries([("accelerator", huge.as_str()), ("intent", "inference")]);
        let Err(Error::Input(p)) = crate::validate(&cm, None) else {
            panic!()
        };
        assert!(p[0].len() < 400, "{}", p[0]);
        assert!(p[0].contains("(100000 bytes)"), "{}", p[0]);
    }
}

// SPDX-License-Identifier: Apache-2.0
//! The package instance: one Skyhook resource and one package key of its SCR. It
//! owns at most one mount unit and one receipt. The resource id
//! `<skyhook-name>-<uid>-<generation>` changes with every generation, so the
//! generation (a trailing `-<digits>`) is dropped: retries, config changes and
//! upgrades of the same entry keep finding their receipt and their unit. The version
//! takes no part either.

use skyhook_core::error::excerpt;
use skyhook_core::{Error, Result, Step};

/// The longest stable resource accepted: with `_`, the package key (at most 63
/// bytes) and the store's own file names, a receipt directory name stays within
/// one 255-byte file name.
pub const MAX_SCOPE: usize = 190;

/// One package instance on the node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instance {
    /// The Skyhook resource without its generation (`local-data-bind-0f3c…`).
    pub scope: String,
    /// The package's key in the SCR (`bind-mount`, `scratch`).
    pub key: String,
}

impl Instance {
    /// The instance of `step`; a resource id unsafe as a file name is bad input.
    pub fn of(step: &Step) -> Result<Instance> {
        Instance::from_parts(&step.ctx.resource.resource, step.ctx.package_name())
    }

    /// The instance of resource id `resource` and package key `key`.
    pub fn from_parts(resource: &str, key: &str) -> Result<Instance> {
        let scope = match resource.rsplit_once('-') {
            Some((stable, generation))
                if !stable.is_empty() && !generation.is_empty() && generation.bytes().all(|b| b.is_ascii_digit()) =>
            {
                stable
            }
            _ => resource,
        };
        let safe = scope.len() <= MAX_SCOPE
            && scope
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
            && scope.as_bytes()[0].is_ascii_alphanumeric()
            && scope.as_bytes()[scope.len() - 1].is_ascii_alphanumeric();
        if !safe {
            return Err(Error::input(format!(
                "SKYHOOK_RESOURCE_ID: the Skyhook resource {} is not a Kubernetes name and uid \
                 (lower-case letters, digits, '-' and '.', at most {MAX_SCOPE} bytes); \
                 the package names its receipt after it",
                excerpt(scope)
            )));
        }
        Ok(Instance {
            scope: scope.to_string(),
            key: key.to_string(),
        })
    }

    /// `<scope>/<key>`: the identity written in the unit's owner marker and the receipt.
    pub fn id(&self) -> String {
        format!("{}/{}", self.scope, self.key)
    }

    /// The receipt's directory name under the package's state: `<scope>_<key>` (neither
    /// part holds `_`, so two instances never share it).
    pub fn store_name(&self) -> String {
        format!("{}_{}", self.scope, self.key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generation_takes_no_part() {
        let a = Instance::from_parts("local-data-bind-0f3c2a-7", "scratch").unwrap();
        let b = Instance::from_parts("local-data-bind-0f3c2a-12", "scratch").unwrap();
        assert_eq!(a, b);
        assert_eq!(a.id(), "local-data-bind-0f3c2a/scratch");
        assert_eq!(a.store_name(), "local-data-bind-0f3c2a_scratch");
    }

    #[test]
    fn a_resource_without_a_generation_is_its_own_scope() {
        assert_eq!(Instance::from_parts("test-scr", "k").unwrap().scope, "test-scr");
    }

    #[test]
    fn unsafe_resources_are_bad_input() {
        for bad in ["a/b-1", "A-1", "-x-1", "x.-", "..", &"a".repeat(191)] {
            let e = Instance::from_parts(bad, "k").unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad}");
            assert!(e.to_string().contains("SKYHOOK_RESOURCE_ID"), "{e}");
        }
    }
}

// SPDX-License-Identifier: Apache-2.0
//! Strict semantic versions (semver 2.0.0), as the operator compares them to choose
//! between upgrade and uninstall: no `v` prefix, no leading zeros, pre-release and
//! build metadata allowed.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

/// A strict semver 2.0.0 version.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Version {
    /// Major version.
    pub major: u64,
    /// Minor version.
    pub minor: u64,
    /// Patch version.
    pub patch: u64,
    /// Pre-release identifiers (`rc.1` → `["rc", "1"]`), empty for a release.
    pub pre: Vec<String>,
    /// Build metadata (ignored in comparisons), empty when absent.
    pub build: String,
}

/// Why a string is not a strict semver version.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{value:?} is not a strict semantic version (MAJOR.MINOR.PATCH[-PRE][+BUILD]): {reason}")]
pub struct SemverError {
    /// The rejected text.
    pub value: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl FromStr for Version {
    type Err = SemverError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = |reason| SemverError {
            value: s.to_string(),
            reason,
        };
        if s.starts_with(['v', 'V']) {
            return Err(err("no 'v' prefix is allowed"));
        }
        let (rest, build) = match s.split_once('+') {
            Some((r, b)) => {
                if !valid_idents(b, false) {
                    return Err(err("build metadata must be dot-separated [0-9A-Za-z-] identifiers"));
                }
                (r, b.to_string())
            }
            None => (s, String::new()),
        };
        let (core, pre) = match rest.split_once('-') {
            Some((c, p)) => {
                if !valid_idents(p, true) {
                    return Err(err(
                        "pre-release must be dot-separated [0-9A-Za-z-] identifiers, numeric ones without leading zeros",
                    ));
                }
                (c, p.split('.').map(str::to_string).collect())
            }
            None => (rest, Vec::new()),
        };
        let parts: Vec<&str> = core.split('.').collect();
        if parts.len() != 3 {
            return Err(err("expected three numbers separated by dots"));
        }
        let mut nums = [0u64; 3];
        for (n, p) in nums.iter_mut().zip(&parts) {
            if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
                return Err(err("MAJOR, MINOR and PATCH must be numbers"));
            }
            if p.len() > 1 && p.starts_with('0') {
                return Err(err("numbers must not have leading zeros"));
            }
            *n = p.parse().map_err(|_| err("number too large"))?;
        }
        Ok(Version {
            major: nums[0],
            minor: nums[1],
            patch: nums[2],
            pre,
            build,
        })
    }
}

fn valid_idents(s: &str, no_leading_zero_numbers: bool) -> bool {
    s.split('.').all(|id| {
        !id.is_empty()
            && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !(no_leading_zero_numbers
                && id.len() > 1
                && id.starts_with('0')
                && id.bytes().all(|b| b.is_ascii_digit()))
    })
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)?;
        if !self.pre.is_empty() {
            write!(f, "-{}", self.pre.join("."))?;
        }
        if !self.build.is_empty() {
            write!(f, "+{}", self.build)?;
        }
        Ok(())
    }
}

impl Ord for Version {
    /// Semver precedence; build metadata breaks ties only so that `Ord` agrees with `Eq`.
    fn cmp(&self, other: &Self) -> Ordering {
        (self.major, self.minor, self.patch)
            .cmp(&(other.major, other.minor, other.patch))
            .then_with(|| cmp_pre(&self.pre, &other.pre))
            .then_with(|| self.build.cmp(&other.build))
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

fn cmp_pre(a: &[String], b: &[String]) -> Ordering {
    match (a.is_empty(), b.is_empty()) {
        (true, true) => return Ordering::Equal,
        (true, false) => return Ordering::Greater,
        (false, true) => return Ordering::Less,
        _ => {}
    }
    for (x, y) in a.iter().zip(b) {
        let ord = match (x.parse::<u64>(), y.parse::<u64>()) {
            (Ok(m), Ok(n)) => m.cmp(&n),
            (Ok(_), Err(_)) => Ordering::Less,
            (Err(_), Ok(_)) => Ordering::Greater,
            (Err(_), Err(_)) => x.cmp(y),
        };
        if ord != Ordering::Equal {
            return ord;
        }
    }
    a.len().cmp(&b.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        s.parse().unwrap()
    }

    #[test]
    fn accepts_strict_versions() {
        for s in [
            "0.0.0",
            "1.2.3",
            "10.20.30",
            "1.0.0-alpha",
            "1.0.0-alpha.1",
            "1.0.0-0.3.7",
            "1.0.0-x.7.z.92",
            "1.0.0+20130313144700",
            "1.0.0-beta+exp.sha.5114f85",
            "1.0.0-rc-1",
        ] {
            assert_eq!(v(s).to_string(), s);
        }
    }

    #[test]
    fn rejects_loose_versions() {
        for s in [
            "v1.2.3",
            "1.2",
            "1.2.3.4",
            "01.2.3",
            "1.02.3",
            "1.2.03",
            "1.2.3-01",
            "1.2.3-",
            "1.2.3+",
            "1.2.3-a..b",
            "",
            "1.2.x",
            " 1.2.3",
            "1.2.3-é",
        ] {
            assert!(s.parse::<Version>().is_err(), "{s} should be rejected");
        }
        let e = "v2.0.0".parse::<Version>().unwrap_err();
        assert!(e.to_string().contains("no 'v' prefix"), "{e}");
    }

    #[test]
    fn orders_by_semver_precedence() {
        let ordered = [
            "1.0.0-alpha",
            "1.0.0-alpha.1",
            "1.0.0-alpha.beta",
            "1.0.0-beta",
            "1.0.0-beta.2",
            "1.0.0-beta.11",
            "1.0.0-rc.1",
            "1.0.0",
            "1.0.1",
            "1.1.0",
            "2.0.0",
            "10.0.0",
        ];
        for w in ordered.windows(2) {
            assert!(v(w[0]) < v(w[1]), "{} < {}", w[0], w[1]);
        }
    }
}

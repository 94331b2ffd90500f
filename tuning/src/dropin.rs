// SPDX-License-Identifier: Apache-2.0
//! configMap keys `service_<unit>.conf`: a systemd drop-in for `<unit>.service`,
//! written verbatim (below a header) to
//! `/etc/systemd/system/<unit>.service.d/zz-skyhook-<name>-tuning.conf`. The unit name and
//! the content are checked first, so systemd never ignores a line of it, and its
//! `Limit*=` settings are understood for the post-interrupt check.

use skyhook_core::error::bad_line;
use skyhook_core::formats::limits::{Resource, Rlim};
use skyhook_core::formats::unitfile::{self, SERVICE_SECTIONS};

use crate::paths::Paths;

/// The prefix of drop-in keys.
pub const PREFIX: &str = "service_";
/// The suffix of drop-in keys.
pub const SUFFIX: &str = ".conf";

/// A `Limit*=` setting of a drop-in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limit {
    /// The resource.
    pub resource: Resource,
    /// The soft limit.
    pub soft: Rlim,
    /// The hard limit.
    pub hard: Rlim,
    /// The line it is set on.
    pub line: usize,
    /// The value as written.
    pub value: String,
}

/// A parsed `service_<unit>.conf` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DropIn {
    /// The configMap key.
    pub key: String,
    /// The unit, without `.service`.
    pub unit: String,
    /// The value as given.
    pub text: String,
    /// The `Limit*` settings in effect (the last assignment of each; an empty one
    /// resets it and is left out).
    pub limits: Vec<Limit>,
}

/// Whether `key` is a drop-in key.
pub fn is_key(key: &str) -> bool {
    key.starts_with(PREFIX)
}

/// The unit of a drop-in key, checked against systemd's unit-name rules.
pub fn unit_of_key(key: &str) -> Result<String, String> {
    let Some(unit) = key.strip_prefix(PREFIX).and_then(|k| k.strip_suffix(SUFFIX)) else {
        return Err(format!(
            "configMap key {key:?}: service drop-in keys are named service_<unit>.conf, e.g. service_containerd.conf"
        ));
    };
    let unit = unit.strip_suffix(".service").unwrap_or(unit);
    unitfile::check_unit_name(&format!("{unit}.service"))
        .map_err(|why| format!("configMap key {key:?} does not name a systemd service: {why}"))?;
    Ok(unit.to_string())
}

/// The `Limit*=` setting of assignment `a` (`None` for an empty value, which
/// resets it), or why it is refused: a name that is not a resource limit, a value
/// systemd would not accept, or a section other than `[Service]` (where systemd
/// ignores it).
fn limit_of(a: &unitfile::Assignment) -> Result<Option<Limit>, String> {
    let Some(resource) = Resource::by_directive(&a.key) else {
        return Err(format!(
            "{} is not a systemd resource limit (LimitNOFILE, LimitMEMLOCK, LimitSTACK, …)",
            a.key
        ));
    };
    let parsed = match a.value.is_empty() {
        true => None,
        false => Some(resource.parse(&a.value).map_err(|why| format!("{}: {why}", a.key))?),
    };
    if a.section != "Service" {
        return Err(format!(
            "{} is in [{}], where systemd ignores it: resource limits belong in [Service]",
            a.key, a.section
        ));
    }
    Ok(parsed.map(|(soft, hard)| Limit {
        resource,
        soft,
        hard,
        line: a.line,
        value: a.value.clone(),
    }))
}

impl DropIn {
    /// Parses the configMap value of `key`; every problem is reported.
    pub fn parse(key: &str, text: &str) -> Result<Self, Vec<String>> {
        let unit = unit_of_key(key).map_err(|e| vec![e])?;
        let file = unitfile::parse(text, &SERVICE_SECTIONS).map_err(|errors| {
            errors
                .into_iter()
                .map(|e| bad_line(key, e.line, &e.text, e.reason))
                .collect::<Vec<_>>()
        })?;
        let lines: Vec<&str> = text.lines().collect();
        let mut problems = Vec::new();
        let mut limits: Vec<Limit> = Vec::new();
        for a in file.assignments.iter().filter(|a| a.key.starts_with("Limit")) {
            match limit_of(a) {
                Ok(limit) => {
                    let resource = Resource::by_directive(&a.key);
                    limits.retain(|l| Some(l.resource) != resource);
                    limits.extend(limit);
                }
                Err(why) => {
                    let line_text = lines.get(a.line - 1).copied().unwrap_or("");
                    problems.push(bad_line(key, a.line, line_text, why));
                }
            }
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        Ok(DropIn {
            key: key.to_string(),
            unit,
            text: text.to_string(),
            limits,
        })
    }

    /// The drop-in's content: the header, then the value verbatim.
    pub fn render(&self, paths: &Paths) -> String {
        paths.verbatim(&self.key, &self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unit_names_come_from_the_key() {
        assert_eq!(unit_of_key("service_containerd.conf").unwrap(), "containerd");
        assert_eq!(
            unit_of_key("service_nvidia_fabricmanager.conf").unwrap(),
            "nvidia_fabricmanager"
        );
        assert_eq!(unit_of_key("service_getty@tty1.conf").unwrap(), "getty@tty1");
        assert_eq!(unit_of_key("service_kubelet.service.conf").unwrap(), "kubelet");
        for bad in [
            "service_.conf",
            "service_../x.conf",
            "service_a b.conf",
            "service_x.cfg",
            "service_..conf",
        ] {
            assert!(unit_of_key(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_unit_name_longer_than_systemd_allows_is_refused() {
        let key = format!("service_{}.conf", "u".repeat(300));
        let e = unit_of_key(&key).unwrap_err();
        assert!(e.contains("does not name a systemd service"), "{e}");
        assert!(e.contains("308 bytes long; systemd allows 255"), "{e}");
    }

    #[test]
    fn understands_limits_with_the_last_one_winning() {
        let d = DropIn::parse(
            "service_containerd.conf",
            "[Service]\nLimitNOFILE=1024\nLimitMEMLOCK=infinity\nLimitNOFILE=1024:1048576\nLimitCORE=1\nLimitCORE=\n",
        )
        .unwrap();
        let got: Vec<(&str, Rlim, Rlim, usize)> = d
            .limits
            .iter()
            .map(|l| (l.resource.directive, l.soft, l.hard, l.line))
            .collect();
        assert_eq!(
            got,
            [
                ("LimitMEMLOCK", None, None, 3),
                ("LimitNOFILE", Some(1024), Some(1048576), 4)
            ]
        );
    }

    #[test]
    fn reports_bad_limits_and_syntax() {
        let e = DropIn::parse("service_x.conf", "[Service]\nLimitNOFILE=lots\nLimitFOO=1\n").unwrap_err();
        assert_eq!(e.len(), 2);
        assert!(e[0].contains("line 2") && e[0].contains("\"lots\""), "{}", e[0]);
        assert!(e[1].contains("LimitFOO is not"), "{}", e[1]);
        let e = DropIn::parse("service_x.conf", "LimitNOFILE=1\n").unwrap_err();
        assert!(e[0].contains("before any [Section]"), "{}", e[0]);
    }

    #[test]
    fn limits_outside_service_are_refused_and_their_values_checked() {
        let e = DropIn::parse(
            "service_x.conf",
            "[Unit]\nLimitNOFILE=lots\nLimitCORE=0\n[Install]\nLimitMEMLOCK=1\n[X-Mine]\nLimitBOGUS=1\n[Service]\nLimitNOFILE=8\n",
        )
        .unwrap_err();
        assert_eq!(e.len(), 4, "{e:#?}");
        assert!(
            e[0].starts_with("configMap key \"service_x.conf\" line 2 (\"LimitNOFILE=lots\"): LimitNOFILE: "),
            "the value is checked first: {}",
            e[0]
        );
        assert!(
            e[1].contains("line 3 (\"LimitCORE=0\"): LimitCORE is in [Unit], where systemd ignores it"),
            "{}",
            e[1]
        );
        assert!(e[2].contains("line 5") && e[2].contains("in [Install]"), "{}", e[2]);
        assert!(
            e[3].contains("line 7") && e[3].contains("LimitBOGUS is not"),
            "{}",
            e[3]
        );
    }
}

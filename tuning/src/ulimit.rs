// SPDX-License-Identifier: Apache-2.0
//! configMap key `ulimit.conf`: user limits, `item=value` per line, written to a
//! limits.d(5) file with the soft and the hard limit both set (the bash package set
//! only the hard one, so the default soft limit stayed in force). pam_limits reads
//! it when a session opens (see [`crate::pam`]).

use std::collections::BTreeMap;

use skyhook_core::error::bad_line;

use crate::paths::Paths;

/// The configMap key.
pub const KEY: &str = "ulimit.conf";

/// How an item's value is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A non-negative number or `unlimited`/`infinity`.
    Limit,
    /// A priority -20…19 (nice, priority).
    Priority,
    /// 0 or 1.
    Flag,
}

/// The items of limits.conf(5) with the kind of value each takes.
const ITEMS: [(&str, Kind); 19] = [
    ("core", Kind::Limit),
    ("data", Kind::Limit),
    ("fsize", Kind::Limit),
    ("memlock", Kind::Limit),
    ("nofile", Kind::Limit),
    ("rss", Kind::Limit),
    ("stack", Kind::Limit),
    ("cpu", Kind::Limit),
    ("nproc", Kind::Limit),
    ("as", Kind::Limit),
    ("maxlogins", Kind::Limit),
    ("maxsyslogins", Kind::Limit),
    ("locks", Kind::Limit),
    ("sigpending", Kind::Limit),
    ("msgqueue", Kind::Limit),
    ("rtprio", Kind::Limit),
    ("nice", Kind::Priority),
    ("priority", Kind::Priority),
    ("nonewprivs", Kind::Flag),
];

/// A parsed `ulimit.conf` value: item → value, in item order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UlimitConf {
    /// Each item's value (the last one given).
    pub items: BTreeMap<String, String>,
}

fn check_value(kind: Kind, value: &str) -> Result<(), String> {
    match kind {
        Kind::Limit if matches!(value, "unlimited" | "infinity") => Ok(()),
        Kind::Limit => value.parse::<u64>().map(|_| ()).map_err(|_| {
            format!(
                "{value:?} is not a whole number, unlimited or infinity \
                 (sizes are in KiB for memlock, stack, fsize, core, data, rss and as; no suffixes)"
            )
        }),
        Kind::Priority => match value.parse::<i64>() {
            Ok(n) if (-20..=19).contains(&n) => Ok(()),
            _ => Err(format!("{value:?} is not a priority from -20 to 19")),
        },
        Kind::Flag => match value {
            "0" | "1" => Ok(()),
            _ => Err(format!("{value:?} is not 0 or 1")),
        },
    }
}

impl UlimitConf {
    /// Parses `item=value` lines (spaces around `=`, `#` comments and blank lines
    /// allowed); every bad line is reported.
    pub fn parse(text: &str) -> Result<Self, Vec<String>> {
        let mut items = BTreeMap::new();
        let mut lines_of: BTreeMap<String, usize> = BTreeMap::new();
        let mut problems = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut bad = |reason: String| problems.push(bad_line(KEY, i + 1, raw, reason));
            let Some((item, value)) = line.split_once('=') else {
                bad("not an `item=value` line, e.g. nofile=1048576".into());
                continue;
            };
            let (item, value) = (item.trim(), value.trim());
            if item.is_empty() {
                bad("there is no item before '='".into());
                continue;
            }
            if value.is_empty() {
                bad(format!("there is no value after '=' for {item}"));
                continue;
            }
            if let Some(c) = line.chars().find(|c| c.is_control()) {
                bad(format!("the line contains the control character {c:?}"));
                continue;
            }
            let Some((_, kind)) = ITEMS.iter().find(|(name, _)| *name == item) else {
                bad(format!(
                    "{item:?} is not a limits.conf item; known items: {}",
                    ITEMS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
                ));
                continue;
            };
            if let Err(reason) = check_value(*kind, value) {
                bad(format!("{item}: {reason}"));
                continue;
            }
            if let Some(prev) = lines_of.insert(item.to_string(), i + 1) {
                log::warn!(
                    "{KEY}: {item} is set on line {prev} and again on line {}; the last one counts",
                    i + 1
                );
            }
            items.insert(item.to_string(), value.to_string());
        }
        if problems.is_empty() {
            Ok(UlimitConf { items })
        } else {
            Err(problems)
        }
    }

    /// The limits.d file: the header, then a soft and a hard line per item for every
    /// user (`*`, which limits.conf(5) does not apply to root), and the same for root
    /// when the paths say so ([`Paths::ulimit_root`]).
    pub fn render(&self, paths: &Paths) -> String {
        let mut out = paths.comment(KEY);
        let domains: &[&str] = if paths.ulimit_root { &["*", "root"] } else { &["*"] };
        for domain in domains {
            for (item, value) in &self.items {
                out.push_str(&format!(
                    "{domain}\tsoft\t{item}\t{value}\n{domain}\thard\t{item}\t{value}\n"
                ));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_soft_and_hard_limits() {
        let c = UlimitConf::parse("# limits\nmemlock = unlimited\nnofile=1048576\nnice=-5\n").unwrap();
        let r = c.render(&Paths::named("t"));
        assert!(
            r.ends_with(
                "*\tsoft\tmemlock\tunlimited\n*\thard\tmemlock\tunlimited\n*\tsoft\tnice\t-5\n*\thard\tnice\t-5\n\
                 *\tsoft\tnofile\t1048576\n*\thard\tnofile\t1048576\n"
            ),
            "{r}"
        );
    }

    #[test]
    fn a_preset_gives_the_limits_to_root_too() {
        let c = UlimitConf::parse("memlock=unlimited\n").unwrap();
        let paths = Paths {
            ulimit_root: true,
            ..Paths::named("t")
        };
        assert!(
            c.render(&paths).ends_with(
                "*\tsoft\tmemlock\tunlimited\n*\thard\tmemlock\tunlimited\n\
                 root\tsoft\tmemlock\tunlimited\nroot\thard\tmemlock\tunlimited\n"
            ),
            "{}",
            c.render(&paths)
        );
        assert!(
            !c.render(&Paths::named("t")).contains("root"),
            "only a preset names root"
        );
    }

    #[test]
    fn reports_every_bad_line() {
        let e = UlimitConf::parse("=5\nnofile=\nbogus=1\nstack=64M\nnice=30\nnofile\nnproc=1\0\n").unwrap_err();
        assert_eq!(e.len(), 7, "{e:#?}");
        assert!(e[2].contains("\"bogus\" is not a limits.conf item"), "{}", e[2]);
        assert!(
            e[3].contains("line 4 (\"stack=64M\")") && e[3].contains("KiB"),
            "{}",
            e[3]
        );
        assert!(e[6].contains("control character"), "{}", e[6]);
    }
}

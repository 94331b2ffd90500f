// SPDX-License-Identifier: Apache-2.0
//! configMap key `sysctl.conf`: kernel parameters in sysctl.d(5) syntax, written to
//! a drop-in that the boot applies last and set live through `/proc/sys`.

use std::collections::HashMap;

use skyhook_core::error::bad_line;
use skyhook_core::formats::sysctl::{self, Assignment, Key};

use crate::paths::Paths;

/// The configMap key.
pub const KEY: &str = "sysctl.conf";

/// One assignment with the text of its line (for messages).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The parsed assignment.
    pub a: Assignment,
    /// The line as written in the configMap.
    pub text: String,
}

/// A parsed `sysctl.conf` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SysctlConf {
    /// The value as given (written verbatim below the header).
    pub text: String,
    /// The assignments in effect: one per key, the last one given, in file order.
    pub entries: Vec<Entry>,
}

impl SysctlConf {
    /// Parses the configMap value; every bad line is reported.
    pub fn parse(text: &str) -> std::result::Result<Self, Vec<String>> {
        let (all, errors) = sysctl::parse(text);
        if !errors.is_empty() {
            return Err(errors
                .into_iter()
                .map(|e| bad_line(KEY, e.line, &e.text, e.reason))
                .collect());
        }
        let lines: Vec<&str> = text.lines().collect();
        let mut last: HashMap<&Key, usize> = HashMap::with_capacity(all.len());
        for (i, a) in all.iter().enumerate() {
            if let Some(prev) = last.insert(&a.key, i) {
                log::warn!(
                    "{KEY}: {} is set on line {} and again on line {}; the last one counts, as for sysctl",
                    a.key,
                    all[prev].line,
                    a.line
                );
            }
        }
        let entries = all
            .iter()
            .enumerate()
            .filter(|(i, a)| last.get(&a.key) == Some(i))
            .map(|(_, a)| Entry {
                text: lines.get(a.line - 1).copied().unwrap_or("").to_string(),
                a: a.clone(),
            })
            .collect();
        Ok(SysctlConf {
            text: text.to_string(),
            entries,
        })
    }

    /// The drop-in's content: the header, then the value verbatim.
    pub fn render(&self, paths: &Paths) -> String {
        paths.verbatim(KEY, &self.text)
    }

    /// The wanted value of each key.
    pub fn wanted(&self) -> HashMap<Key, String> {
        self.entries
            .iter()
            .map(|e| (e.a.key.clone(), e.a.value.clone()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_assignment_of_a_key_and_the_text_verbatim() {
        let c = SysctlConf::parse("# tuned\nvm.swappiness = 10\nvm/swappiness=20\nkernel.pid_max = 4194304").unwrap();
        let got: Vec<(String, &str, usize)> = c
            .entries
            .iter()
            .map(|e| (e.a.key.dotted(), e.a.value.as_str(), e.a.line))
            .collect();
        assert_eq!(
            got,
            [
                ("vm.swappiness".into(), "20", 3),
                ("kernel.pid_max".into(), "4194304", 4)
            ]
        );
        assert_eq!(c.entries[0].text, "vm/swappiness=20");
        let r = c.render(&Paths::named("t"));
        assert!(r.starts_with("# Managed by the Skyhook package tuning (t)"), "{r}");
        assert!(
            r.ends_with("# tuned\nvm.swappiness = 10\nvm/swappiness=20\nkernel.pid_max = 4194304\n"),
            "{r}"
        );
    }

    #[test]
    fn bad_lines_name_key_line_and_text() {
        let e = SysctlConf::parse("a.b=1\n=5\nx.y=\n").unwrap_err();
        assert_eq!(e.len(), 2);
        assert!(e[0].contains("\"sysctl.conf\" line 2 (\"=5\")"), "{}", e[0]);
        assert!(e[1].contains("line 3 (\"x.y=\")"), "{}", e[1]);
    }
}

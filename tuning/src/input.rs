// SPDX-License-Identifier: Apache-2.0
//! The whole configMap, parsed and validated before anything on the node changes:
//! every problem of every key is collected, and any problem is bad input (exit 2).

use std::collections::BTreeMap;
use std::path::PathBuf;

use skyhook_core::error::bad_line;
use skyhook_core::{ConfigMaps, Error, Result};

use crate::dropin::{self, DropIn};
use crate::grub;
use crate::modprobe::{self, ModprobeConf};
use crate::paths::{FileKind, Paths};
use crate::sysctl::{self, SysctlConf};
use crate::ulimit::{self, UlimitConf};

/// Validates the configMap offline, with the parsers config uses (the entry point
/// of `skyhook-pkg lint`): `Err(Error::Input)` lists every problem.
pub fn validate(cm: &ConfigMaps) -> Result<()> {
    Desired::parse(cm).map(|_| ())
}

/// What the configMap asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Desired {
    /// `sysctl.conf`.
    pub sysctl: Option<SysctlConf>,
    /// `ulimit.conf`.
    pub ulimit: Option<UlimitConf>,
    /// `service_<unit>.conf`, by unit.
    pub dropins: BTreeMap<String, DropIn>,
    /// `grub.conf`: the kernel arguments, in order (empty when absent).
    pub grub: Vec<String>,
    /// `modprobe.conf`.
    pub modprobe: Option<ModprobeConf>,
}

impl Desired {
    /// Parses every key; all problems are reported at once.
    pub fn parse(cm: &ConfigMaps) -> Result<Self> {
        let mut desired = Desired::default();
        let mut problems = Vec::new();
        for key in cm.keys() {
            let text = match cm.text(key) {
                Ok(t) => t.unwrap_or_default(),
                Err(Error::Input(p)) => {
                    problems.extend(p);
                    continue;
                }
                Err(e) => return Err(e),
            };
            let known = matches!(key, sysctl::KEY | ulimit::KEY | grub::KEY | modprobe::KEY) || dropin::is_key(key);
            let carriage_returns = carriage_returns(key, text);
            if known && !carriage_returns.is_empty() {
                problems.extend(carriage_returns);
                continue;
            }
            let result = match key {
                sysctl::KEY => SysctlConf::parse(text).map(|c| desired.sysctl = Some(c)),
                ulimit::KEY => UlimitConf::parse(text).map(|c| desired.ulimit = Some(c)),
                grub::KEY => grub::parse(text).map(|a| desired.grub = a),
                modprobe::KEY => ModprobeConf::parse(text).map(|c| desired.modprobe = Some(c)),
                k if dropin::is_key(k) => DropIn::parse(k, text).and_then(|d| match desired.dropins.get(&d.unit) {
                    Some(other) => Err(vec![format!(
                        "configMap keys {:?} and {k:?} both name the unit {}.service; keep one",
                        other.key, d.unit
                    )]),
                    None => {
                        desired.dropins.insert(d.unit.clone(), d);
                        Ok(())
                    }
                }),
                other => Err(vec![format!(
                    "configMap key {other:?} is not one this package reads; the keys are sysctl.conf, \
                     ulimit.conf, grub.conf, modprobe.conf and service_<unit>.conf (fix the name or remove the key)"
                )]),
            };
            if let Err(p) = result {
                problems.extend(p);
            }
        }
        if problems.is_empty() {
            Ok(desired)
        } else {
            Err(Error::Input(problems))
        }
    }

    /// The files the configMap wants, by path, each with its kind, content and the
    /// key it comes from (the GRUB drop-in is the [`boot::owned`](skyhook_core::boot::owned)
    /// module's).
    pub fn files(&self, paths: &Paths) -> BTreeMap<PathBuf, WantedFile> {
        let mut files = BTreeMap::new();
        let mut add = |path: PathBuf, kind: FileKind, key: &str, content: String| {
            let key = key.to_string();
            files.insert(path, WantedFile { kind, key, content });
        };
        if let Some(c) = &self.sysctl {
            add(paths.sysctl(), FileKind::Sysctl, sysctl::KEY, c.render(paths));
        }
        if let Some(u) = &self.ulimit {
            add(paths.ulimit(), FileKind::Limits, ulimit::KEY, u.render(paths));
        }
        for d in self.dropins.values() {
            let kind = FileKind::DropIn(d.unit.clone());
            add(paths.dropin(&d.unit), kind, &d.key, d.render(paths));
        }
        if let Some(m) = &self.modprobe {
            add(paths.modprobe(), FileKind::Modprobe, modprobe::KEY, m.render(paths));
        }
        files
    }
}

/// Every line of `key`'s value holding a carriage return (CR, CRLF line endings):
/// refused in every key this package reads, because a drop-in written with CR
/// bytes breaks systemd's parsing, a CR on GRUB's kernel line is a hostile byte,
/// and a CR in a sysctl or limits line ends up in the value.
fn carriage_returns(key: &str, text: &str) -> Vec<String> {
    text.split('\n')
        .enumerate()
        .filter(|(_, line)| line.contains('\r'))
        .map(|(i, line)| {
            bad_line(
                key,
                i + 1,
                line,
                "the line contains a carriage return (CR, as in Windows CRLF line endings); \
                 save the value with LF line endings (e.g. with dos2unix) and apply it again",
            )
        })
        .collect()
}

/// A file the configMap asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WantedFile {
    /// What it is.
    pub kind: FileKind,
    /// The configMap key it comes from.
    pub key: String,
    /// Its whole content.
    pub content: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collects_the_problems_of_every_key() {
        let cm = ConfigMaps::from_entries([
            ("sysctl.conf", "=1\n"),
            ("ulimit.conf", "bogus=1\n"),
            ("grub.conf", "a\"b\n"),
            ("service_x.conf", "[Service]\nLimitNOFILE=x\n"),
            ("sysctl.cfg", "vm.swappiness=1\n"),
            ("modprobe.conf", "blacklist\n"),
        ]);
        let Err(Error::Input(p)) = Desired::parse(&cm) else {
            panic!()
        };
        assert_eq!(p.len(), 6, "{p:#?}");
        assert!(
            p.iter()
                .any(|m| m.contains("\"sysctl.cfg\" is not one this package reads"))
        );
    }

    #[test]
    fn carriage_returns_are_refused_naming_key_line_and_fix() {
        for key in [
            "sysctl.conf",
            "ulimit.conf",
            "grub.conf",
            "service_containerd.conf",
            "modprobe.conf",
        ] {
            let cm = ConfigMaps::from_entries([(key, "# fine\nfirst\r\nsecond\rthird\n")]);
            let Err(Error::Input(p)) = Desired::parse(&cm) else {
                panic!("{key}: CR accepted")
            };
            assert_eq!(p.len(), 2, "{key}: one problem per line holding a CR: {p:#?}");
            assert!(
                p[0].starts_with(&format!("configMap key {key:?} line 2 (\"first\\r\")")),
                "{}",
                p[0]
            );
            assert!(p[1].contains("line 3 (\"second\\rthird\")"), "{}", p[1]);
            assert!(p[0].contains("save the value with LF line endings"), "{}", p[0]);
        }
    }

    #[test]
    fn one_drop_in_per_unit() {
        let cm = ConfigMaps::from_entries([
            ("service_kubelet.conf", "[Service]\n"),
            ("service_kubelet.service.conf", "[Service]\n"),
        ]);
        let e = Desired::parse(&cm).unwrap_err().to_string();
        assert!(e.contains("both name the unit kubelet.service"), "{e}");
    }
}

// SPDX-License-Identifier: Apache-2.0
//! grubby, the RHEL-like way to change kernel arguments: its `--info=ALL` output
//! parsed once into entries with their kernels, `--update-kernel` calls, and the
//! arguments a package replaced, kept per entry so that each entry (a rescue or a
//! second kernel included) gets its own back.
//!
//! grubby's `--update-kernel=ALL` also rewrites `GRUB_CMDLINE_LINUX` in
//! `/etc/default/grub` (the arguments future kernels get); `--update-kernel=<kernel>`
//! does not. A restore therefore goes through `ALL` when it can, then fixes the
//! entries whose originals differ, so that future kernels do not inherit ours.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::cmdline::{key_of, split_cmdline};
use super::defaults::{self, CMDLINE_VAR, Edit, GRUB_DEFAULTS};
use crate::error::Result;
use crate::host::Host;
use crate::host::command::Cmd;

/// One boot entry as grubby reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrubbyEntry {
    /// The kernel image (`/boot/vmlinuz-5.14.0-427.el9.x86_64`), as `--update-kernel` takes it.
    pub kernel: String,
    /// The entry's kernel arguments.
    pub args: Vec<String>,
}

/// Parses `grubby --info=ALL` output into entries (an entry without `kernel=` is skipped).
pub fn parse_info(text: &str) -> Vec<GrubbyEntry> {
    let mut entries = Vec::new();
    let mut kernel: Option<String> = None;
    let mut args: Vec<String> = Vec::new();
    let mut flush = |kernel: &mut Option<String>, args: &mut Vec<String>| {
        if let Some(k) = kernel.take() {
            entries.push(GrubbyEntry {
                kernel: k,
                args: std::mem::take(args),
            });
        }
        args.clear();
    };
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with("index=") {
            flush(&mut kernel, &mut args);
        } else if let Some(k) = line.strip_prefix("kernel=") {
            kernel = Some(k.trim_matches('"').to_string());
        } else if let Some(a) = line.strip_prefix("args=") {
            args = split_cmdline(a.trim_matches('"'));
        }
    }
    flush(&mut kernel, &mut args);
    entries
}

/// Every boot entry grubby knows, with its kernel (`grubby --info=ALL`).
pub fn entries(host: &Host) -> Result<Vec<GrubbyEntry>> {
    let out = host.run_ok(&Cmd::new("grubby").arg("--info=ALL"))?;
    Ok(parse_info(&out.stdout))
}

/// `grubby --update-kernel=<kernel> --args=<add> --remove-args=<remove>`: `kernel` is
/// a kernel path or `ALL`. grubby replaces an argument whose key is already present,
/// and removes `key=value` only where the value matches (`key` alone: any value).
pub fn update(host: &Host, kernel: &str, add: &[String], remove: &[String]) -> Result<()> {
    let mut cmd = Cmd::new("grubby").arg(format!("--update-kernel={kernel}"));
    if !add.is_empty() {
        cmd = cmd.arg(format!("--args={}", add.join(" ")));
    }
    if !remove.is_empty() {
        cmd = cmd.arg(format!("--remove-args={}", remove.join(" ")));
    }
    log::info!("updating boot entries: {}", cmd.display());
    host.run_ok(&cmd)?;
    Ok(())
}

/// The arguments a package's own replaced, per boot entry and in the GRUB defaults:
/// recorded before the package's arguments go on, put back when they come off.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Originals {
    /// Kernel path → the entry's arguments with the keys of ours, before.
    pub kernels: BTreeMap<String, Vec<String>>,
    /// The same for `GRUB_CMDLINE_LINUX` (what future kernels get); `None` when not
    /// known (no `/etc/default/grub`, or a record from before it was kept): the most
    /// common of the entries' originals then stands in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub defaults: Option<Vec<String>>,
}

impl Originals {
    /// Records, for every entry and the GRUB defaults, the arguments whose key is one
    /// of `keys`.
    pub fn capture(host: &Host, keys: &[&str]) -> Result<Self> {
        let pick =
            |args: &[String]| -> Vec<String> { args.iter().filter(|a| keys.contains(&key_of(a))).cloned().collect() };
        let kernels = entries(host)?.into_iter().map(|e| (e.kernel, pick(&e.args))).collect();
        let defaults = match host.read(GRUB_DEFAULTS)? {
            Some(text) => defaults::assignment_args(&text, CMDLINE_VAR).map(|a| pick(&a)),
            None => None,
        };
        Ok(Originals { kernels, defaults })
    }

    /// What the GRUB defaults held (or, unknown, what most entries held).
    fn defaults_or_most_common(&self) -> Vec<String> {
        if let Some(d) = &self.defaults {
            return d.clone();
        }
        let mut counts: BTreeMap<&Vec<String>, usize> = BTreeMap::new();
        for v in self.kernels.values() {
            *counts.entry(v).or_default() += 1;
        }
        counts
            .into_iter()
            .max_by_key(|(_, n)| *n)
            .map(|(v, _)| v.clone())
            .unwrap_or_default()
    }

    /// Takes `ours` off every entry carrying them and puts back each entry's
    /// originals (an entry added since, which inherited ours, gets the defaults'),
    /// and the GRUB defaults' too. When every entry carries ours and had what the
    /// defaults had, one `--update-kernel=ALL` does it all (GRUB_CMDLINE_LINUX
    /// included); otherwise each entry is restored on its own (in place: grubby
    /// replaces an argument of the same key where it stands) and GRUB_CMDLINE_LINUX
    /// is edited back, which a per-kernel grubby call does not do. Every step finds
    /// what is left from the entries themselves, so a killed restore finishes when
    /// run again. Returns whether anything changed.
    pub fn restore(&self, host: &Host, ours: &[String]) -> Result<bool> {
        let all = entries(host)?;
        let carries = |e: &GrubbyEntry| ours.iter().all(|o| e.args.contains(o));
        let defaults = self.defaults_or_most_common();
        let original_of = |kernel: &str| self.kernels.get(kernel).cloned().unwrap_or_else(|| defaults.clone());
        if !all.is_empty() && all.iter().all(|e| carries(e) && original_of(&e.kernel) == defaults) {
            update(host, "ALL", &defaults, &not_replaced(ours, &defaults))?;
            return Ok(true);
        }
        let mut changed = false;
        for e in all.iter().filter(|e| carries(e)) {
            let original = original_of(&e.kernel);
            update(host, &e.kernel, &original, &not_replaced(ours, &original))?;
            changed = true;
        }
        changed |= restore_defaults(host, ours, &defaults)?;
        if !changed {
            log::info!("no boot entry carries {} any more", ours.join(" "));
        }
        Ok(changed)
    }
}

/// The arguments of `current` that putting `originals` on (grubby replaces an
/// argument of the same key in place) does not replace: they must be removed.
fn not_replaced(current: &[String], originals: &[String]) -> Vec<String> {
    current
        .iter()
        .filter(|c| !originals.iter().any(|o| key_of(o) == key_of(c)))
        .cloned()
        .collect()
}

/// Puts `originals` back in place of `ours` in `GRUB_CMDLINE_LINUX` when it still
/// carries ours (grubby updated it with `ALL`, and a per-entry restore does not):
/// edited byte for byte, the rest of the file kept.
fn restore_defaults(host: &Host, ours: &[String], originals: &[String]) -> Result<bool> {
    let Some(text) = host.read(GRUB_DEFAULTS)? else {
        return Ok(false);
    };
    let Some(args) = defaults::assignment_args(&text, CMDLINE_VAR) else {
        return Ok(false);
    };
    if !ours.iter().all(|o| args.contains(o)) {
        return Ok(false);
    }
    let mut new = text;
    for o in ours {
        let back = originals.iter().find(|b| key_of(b) == key_of(o)).map(String::as_str);
        new = defaults::edit_assignment(&new, CMDLINE_VAR, &Edit::Replace { old: o, new: back });
    }
    log::info!("putting {CMDLINE_VAR} in {GRUB_DEFAULTS} back (grubby only updates it for ALL kernels)");
    let mode = host.mode(GRUB_DEFAULTS)?.unwrap_or(0o644);
    Ok(host.write(GRUB_DEFAULTS, &new, mode)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_entry_with_its_kernel() {
        let out = "index=0\nkernel=\"/boot/vmlinuz-5.14\"\nargs=\"ro crashkernel=1G-4G:192M rhgb quiet\"\nroot=\"UUID=x\"\n\
                   index=1\nkernel=\"/boot/vmlinuz-0-rescue\"\nargs=\"ro\"\nindex=2\nargs=\"no kernel\"\n";
        let e = parse_info(out);
        assert_eq!(e.len(), 2, "the entry without kernel= is skipped");
        assert_eq!(e[0].kernel, "/boot/vmlinuz-5.14");
        assert_eq!(e[0].args, ["ro", "crashkernel=1G-4G:192M", "rhgb", "quiet"]);
        assert_eq!(e[1].args, ["ro"]);
    }

    #[test]
    fn most_common_original_stands_in_for_unknown_defaults() {
        let o = Originals {
            kernels: [
                ("/a".to_string(), vec!["crashkernel=auto".to_string()]),
                ("/b".to_string(), vec!["crashkernel=auto".to_string()]),
                ("/r".to_string(), vec![]),
            ]
            .into(),
            defaults: None,
        };
        assert_eq!(o.defaults_or_most_common(), ["crashkernel=auto"]);
        let known = Originals {
            defaults: Some(vec![]),
            ..o
        };
        assert!(known.defaults_or_most_common().is_empty());
    }
}

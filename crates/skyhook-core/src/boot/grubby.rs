// SPDX-License-Identifier: Apache-2.0
//! grubby, the RHEL-like way to change kernel arguments: its `--info=ALL` output
//! parsed once into entries with their kernels, `--update-kernel` calls, and the
//! arguments a package replaced, kept per entry so that each entry (a rescue or a
//! second kernel included) gets its own back.
//!
//! Two grubby programs exist ([`Flavor`]): grubby-bls, the shell script of RHEL 8+,
//! Fedora and Amazon Linux 2023, and the C grubby of RHEL 7 and Amazon Linux 2. On
//! grubby-bls hosts a package's `--update-kernel=ALL` is recorded around the call
//! ([`super::bls`]: every entry's `options` line, `/etc/default/grub` and
//! `/etc/kernel/cmdline`) and undone from that record without grubby. Elsewhere
//! (C grubby, records of earlier versions) a restore goes through grubby: `ALL`
//! when it can (grubby-bls's `ALL` also rewrites `GRUB_CMDLINE_LINUX`), then the
//! entries whose originals differ.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::bls::BlsEdits;
use super::cmdline::{key_of, split_cmdline};
use super::defaults::{self, CMDLINE_VAR, Edit, GRUB_DEFAULTS};
use crate::error::Result;
use crate::host::Host;
use crate::host::command::Cmd;

/// Which grubby the node has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// grubby-bls (grubby 8.40 of RHEL 8+, Fedora 30+, Amazon Linux 2023): a shell
    /// script over `/boot/loader/entries`. `--args` removes every argument of each
    /// key given and appends the new ones at the end, so arguments repeating a key
    /// (`crashkernel=1G,high crashkernel=128M,low`) are all kept (since grubby
    /// commit 4b1d63c, 2018); `ALL` also rewrites `/etc/default/grub` and
    /// `/etc/kernel/cmdline`.
    Bls,
    /// The C grubby (RHEL 7, Amazon Linux 2), an ELF program editing `grub.cfg`:
    /// `--args` replaces the first argument of the same key where it stands (a
    /// second argument of that key in the same call is appended, but a later call
    /// with one replaces only the first); it edits no other file.
    Legacy,
}

impl Flavor {
    /// The grubby on `host`: grubby-bls when the program is a script that names
    /// the BLS entries directory, else the C grubby. Read, not run.
    pub fn detect(host: &Host) -> Flavor {
        let program = host
            .which("grubby")
            .and_then(|p| std::fs::read(p).ok())
            .unwrap_or_default();
        let names_bls = program
            .windows(super::config::BLS_ENTRIES.len())
            .any(|w| w == super::config::BLS_ENTRIES.as_bytes());
        if program.starts_with(b"#!") && names_bls {
            Flavor::Bls
        } else {
            Flavor::Legacy
        }
    }

    /// Whether one boot entry can keep several arguments of one key across
    /// updates (a `,high` reservation with its `,low` one): grubby-bls replaces
    /// every argument of the key at once; the C grubby replaces only the first.
    pub fn keeps_repeated_keys(self) -> bool {
        self == Flavor::Bls
    }
}

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
    /// On grubby-bls hosts: every entry's `options` line and the files `ALL`
    /// rewrites, before and after (empty: C grubby, or a record of an earlier version).
    #[serde(skip_serializing_if = "BlsEdits::is_empty")]
    pub bls: BlsEdits,
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
        let bls = match Flavor::detect(host) {
            Flavor::Bls => BlsEdits::capture(host)?,
            Flavor::Legacy => BlsEdits::default(),
        };
        Ok(Originals { kernels, defaults, bls })
    }

    /// `grubby --update-kernel=ALL --args=<add>`, then what it left recorded (on
    /// grubby-bls hosts): the record must be saved after this call.
    pub fn update_all(&mut self, host: &Host, add: &[String]) -> Result<()> {
        update(host, "ALL", add, &[])?;
        if Flavor::detect(host) == Flavor::Bls {
            escape_quoted_in_defaults(host, add)?;
        }
        if !self.bls.is_empty() {
            self.bls.note_written(host)?;
        }
        Ok(())
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
    /// originals. With a grubby-bls record, from that record alone
    /// ([`BlsEdits::restore`]); otherwise through grubby: each entry's
    /// originals (an entry added since, which inherited ours, gets the defaults'),
    /// and the GRUB defaults' too. When every entry carries ours and had what the
    /// defaults had, one `--update-kernel=ALL` does it all (GRUB_CMDLINE_LINUX
    /// included); otherwise each entry is restored on its own (in place: grubby
    /// replaces an argument of the same key where it stands) and GRUB_CMDLINE_LINUX
    /// is edited back, which a per-kernel grubby call does not do. Every step finds
    /// what is left from the entries themselves, so a killed restore finishes when
    /// run again. Returns whether anything changed.
    pub fn restore(&self, host: &Host, ours: &[String]) -> Result<bool> {
        if !self.bls.is_empty() {
            let changed = self.bls.restore(host, ours, &self.defaults_or_most_common())?;
            if !changed {
                log::info!("no boot entry carries {} any more", ours.join(" "));
            }
            return Ok(changed);
        }
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

/// grubby-bls (8.40-69, `update_bls_fragment`) rewrites every line of
/// `/etc/default/grub` starting with `GRUB_CMDLINE_LINUX` as
/// `GRUB_CMDLINE_LINUX="<arguments>"` with the arguments as given, so a quoted value
/// of ours (`pci="config_acs=…;…"`) would close the shell's quotes there and its `;`
/// end the assignment when grub2-mkconfig sources the file. On those lines ours are
/// written escaped ([`defaults::in_double_quotes`]), which sourcing reads as the
/// argument; its `options` lines and `/etc/kernel/cmdline`, not read by a shell,
/// carry the argument as given. Idempotent.
fn escape_quoted_in_defaults(host: &Host, add: &[String]) -> Result<()> {
    let quoted: Vec<&String> = add.iter().filter(|a| a.contains('"')).collect();
    if quoted.is_empty() {
        return Ok(());
    }
    let Some(text) = host.read(GRUB_DEFAULTS)? else {
        return Ok(());
    };
    let mut out = Vec::with_capacity(text.len() + 16);
    for line in text.split_inclusive(|b| *b == b'\n') {
        if !line.starts_with(CMDLINE_VAR.as_bytes()) {
            out.extend_from_slice(line);
            continue;
        }
        let mut line = line.to_vec();
        for a in &quoted {
            let escaped = defaults::in_double_quotes(a);
            line = replace_bytes(
                &replace_bytes(&line, escaped.as_bytes(), a.as_bytes()),
                a.as_bytes(),
                escaped.as_bytes(),
            );
        }
        out.extend_from_slice(&line);
    }
    if out != text {
        log::info!(
            "escaping the quotes of {} in {GRUB_DEFAULTS}'s {CMDLINE_VAR} for the shell that sources it",
            quoted.iter().map(|a| a.as_str()).collect::<Vec<_>>().join(" ")
        );
        let mode = host.mode(GRUB_DEFAULTS)?.unwrap_or(0o644);
        host.write(GRUB_DEFAULTS, &out, mode)?;
    }
    Ok(())
}

/// `text` with every `from` replaced by `to`.
fn replace_bytes(text: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        if !from.is_empty() && text[i..].starts_with(from) {
            out.extend_from_slice(to);
            i += from.len();
        } else {
            out.push(text[i]);
            i += 1;
        }
    }
    out
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
            bls: BlsEdits::default(),
        };
        assert_eq!(o.defaults_or_most_common(), ["crashkernel=auto"]);
        let known = Originals {
            defaults: Some(vec![]),
            ..o
        };
        assert!(known.defaults_or_most_common().is_empty());
    }
}

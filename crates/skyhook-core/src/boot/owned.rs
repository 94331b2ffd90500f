// SPDX-License-Identifier: Apache-2.0
//! "A package owns these arguments": a package's own kernel arguments on each kind
//! of boot configuration ([`BootConfig`]), set, replaced and removed, with a record
//! that is saved before every change (with `pending` set until the boot
//! configuration was regenerated), so that a run killed at any point ends, when run
//! again, where an uninterrupted run ends.
//!
//! - Drop-ins (Debian-like): one file appending to the distribution's
//!   `GRUB_CMDLINE_LINUX_DEFAULT`, then `update-grub`.
//! - grubby (RHEL-like): `grubby --update-kernel=ALL --args=…`. grubby replaces an
//!   argument of the same name, so each entry's arguments of those names (and the
//!   GRUB defaults') are recorded first and each entry gets its own back; with
//!   grubby-bls, every entry's `options` line, `/etc/default/grub` and
//!   `/etc/kernel/cmdline` too, before and after, given back exactly ([`super::bls`]).
//! - GRUB defaults (RHEL-like without grubby): our arguments appended to
//!   `GRUB_CMDLINE_LINUX` in `/etc/default/grub` (byte for byte; the original kept),
//!   then `grub2-mkconfig`; `/etc/kernel/cmdline`, which grub2-mkconfig
//!   `--update-bls-cmdline` rewrites, is recorded too and given back before the
//!   regeneration that follows taking ours off (it then leaves the newer file).

use std::path::Path;

use serde::{Deserialize, Deserializer, Serialize};

use super::bls::{FileEdit, KERNEL_CMDLINE, restore_file};
use super::cmdline::key_of;
use super::config::{BootConfig, Method};
use super::defaults::{self, CMDLINE_VAR, Edit, GRUB_DEFAULTS, render_drop_in};
use super::edited::{Content, undo_edit};
use super::grubby::Originals;
use crate::error::Result;
use crate::host::Host;
use crate::records::original::SavedFile;

/// What a package's kernel arguments did to the boot configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ArgsRecord {
    /// The arguments, in order, as the package asked for them.
    pub args: Vec<String>,
    /// How they were applied (`None`: nothing applied yet).
    #[serde(deserialize_with = "method_or_none")]
    pub method: Option<Method>,
    /// With grubby: the arguments of the same names that were there before, per
    /// entry, put back when ours are removed.
    #[serde(deserialize_with = "originals_or_legacy_list")]
    pub replaced: Originals,
    /// With the GRUB defaults: the file before and what the package wrote.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub defaults: Option<DefaultsEdit>,
    /// The change was started but the boot configuration may not be regenerated yet.
    pub pending: bool,
}

/// `/etc/default/grub` before the package appended its arguments, and after.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DefaultsEdit {
    /// The file before.
    pub file: SavedFile,
    /// What the package wrote.
    pub written: Content,
    /// `/etc/kernel/cmdline` (what kernels installed later get) before, and what
    /// grub2-mkconfig `--update-bls-cmdline` wrote into it from our defaults: given
    /// back explicitly, not left to the next regeneration (`None`: a record of an
    /// earlier version).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_cmdline: Option<FileEdit>,
}

/// Reads `method`, where records of earlier versions wrote `""` for "none".
fn method_or_none<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<Method>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Any {
        Method(Method),
        Other(serde::de::IgnoredAny),
    }
    Ok(match Any::deserialize(d)? {
        Any::Method(m) => Some(m),
        Any::Other(_) => None,
    })
}

/// Reads `replaced`, where records of earlier versions kept one list for all entries.
fn originals_or_legacy_list<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Originals, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Any {
        PerEntry(Originals),
        Legacy(Vec<String>),
    }
    Ok(match Any::deserialize(d)? {
        Any::PerEntry(o) => o,
        Any::Legacy(list) => Originals {
            defaults: Some(list),
            ..Originals::default()
        },
    })
}

impl ArgsRecord {
    /// Whether the package has nothing in the boot configuration and nothing pending.
    pub fn is_empty(&self) -> bool {
        self.args.is_empty() && !self.pending
    }
}

/// A package's kernel arguments on one host: the boot configuration, and the
/// Debian-like drop-in file (with its comment) that holds them there.
#[derive(Debug, Clone, Copy)]
pub struct OwnArgs<'a> {
    /// The host.
    pub host: &'a Host,
    /// Its boot configuration.
    pub boot: &'a BootConfig,
    /// The package's drop-in (`/etc/default/grub.d/<name>.cfg`), used with drop-ins.
    pub drop_in: &'a Path,
    /// The drop-in's comment lines (without `# `).
    pub header: &'a str,
}

impl OwnArgs<'_> {
    /// Whether the boot configuration already carries `wanted` as `record` says, with
    /// nothing to run: for drop-ins the file must also hold exactly what it should.
    pub fn is_current(&self, record: &ArgsRecord, wanted: &[String]) -> Result<bool> {
        if record.pending || record.args != wanted {
            return Ok(false);
        }
        if wanted.is_empty() {
            return Ok(!self.host.exists(self.drop_in));
        }
        if record.method != Some(self.boot.method()) {
            return Ok(false);
        }
        Ok(match self.boot {
            BootConfig::GrubDropIns { .. } => {
                self.host
                    .has_content(self.drop_in, render_drop_in(self.header, wanted).as_bytes(), 0o644)?
            }
            _ => true,
        })
    }

    /// Makes the boot configuration carry `wanted` (nothing when empty) as the
    /// package's arguments, undoing what `record` says was done before, and
    /// regenerates the boot configuration. `save` stores the record: it is called
    /// before every change, so the record on disk always covers what the node holds.
    /// Returns whether anything ran. Arguments must have passed
    /// [`check_arg`](super::cmdline::check_arg).
    pub fn apply(
        &self,
        record: &mut ArgsRecord,
        wanted: &[String],
        save: &mut dyn FnMut(&ArgsRecord) -> Result<()>,
    ) -> Result<bool> {
        if self.is_current(record, wanted)? {
            return Ok(false);
        }
        let method = self.boot.method();
        let resume = record.pending && record.args == wanted && record.method == Some(method);
        if !resume {
            record.pending = true;
            save(record)?;
            if !record.args.is_empty() {
                self.undo(record)?;
                *record = ArgsRecord {
                    pending: true,
                    ..ArgsRecord::default()
                };
                save(record)?;
            }
            self.record_intent(record, wanted)?;
            save(record)?;
        }
        self.make(record)?;
        self.boot.regenerate(self.host)?;
        if let Some(DefaultsEdit {
            kernel_cmdline: Some(k),
            ..
        }) = &mut record.defaults
        {
            k.written = self.host.read(KERNEL_CMDLINE)?.map(|b| Content::new(&b));
        }
        if wanted.is_empty() {
            *record = ArgsRecord::default();
        }
        record.pending = false;
        save(record)?;
        Ok(true)
    }

    /// Fills `record` with `wanted` and what putting them on will replace.
    fn record_intent(&self, record: &mut ArgsRecord, wanted: &[String]) -> Result<()> {
        record.args = wanted.to_vec();
        record.method = Some(self.boot.method());
        if wanted.is_empty() {
            return Ok(());
        }
        match self.boot {
            BootConfig::Grubby => {
                let keys: Vec<&str> = wanted.iter().map(|w| key_of(w)).collect();
                record.replaced = Originals::capture(self.host, &keys)?;
            }
            BootConfig::GrubDefault { .. } => {
                let file = SavedFile::capture(self.host, GRUB_DEFAULTS)?;
                let before = file.content()?.unwrap_or_default();
                let written = defaults::edit_assignment(&before, CMDLINE_VAR, &Edit::Append { tokens: wanted });
                record.defaults = Some(DefaultsEdit {
                    file,
                    written: Content::new(&written),
                    kernel_cmdline: Some(FileEdit {
                        file: SavedFile::capture(self.host, KERNEL_CMDLINE)?,
                        written: None,
                    }),
                });
            }
            BootConfig::GrubDropIns { .. } => {}
        }
        Ok(())
    }

    /// Puts `record`'s arguments on the boot configuration (idempotent); with
    /// grubby-bls, what grubby left is noted in `record` (saved by the caller).
    fn make(&self, record: &mut ArgsRecord) -> Result<()> {
        let (host, wanted) = (self.host, &record.args);
        match self.boot {
            BootConfig::GrubDropIns { .. } if wanted.is_empty() => {
                host.remove(self.drop_in)?;
            }
            BootConfig::GrubDropIns { .. } => {
                host.write(self.drop_in, render_drop_in(self.header, wanted).as_bytes(), 0o644)?;
            }
            BootConfig::Grubby if !wanted.is_empty() => {
                let wanted = wanted.clone();
                record.replaced.update_all(host, &wanted)?;
            }
            BootConfig::Grubby => {}
            BootConfig::GrubDefault { .. } => {
                if let Some(edit) = &record.defaults
                    && edit.file.is_current(host)?
                {
                    let mode = edit.file.mode.unwrap_or(0o644);
                    host.write(GRUB_DEFAULTS, &edit.written.bytes(), mode)?;
                }
            }
        }
        Ok(())
    }

    /// Takes `record`'s arguments off again, putting back what they replaced.
    fn undo(&self, record: &ArgsRecord) -> Result<()> {
        let host = self.host;
        match record.method {
            Some(Method::Grubby) => {
                record.replaced.restore(host, &record.args)?;
            }
            Some(Method::GrubDefault) => {
                if let Some(edit) = &record.defaults {
                    undo_edit(host, GRUB_DEFAULTS, &edit.file, &edit.written, |current| {
                        let mut text = current.to_vec();
                        for a in &record.args {
                            text = defaults::edit_assignment(&text, CMDLINE_VAR, &Edit::Replace { old: a, new: None });
                        }
                        Some(text)
                    })?;
                    // Written after the defaults, so that the regeneration that follows
                    // (which rewrites it only when older than them) leaves it.
                    if let Some(k) = &edit.kernel_cmdline {
                        restore_file(host, k, &record.args, &[])?;
                    }
                }
            }
            Some(Method::DropIn) if self.boot.method() != Method::DropIn => {
                host.remove(self.drop_in)?;
            }
            Some(Method::DropIn) | None => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::command::{Output, RecordingRunner};
    use std::sync::Arc;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    fn host() -> (tempfile::TempDir, Host, Arc<RecordingRunner>) {
        let d = tempfile::tempdir().unwrap();
        let runner = Arc::new(RecordingRunner::new(|c| {
            Ok(match (c.program.as_str(), c.args.first().map(String::as_str)) {
                ("which", Some("update-grub")) => Output::exited(0, "/usr/sbin/update-grub"),
                ("which", _) => Output::exited(1, ""),
                ("grubby", Some("--info=ALL")) => Output::exited(
                    0,
                    "index=0\nkernel=\"/boot/vmlinuz-a\"\nargs=\"ro quiet hugepages=2\"\n\
                     index=1\nkernel=\"/boot/vmlinuz-rescue\"\nargs=\"ro\"\n",
                ),
                _ => Output::exited(0, ""),
            })
        }));
        let h = Host::new(d.path(), runner.clone());
        (d, h, runner)
    }

    const DROP_IN: &str = "/etc/default/grub.d/999-t-tuning.cfg";

    fn own<'a>(h: &'a Host, boot: &'a BootConfig) -> OwnArgs<'a> {
        OwnArgs {
            host: h,
            boot,
            drop_in: Path::new(DROP_IN),
            header: "ours",
        }
    }

    fn calls(runner: &RecordingRunner) -> Vec<String> {
        runner.calls().into_iter().filter(|c| !c.starts_with("which")).collect()
    }

    #[test]
    fn drop_ins_are_written_replaced_and_removed_with_one_regeneration_each() {
        let (_d, h, runner) = host();
        let boot = BootConfig::GrubDropIns {
            output: "/boot/grub/grub.cfg".into(),
        };
        let own = own(&h, &boot);
        let want = s(&["hugepagesz=1G", "hugepages=4"]);
        let mut rec = ArgsRecord::default();
        let mut saved = Vec::new();
        assert!(
            own.apply(&mut rec, &want, &mut |r| {
                saved.push(r.clone());
                Ok(())
            })
            .unwrap()
        );
        assert_eq!(rec.args, want);
        assert!(
            saved.first().is_some_and(|r| r.pending),
            "recorded as pending before the change"
        );
        assert!(!rec.pending);
        let text = String::from_utf8(h.read(DROP_IN).unwrap().unwrap()).unwrap();
        assert!(text.contains("${GRUB_CMDLINE_LINUX_DEFAULT} hugepagesz=1G hugepages=4"));
        assert!(own.is_current(&rec, &want).unwrap());
        assert!(!own.apply(&mut rec, &want, &mut |_| Ok(())).unwrap());
        assert!(own.apply(&mut rec, &[], &mut |_| Ok(())).unwrap());
        assert!(rec.is_empty() && !h.exists(DROP_IN));
        assert_eq!(calls(&runner), ["update-grub", "update-grub"]);
    }

    #[test]
    fn grubby_records_each_entrys_originals_before_the_change() {
        let (_d, h, runner) = host();
        let own = own(&h, &BootConfig::Grubby);
        let want = s(&["hugepages=4", "iommu=pt"]);
        let mut rec = ArgsRecord::default();
        let mut saved = Vec::new();
        own.apply(&mut rec, &want, &mut |r| {
            saved.push(r.clone());
            Ok(())
        })
        .unwrap();
        assert_eq!(rec.replaced.kernels["/boot/vmlinuz-a"], s(&["hugepages=2"]));
        assert!(rec.replaced.kernels["/boot/vmlinuz-rescue"].is_empty());
        let before_change = saved.iter().rev().find(|r| r.pending).unwrap();
        assert_eq!(
            before_change.replaced, rec.replaced,
            "originals saved before grubby ran"
        );
        assert!(
            !own.apply(&mut rec, &want, &mut |_| Ok(())).unwrap(),
            "no command when current"
        );
        assert_eq!(
            calls(&runner),
            [
                "grubby --info=ALL",
                "grubby --update-kernel=ALL '--args=hugepages=4 iommu=pt'"
            ]
        );
    }

    #[test]
    fn a_run_killed_after_the_change_resumes_without_recapturing() {
        let (_d, h, runner) = host();
        let own = own(&h, &BootConfig::Grubby);
        let want = s(&["iommu=pt"]);
        let mut rec = ArgsRecord {
            args: want.clone(),
            method: Some(Method::Grubby),
            pending: true,
            ..ArgsRecord::default()
        };
        own.apply(&mut rec, &want, &mut |_| Ok(())).unwrap();
        assert!(!rec.pending);
        assert_eq!(calls(&runner), ["grubby --update-kernel=ALL --args=iommu=pt"]);
    }

    #[test]
    fn grub_defaults_get_our_arguments_appended_and_the_file_back_exactly() {
        let (_d, h, runner) = host();
        let boot = BootConfig::GrubDefault {
            output: "/boot/grub2/grub.cfg".into(),
        };
        let before = b"GRUB_TIMEOUT=5\r\n# caf\xe9\nGRUB_CMDLINE_LINUX=\"crashkernel=auto rhgb quiet\"";
        h.write(GRUB_DEFAULTS, before, 0o644).unwrap();
        let own = own(&h, &boot);
        let mut rec = ArgsRecord::default();
        own.apply(&mut rec, &s(&["quiet", "iommu=pt"]), &mut |_| Ok(()))
            .unwrap();
        assert_eq!(
            h.read(GRUB_DEFAULTS).unwrap().unwrap(),
            b"GRUB_TIMEOUT=5\r\n# caf\xe9\nGRUB_CMDLINE_LINUX=\"crashkernel=auto rhgb quiet quiet iommu=pt\""
        );
        let json = serde_json::to_string(&rec).unwrap();
        assert_eq!(
            serde_json::from_str::<ArgsRecord>(&json).unwrap(),
            rec,
            "the record round-trips"
        );
        own.apply(&mut rec, &[], &mut |_| Ok(())).unwrap();
        assert_eq!(
            h.read(GRUB_DEFAULTS).unwrap().unwrap(),
            before,
            "the distribution's quiet stays"
        );
        assert_eq!(
            calls(&runner),
            [
                "grub2-mkconfig -o /boot/grub2/grub.cfg",
                "grub2-mkconfig -o /boot/grub2/grub.cfg"
            ]
        );
    }

    #[test]
    fn reads_records_of_earlier_versions() {
        let old: ArgsRecord =
            serde_json::from_str(r#"{"args":["hugepages=4"],"method":"grubby","replaced":["hugepages=2"]}"#).unwrap();
        assert_eq!(old.method, Some(Method::Grubby));
        assert_eq!(old.replaced.defaults, Some(s(&["hugepages=2"])));
        let empty: ArgsRecord = serde_json::from_str(r#"{"args":[],"method":"","replaced":[]}"#).unwrap();
        assert_eq!(empty.method, None);
    }
}

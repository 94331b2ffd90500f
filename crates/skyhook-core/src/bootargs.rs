// SPDX-License-Identifier: Apache-2.0
//! A package's own kernel arguments in the boot configuration ([`BootConfig`]):
//! setting, replacing and removing them on each kind of host, and remembering what
//! was done so that it can be undone exactly.
//!
//! - Drop-ins (Debian-like): one file appending to the distribution's
//!   `GRUB_CMDLINE_LINUX_DEFAULT`, then `update-grub`.
//! - grubby (RHEL-like): `grubby --update-kernel=ALL --args=…`. grubby replaces an
//!   argument of the same name, so the arguments of those names that were there
//!   before are recorded and put back when ours are removed.
//! - GRUB defaults (RHEL-like without grubby): our arguments appended to
//!   `GRUB_CMDLINE_LINUX` in `/etc/default/grub`, then `grub2-mkconfig`.
//!
//! Built on [`crate::kernel_args`] (argument keys, grubby, GRUB defaults parsing).

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::bootloader::{BootConfig, render_drop_in};
use crate::error::{Error, Result};
use crate::host::Host;
use crate::kernel_args::{GRUB_DEFAULTS, assignment_args, grubby_update, key_of};

/// What a package's kernel arguments did to the boot configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ArgsRecord {
    /// The arguments, in order, as the package asked for them.
    pub args: Vec<String>,
    /// How they were applied: `drop-in`, `grubby` or `grub-default`.
    pub method: String,
    /// With grubby: the arguments of the same names that were there before, put
    /// back when ours are removed.
    pub replaced: Vec<String>,
}

impl ArgsRecord {
    /// Whether the package has no arguments in the boot configuration.
    pub fn is_empty(&self) -> bool {
        self.args.is_empty()
    }
}

fn method(boot: &BootConfig) -> &'static str {
    match boot {
        BootConfig::GrubDropIns { .. } => "drop-in",
        BootConfig::Grubby => "grubby",
        BootConfig::GrubDefault { .. } => "grub-default",
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
        let (host, boot) = (self.host, self.boot);
        if record.args != wanted {
            return Ok(false);
        }
        if wanted.is_empty() {
            return Ok(!host.exists(self.drop_in));
        }
        if record.method != method(boot) {
            return Ok(false);
        }
        Ok(match boot {
            BootConfig::GrubDropIns { .. } => {
                host.has_content(self.drop_in, render_drop_in(self.header, wanted).as_bytes(), 0o644)?
            }
            _ => true,
        })
    }

    /// Makes the boot configuration carry `wanted` (nothing when empty) as the
    /// package's arguments, undoing what `record` says was done before, and
    /// regenerates the boot configuration when it changed. Returns the new record and
    /// whether anything changed. Arguments must have passed
    /// [`crate::bootloader::check_arg`].
    pub fn apply(&self, record: &ArgsRecord, wanted: &[String]) -> Result<(ArgsRecord, bool)> {
        let (host, boot) = (self.host, self.boot);
        if self.is_current(record, wanted)? {
            return Ok((record.clone(), false));
        }
        let mut changed = false;
        let new = match boot {
            BootConfig::GrubDropIns { .. } => {
                changed |= if wanted.is_empty() {
                    host.remove(self.drop_in)?
                } else {
                    host.write(self.drop_in, render_drop_in(self.header, wanted).as_bytes(), 0o644)?
                };
                ArgsRecord {
                    args: wanted.to_vec(),
                    method: method(boot).into(),
                    replaced: Vec::new(),
                }
            }
            BootConfig::Grubby => {
                if record.method == "grubby" && !record.args.is_empty() {
                    grubby_update(host, "ALL", &[], &record.args)?;
                    if !record.replaced.is_empty() {
                        grubby_update(host, "ALL", &record.replaced, &[])?;
                    }
                    changed = true;
                }
                let mut replaced = Vec::new();
                if !wanted.is_empty() {
                    let before = boot.entries(host)?.into_iter().next().unwrap_or_default();
                    replaced = before
                        .into_iter()
                        .filter(|a| wanted.iter().any(|w| key_of(w) == key_of(a)))
                        .collect();
                    grubby_update(host, "ALL", wanted, &[])?;
                    changed = true;
                }
                ArgsRecord {
                    args: wanted.to_vec(),
                    method: method(boot).into(),
                    replaced,
                }
            }
            BootConfig::GrubDefault { .. } => {
                let previous: &[String] = if record.method == "grub-default" {
                    &record.args
                } else {
                    &[]
                };
                changed |= edit_grub_default(host, previous, wanted)?;
                ArgsRecord {
                    args: wanted.to_vec(),
                    method: method(boot).into(),
                    replaced: Vec::new(),
                }
            }
        };
        if changed {
            boot.regenerate(host)?;
        }
        Ok((new, changed))
    }
}

/// Removes `previous` (one occurrence each, the last) from `GRUB_CMDLINE_LINUX` in
/// the GRUB defaults and appends `wanted`; returns whether the file changed.
fn edit_grub_default(host: &Host, previous: &[String], wanted: &[String]) -> Result<bool> {
    const VAR: &str = "GRUB_CMDLINE_LINUX";
    let text = host.read_to_string(GRUB_DEFAULTS)?.unwrap_or_default();
    let mut args = assignment_args(&text, VAR).unwrap_or_default();
    for p in previous {
        if let Some(i) = args.iter().rposition(|a| a == p) {
            args.remove(i);
        }
    }
    args.extend(wanted.iter().cloned());
    if args.iter().any(|a| a.contains('"')) {
        return Err(Error::action(format!(
            "{VAR} in {GRUB_DEFAULTS} holds a quoted argument; edit it by hand or install grubby"
        )));
    }
    let line = format!("{VAR}=\"{}\"", args.join(" "));
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    match lines
        .iter()
        .rposition(|l| l.trim_start().starts_with(&format!("{VAR}=")))
    {
        Some(i) => lines[i] = line,
        None => lines.push(line),
    }
    let mut new = lines.join("\n");
    new.push('\n');
    if new == text {
        return Ok(false);
    }
    let mode = host.mode(GRUB_DEFAULTS)?.unwrap_or(0o644);
    Ok(host.write(GRUB_DEFAULTS, new.as_bytes(), mode)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::{Output, RecordingRunner};
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
                ("grubby", Some("--info=ALL")) => Output::exited(0, "index=0\nargs=\"ro quiet hugepages=2\"\n"),
                _ => Output::exited(0, ""),
            })
        }));
        let h = Host::new(d.path(), runner.clone());
        (d, h, runner)
    }

    const DROP_IN: &str = "/etc/default/grub.d/999-t-tuning.cfg";

    #[test]
    fn drop_ins_are_written_replaced_and_removed_with_one_regeneration_each() {
        let (_d, h, runner) = host();
        let boot = BootConfig::GrubDropIns {
            output: "/boot/grub/grub.cfg".into(),
        };
        let p = Path::new(DROP_IN);
        let own = OwnArgs {
            host: &h,
            boot: &boot,
            drop_in: p,
            header: "ours",
        };
        let want = s(&["hugepagesz=1G", "hugepages=4"]);
        let (rec, changed) = own.apply(&ArgsRecord::default(), &want).unwrap();
        assert!(changed);
        assert_eq!(rec.args, want);
        assert!(
            h.read_to_string(p)
                .unwrap()
                .unwrap()
                .contains("${GRUB_CMDLINE_LINUX_DEFAULT} hugepagesz=1G hugepages=4")
        );
        assert!(own.is_current(&rec, &want).unwrap());
        let (rec2, changed) = own.apply(&rec, &want).unwrap();
        assert!(!changed);
        assert_eq!(rec2, rec);
        let (rec3, changed) = own.apply(&rec, &[]).unwrap();
        assert!(changed && rec3.is_empty() && !h.exists(p));
        let calls: Vec<String> = runner.calls().into_iter().filter(|c| !c.starts_with("which")).collect();
        assert_eq!(calls, ["update-grub", "update-grub"]);
    }

    #[test]
    fn grubby_puts_back_the_arguments_ours_replaced() {
        let (_d, h, runner) = host();
        let own = OwnArgs {
            host: &h,
            boot: &BootConfig::Grubby,
            drop_in: Path::new(DROP_IN),
            header: "ours",
        };
        let want = s(&["hugepages=4", "iommu=pt"]);
        let (rec, changed) = own.apply(&ArgsRecord::default(), &want).unwrap();
        assert!(changed);
        assert_eq!(rec.replaced, s(&["hugepages=2"]));
        assert!(!own.apply(&rec, &want).unwrap().1, "no command when current");
        let (rec, _) = own.apply(&rec, &[]).unwrap();
        assert!(rec.is_empty());
        let calls: Vec<String> = runner.calls().into_iter().filter(|c| !c.starts_with("which")).collect();
        assert_eq!(
            calls,
            [
                "grubby --info=ALL",
                "grubby --update-kernel=ALL '--args=hugepages=4 iommu=pt'",
                "grubby --update-kernel=ALL '--remove-args=hugepages=4 iommu=pt'",
                "grubby --update-kernel=ALL --args=hugepages=2",
            ]
        );
    }

    #[test]
    fn grub_defaults_get_our_arguments_appended_and_taken_back() {
        let (_d, h, runner) = host();
        let boot = BootConfig::GrubDefault {
            output: "/boot/grub2/grub.cfg".into(),
        };
        let before = "GRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX=\"crashkernel=auto rhgb quiet\"\n";
        h.write(GRUB_DEFAULTS, before.as_bytes(), 0o644).unwrap();
        let own = OwnArgs {
            host: &h,
            boot: &boot,
            drop_in: Path::new(DROP_IN),
            header: "ours",
        };
        let (rec, _) = own.apply(&ArgsRecord::default(), &s(&["quiet", "iommu=pt"])).unwrap();
        assert_eq!(
            h.read_to_string(GRUB_DEFAULTS).unwrap().unwrap(),
            "GRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX=\"crashkernel=auto rhgb quiet quiet iommu=pt\"\n"
        );
        own.apply(&rec, &[]).unwrap();
        assert_eq!(
            h.read_to_string(GRUB_DEFAULTS).unwrap().unwrap(),
            before,
            "the distribution's quiet stays"
        );
        let calls: Vec<String> = runner.calls().into_iter().filter(|c| !c.starts_with("which")).collect();
        assert_eq!(
            calls,
            [
                "grub2-mkconfig -o /boot/grub2/grub.cfg",
                "grub2-mkconfig -o /boot/grub2/grub.cfg"
            ]
        );
    }
}

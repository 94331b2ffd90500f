// SPDX-License-Identifier: Apache-2.0
//! The running kernel's modules, for the modules a `modprobe.conf` value keeps out
//! ([`crate::modprobe`]): which are loaded and whether something uses them
//! (`/proc/modules`), which are built into the kernel (`modules.builtin` of the
//! running release), unloading one that nothing uses (config), and the checks.
//!
//! `/proc/modules` has one line per module: name, size, reference count, the
//! modules that use it (`a,b,`; `-` for none; `[permanent],` when it has no exit
//! function and can never be unloaded), state (`Live`, `Loading`, `Unloading`) and
//! address; a kernel built without module unloading prints `-` for both the count
//! and the users. A module is **in use** when rmmod itself would refuse it (kmod's
//! rmmod checks the same two facts): its reference count is not 0 (an open socket
//! of `algif_aead` holds one, a module built on it holds one), or another module
//! uses it; also when it is permanent, not `Live`, or its usage cannot be read.
//! config unloads only modules not in use, and says why it left any other loaded.

use std::collections::BTreeSet;

use skyhook_core::host::command::Cmd;
use skyhook_core::{Checklist, Host, Result};

use crate::modprobe::{self, ModprobeConf};

/// Where the kernel lists its loaded modules.
pub const PROC_MODULES: &str = "/proc/modules";

/// One line of `/proc/modules`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loaded {
    /// The module's name.
    pub name: String,
    /// Its reference count; `None` when the kernel does not count (no module
    /// unloading) or the field does not read as a count.
    pub refcount: Option<u32>,
    /// The modules that use it.
    pub users: Vec<String>,
    /// It has no exit function: it can never be unloaded.
    pub permanent: bool,
    /// Its state (`Live`, `Loading`, `Unloading`); empty when the line has none.
    pub state: String,
}

impl Loaded {
    /// Reads one line of `/proc/modules`; `None` for a line without a name.
    pub fn parse(line: &str) -> Option<Loaded> {
        let mut fields = line.split_whitespace();
        let name = fields.next()?.to_string();
        let _size = fields.next();
        let refcount = fields.next().and_then(|r| r.parse().ok());
        let users_field = fields.next().unwrap_or("-");
        let users: Vec<String> = users_field
            .split(',')
            .filter(|u| !u.is_empty() && *u != "-" && *u != "[permanent]")
            .map(str::to_string)
            .collect();
        Some(Loaded {
            name,
            refcount,
            users,
            permanent: users_field.contains("[permanent]"),
            state: fields.next().unwrap_or_default().to_string(),
        })
    }

    /// Why rmmod would refuse it now (see the module documentation), `None` when
    /// nothing uses it.
    pub fn in_use(&self) -> Option<String> {
        if self.permanent {
            return Some("permanent: it has no exit function, the kernel can never unload it".into());
        }
        if self.state != "Live" {
            return Some(format!("its state is {:?}, not Live", self.state));
        }
        match self.refcount {
            None => Some("its reference count cannot be read (a kernel without module unloading)".into()),
            Some(n) if n > 0 || !self.users.is_empty() => Some(if self.users.is_empty() {
                format!("in use: reference count {n}")
            } else {
                format!("in use: reference count {n}, used by {}", self.users.join(", "))
            }),
            Some(_) => None,
        }
    }
}

/// The loaded modules; none when `/proc/modules` does not exist (a kernel without
/// module support loads none).
pub fn loaded(host: &Host) -> Result<Vec<Loaded>> {
    let text = host.read(PROC_MODULES)?.unwrap_or_default();
    Ok(String::from_utf8_lossy(&text)
        .lines()
        .filter_map(Loaded::parse)
        .collect())
}

/// The running kernel's release (`uname -r`), when the kernel tells it.
fn release(host: &Host) -> Result<Option<String>> {
    Ok(host
        .read_to_string("/proc/sys/kernel/osrelease")?
        .map(|r| r.trim().to_string())
        .filter(|r| !r.is_empty() && !r.contains('/') && r != ".." && r != "."))
}

/// The modules of `names` built into the running kernel (listed in
/// `/lib/modules/<release>/modules.builtin` as `kernel/…/<name>.ko`): a modprobe.d
/// line cannot keep them out. With the release or the file unknown, none.
pub fn built_in<'a>(host: &Host, names: &BTreeSet<&'a str>) -> Result<(Option<String>, BTreeSet<&'a str>)> {
    let Some(release) = release(host)? else {
        return Ok((None, BTreeSet::new()));
    };
    let file = format!("/lib/modules/{release}/modules.builtin");
    let text = host.read(&file)?.unwrap_or_default();
    let builtin: BTreeSet<String> = String::from_utf8_lossy(&text)
        .lines()
        .filter_map(|l| {
            l.trim()
                .rsplit('/')
                .next()?
                .strip_suffix(".ko")
                .map(modprobe::normalize)
        })
        .collect();
    let found = names.iter().copied().filter(|n| builtin.contains(*n)).collect();
    Ok((Some(release), found))
}

/// The loaded module named `name` (as the kernel names it).
pub fn find<'a>(loaded: &'a [Loaded], name: &str) -> Option<&'a Loaded> {
    loaded.iter().find(|l| modprobe::normalize(&l.name) == name)
}

/// What config did about a module kept out that was loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unload {
    /// rmmod removed it.
    Removed,
    /// It stays loaded, for this reason.
    Stays(String),
}

/// What config did about the modules a value keeps out that were loaded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Unloads {
    /// Unloaded by rmmod.
    pub removed: Vec<String>,
    /// Left loaded, each with why.
    pub left: Vec<(String, String)>,
}

/// Unloads, with rmmod through the host, each module `conf` keeps out that is
/// loaded and not in use. rmmod is best effort: its failure (or its absence) is
/// logged and leaves the module loaded, which the checks then report; the
/// modprobe.d file keeps it out from the next boot on.
pub fn unload_kept_out(host: &Host, conf: &ModprobeConf) -> Result<Unloads> {
    let loaded = loaded(host)?;
    let mut done = Unloads::default();
    for line in conf.kept_out() {
        let Some(module) = find(&loaded, &line.module) else {
            continue;
        };
        match unload(host, module) {
            Unload::Removed => done.removed.push(line.module.clone()),
            Unload::Stays(why) => {
                log::warn!(
                    "{}: {} is loaded and stays loaded ({why}): not unloaded; configMap key {} line {} keeps it \
                     out from the next boot on",
                    modprobe::KEY,
                    line.module,
                    modprobe::KEY,
                    line.line
                );
                done.left.push((line.module.clone(), why));
            }
        }
    }
    Ok(done)
}

/// Unloads `module` with rmmod unless it is in use.
fn unload(host: &Host, module: &Loaded) -> Unload {
    if let Some(why) = module.in_use() {
        return Unload::Stays(why);
    }
    let cmd = Cmd::new("rmmod").arg(module.name.as_str());
    match host.run(&cmd) {
        Ok(out) if out.success() => {
            log::info!("{}: unloaded {} (rmmod: nothing used it)", modprobe::KEY, module.name);
            Unload::Removed
        }
        Ok(out) => Unload::Stays(format!(
            "rmmod {} failed ({}): {}",
            module.name,
            out.status_text(),
            out.diagnostics().trim()
        )),
        Err(e) => Unload::Stays(format!("rmmod could not be run: {e}")),
    }
}

/// post-interrupt-check: no module `conf` keeps out is loaded or built into the
/// running kernel.
pub fn check_kept_out(host: &Host, conf: &ModprobeConf, c: &mut Checklist) -> Result<()> {
    let loaded = loaded(host)?;
    let names: BTreeSet<&str> = conf.kept_out().iter().map(|l| l.module.as_str()).collect();
    let (release, builtin) = built_in(host, &names)?;
    for line in conf.kept_out() {
        if builtin.contains(line.module.as_str()) {
            c.fail(format!(
                "{} is built into the running kernel ({}, modules.builtin): a modprobe.d line cannot keep it out \
                 (configMap key {} line {}); it needs a kernel that has it as a module, or the kernel argument \
                 initcall_blacklist=<its init function>",
                line.module,
                release.as_deref().unwrap_or("?"),
                modprobe::KEY,
                line.line
            ));
            continue;
        }
        match find(&loaded, &line.module) {
            None => c.pass(format_args!("{} is not loaded", line.module)),
            Some(m) => c.fail(format!(
                "{} is loaded ({}) although configMap key {} line {} ({}) keeps it out: reboot the node \
                 (interrupt {{type: reboot}}), or stop what uses it and run config again",
                line.module,
                m.in_use().unwrap_or_else(|| "nothing uses it".into()),
                modprobe::KEY,
                line.line,
                line.text.trim()
            )),
        }
    }
    Ok(())
}

/// config-check: a module kept out that is still loaded is reported as not checked
/// (the file is what config-check proves; post-interrupt-check requires the module gone).
pub fn note_kept_out(host: &Host, conf: &ModprobeConf, c: &mut Checklist) -> Result<()> {
    let loaded = loaded(host)?;
    for line in conf.kept_out() {
        if let Some(m) = find(&loaded, &line.module) {
            c.skip(format!(
                "{} is still loaded ({}): configMap key {} keeps it out from the next boot on; \
                 post-interrupt-check requires it gone",
                line.module,
                m.in_use()
                    .unwrap_or_else(|| "nothing uses it: run config to unload it".into()),
                modprobe::KEY
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_proc_modules_lines_and_says_when_rmmod_would_refuse() {
        let text = "algif_aead 16384 0 - Live 0x0000000000000000\n\
                    af_alg 32768 1 algif_aead, Live 0x0000000000000000\n\
                    nvidia 56803328 2 nvidia_uvm,nvidia_modeset, Live 0x0000000000000000 (POE)\n\
                    crc32c_intel 24576 0 [permanent], Live 0x0000000000000000\n\
                    busy 16384 3 - Live 0x0\n\
                    going 16384 0 - Unloading 0x0\n\
                    nounload 16384 - - Live 0x0\n";
        let all: Vec<Loaded> = text.lines().filter_map(Loaded::parse).collect();
        let why: Vec<(&str, Option<String>)> = all.iter().map(|l| (l.name.as_str(), l.in_use())).collect();
        assert_eq!(why[0], ("algif_aead", None));
        assert_eq!(
            why[1].1.as_deref(),
            Some("in use: reference count 1, used by algif_aead")
        );
        assert_eq!(
            why[2].1.as_deref(),
            Some("in use: reference count 2, used by nvidia_uvm, nvidia_modeset")
        );
        assert!(why[3].1.as_deref().unwrap().starts_with("permanent"));
        assert_eq!(why[4].1.as_deref(), Some("in use: reference count 3"));
        assert!(why[5].1.as_deref().unwrap().contains("\"Unloading\""));
        assert!(why[6].1.as_deref().unwrap().contains("cannot be read"));
        assert_eq!(find(&all, "algif_aead").map(|l| l.refcount), Some(Some(0)));
        assert!(find(&all, "algif").is_none());
    }
}

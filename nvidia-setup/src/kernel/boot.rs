// SPDX-License-Identifier: Apache-2.0
//! The installed kernel as the next boot's default: `GRUB_DEFAULT=saved` in
//! `/etc/default/grub` (added when the file has no such line, where upstream's
//! `sed` silently did nothing), one `update-grub`, and `grub-set-default` with the
//! kernel's own entry read from the generated `grub.cfg` (upstream typed an Ubuntu
//! menu title, which breaks with `GRUB_DISABLE_SUBMENU=y` or another distributor
//! name). The defaults file and the saved entry are recorded before they change and
//! given back at uninstall.

use skyhook_core::boot::BootConfig;
use skyhook_core::boot::defaults::{DROP_IN_DIR, GRUB_DEFAULTS, set_assignment};
use skyhook_core::boot::edited::{Content, undo_edit};
use skyhook_core::boot::menu::{GRUB_CFG, GRUBENV, entry_for_release, env_value, env_vars};
use skyhook_core::host::Host;
use skyhook_core::host::command::Cmd;
use skyhook_core::records::original::SavedFile;
use skyhook_core::{Error, Result, Step};

use crate::record::{BootRecord, Record};

/// The GRUB defaults variable naming the default entry.
const GRUB_DEFAULT: &str = "GRUB_DEFAULT";
/// The tools the boot default needs on a Debian-like node.
pub const TOOLS: [&str; 3] = ["update-grub", "grub-set-default", "grub-editenv"];

/// Refuses, before any change, a node without GRUB's tools or its defaults file, or
/// one whose GRUB drop-ins set `GRUB_DEFAULT` after it.
pub fn require_tools(host: &Host) -> Result<()> {
    if !host.exists(GRUB_DEFAULTS) {
        return Err(Error::action(format!(
            "{GRUB_DEFAULTS} does not exist, so GRUB_DEFAULT=saved cannot be set (is this node booted by GRUB?); \
             nothing was changed"
        )));
    }
    let overriding = overriding_drop_ins(host)?;
    if !overriding.is_empty() {
        return Err(Error::action(format!(
            "{} sets GRUB_DEFAULT after {GRUB_DEFAULTS}, so the installed kernel could not be made the boot \
             default; remove that setting (or set it to saved), then run apply again; nothing was changed",
            overriding.join(", ")
        )));
    }
    let missing: Vec<&str> = TOOLS.into_iter().filter(|t| host.which(t).is_none()).collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(Error::action(format!(
        "the node has no {} (GRUB's tools, packages grub2-common and grub-common), so the installed kernel \
         cannot be made the boot default; nothing was changed",
        missing.join(", ")
    )))
}

/// Makes `release` GRUB's saved default, recording first what it changes.
pub fn make_default(step: &Step, record: &mut Record, release: &str) -> Result<()> {
    let host = &step.host;
    if record.boot.is_none() {
        record.boot = Some(BootRecord {
            grub_defaults: SavedFile::capture(host, GRUB_DEFAULTS)?,
            written: None,
            saved_entry: env_value(host, GRUBENV, "saved_entry")?,
            grubenv_existed: host.exists(GRUBENV),
            entry: None,
        });
        record.save(step)?;
    }
    let current = host.read(GRUB_DEFAULTS)?.unwrap_or_default();
    let wanted = set_assignment(&current, GRUB_DEFAULT, Some("saved"));
    if wanted != current {
        record.boot.as_mut().expect("recorded").written = Some(Content::new(&wanted));
        record.regenerate_grub = true;
        record.save(step)?;
        host.write(GRUB_DEFAULTS, &wanted, host.mode(GRUB_DEFAULTS)?.unwrap_or(0o644))?;
        log::info!("{GRUB_DEFAULTS}: {GRUB_DEFAULT}=saved");
    }
    let mut entry = find_entry(host, release)?;
    if record.regenerate_grub || entry.is_none() {
        regenerate(step, record)?;
        entry = find_entry(host, release)?;
    }
    let entry = entry.ok_or_else(|| {
        Error::action(format!(
            "{GRUB_CFG} has no entry booting vmlinuz-{release} after update-grub; is /boot/vmlinuz-{release} \
             there? (the kernel is installed; GRUB's saved entry was not changed)"
        ))
    })?;
    require_saved_default(host)?;
    if env_value(host, GRUBENV, "saved_entry")?.as_deref() != Some(entry.as_str()) {
        record.boot.as_mut().expect("recorded").entry = Some(entry.clone());
        record.save(step)?;
        host.run_ok(&Cmd::new("grub-set-default").arg(&entry).echo())?;
    }
    log::info!("boot default: {entry} (kernel {release}) from the next boot");
    Ok(())
}

/// What GRUB's generated header says when `GRUB_DEFAULT=saved` reached it
/// (`00_header` of GRUB 2.06 and 2.12).
const SAVED_DEFAULT: &str = "set default=\"${saved_entry}\"";

/// The files of `/etc/default/grub.d` that set `GRUB_DEFAULT` to anything but
/// `saved`: sourced after `/etc/default/grub`, they would undo its setting.
fn overriding_drop_ins(host: &Host) -> Result<Vec<String>> {
    let mut found = Vec::new();
    for name in host.list_dir(DROP_IN_DIR)?.into_iter().filter(|n| n.ends_with(".cfg")) {
        let path = format!("{DROP_IN_DIR}/{name}");
        let text = host.read(&path)?.unwrap_or_default();
        let value = skyhook_core::boot::defaults::assignment_args(&text, GRUB_DEFAULT);
        if value.is_some_and(|v| v != ["saved"]) {
            found.push(path);
        }
    }
    Ok(found)
}

/// Fails when the generated configuration does not boot the saved entry (what
/// update-grub made of the defaults, whatever set them).
fn require_saved_default(host: &Host) -> Result<()> {
    let cfg = host.read(GRUB_CFG)?.unwrap_or_default();
    if String::from_utf8_lossy(&cfg).contains(SAVED_DEFAULT) {
        return Ok(());
    }
    Err(Error::action(format!(
        "{GRUB_CFG} does not boot GRUB's saved entry after update-grub although {GRUB_DEFAULTS} sets \
         GRUB_DEFAULT=saved; find what sets GRUB_DEFAULT after it, then run apply again (the kernel is \
         installed; GRUB's saved entry was not changed)"
    )))
}

/// The entry of `release` in the generated configuration.
pub fn find_entry(host: &Host, release: &str) -> Result<Option<String>> {
    let cfg = host.read(GRUB_CFG)?.unwrap_or_default();
    Ok(entry_for_release(&String::from_utf8_lossy(&cfg), release))
}

/// Runs update-grub, owed in the record until it succeeded.
fn regenerate(step: &Step, record: &mut Record) -> Result<()> {
    BootConfig::GrubDropIns {
        output: GRUB_CFG.into(),
    }
    .regenerate(&step.host)?;
    if record.regenerate_grub {
        record.regenerate_grub = false;
        record.save(step)?;
    }
    Ok(())
}

/// Gives the boot default back: the saved entry (while it is still ours), the
/// defaults file (exactly while untouched since, else only its `GRUB_DEFAULT`),
/// and one update-grub when the file changed.
pub fn restore(step: &Step, record: &mut Record) -> Result<()> {
    let host = &step.host;
    if let Some(boot) = record.boot.clone() {
        let current = env_value(host, GRUBENV, "saved_entry")?;
        if let Some(ours) = &boot.entry {
            if current.as_ref() == Some(ours) && boot.saved_entry.as_ref() != Some(ours) {
                let cmd = match &boot.saved_entry {
                    Some(e) => Cmd::new("grub-set-default").arg(e),
                    None => Cmd::new("grub-editenv").args([GRUBENV, "unset", "saved_entry"]),
                };
                host.run_ok(&cmd.echo())?;
            } else if current != boot.saved_entry {
                log::warn!("GRUB's saved entry is {current:?}, no longer the {ours:?} this package set; left as it is");
            }
        }
        // The block grub-set-default created, emptied again: gone, as before apply.
        if !boot.grubenv_existed && host.exists(GRUBENV) && env_vars(host, GRUBENV)?.is_empty() {
            host.remove(GRUBENV)?;
        }
        if let Some(written) = &boot.written {
            record.regenerate_grub = true;
            record.save(step)?;
            let original = boot.grub_defaults.content()?.unwrap_or_default();
            let original_value =
                skyhook_core::boot::defaults::assignment_args(&original, GRUB_DEFAULT).map(|words| words.join(" "));
            undo_edit(host, GRUB_DEFAULTS, &boot.grub_defaults, written, |text| {
                let now = skyhook_core::boot::defaults::assignment_args(text, GRUB_DEFAULT)?;
                (now == ["saved"]).then(|| set_assignment(text, GRUB_DEFAULT, original_value.as_deref()))
            })?;
        }
        record.boot = None;
        record.save(step)?;
    }
    if record.regenerate_grub {
        regenerate(step, record)?;
    }
    Ok(())
}

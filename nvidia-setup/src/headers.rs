// SPDX-License-Identifier: Apache-2.0
//! The bcm step: `/usr/src/linux-<release>` → `linux-headers-<release>` for the
//! running kernel, the path the GPU operator's driver container and the DRA driver
//! read `.config` from (UPSTREAM.md §6.10). Keyed off the running kernel, so it is
//! made again after a kernel change.
//!
//! A real file or directory at the link's path is refused and left alone (a
//! warning, exit 0, as upstream since 0.3.0: it may well be the headers). A link
//! pointing elsewhere is replaced, as upstream's `ln -sfn` did, with its target
//! recorded and put back at uninstall.

use std::path::Path;

use skyhook_core::{Error, Result, Step};

use crate::kernel;
use crate::record::{LinkRecord, Record};

/// Where kernel headers are installed.
const SRC: &str = "/usr/src";

/// The link and its relative target for `release`.
pub fn paths(release: &str) -> (String, String) {
    (format!("{SRC}/linux-{release}"), format!("linux-headers-{release}"))
}

/// Makes the running kernel's headers link, recording first.
pub fn apply(step: &Step) -> Result<()> {
    let host = &step.host;
    let release = kernel::running(host)?;
    let (link, target) = paths(&release);
    let headers = format!("{SRC}/{target}");
    if !host.is_dir(&headers) || host.read_link(&headers)?.is_some() {
        return Err(Error::action(format!(
            "headers: {headers} is not a directory; install the package linux-headers-{release} first, then run \
             apply again"
        )));
    }
    let current = host.read_link(&link)?;
    if current.as_deref() == Some(Path::new(&target)) {
        log::info!("headers: {link} → {target} already");
        return Ok(());
    }
    if current.is_none() && host.mode(&link)?.is_some() {
        log::warn!("headers: {link} exists and is not a symbolic link; refusing to replace it (left as it is)");
        return Ok(());
    }
    let mut record = Record::load(step)?;
    if !record.header_links.iter().any(|l| l.link == link) {
        record.header_links.push(LinkRecord {
            link: link.clone(),
            target: target.clone(),
            previous: current.map(|p| p.to_string_lossy().into_owned()),
        });
        record.save(step)?;
    }
    host.symlink(&target, &link)?;
    log::info!("headers: {link} → {target}");
    Ok(())
}

/// Whether the running kernel's headers are reachable where the drivers look
/// (`/usr/src/linux-<release>/.config`); the problem otherwise.
pub fn check(step: &Step) -> Result<Option<String>> {
    let host = &step.host;
    let release = kernel::running(host)?;
    let (link, _) = paths(&release);
    let config = format!("{link}/.config");
    let found = host
        .resolve_links(&link)
        .is_ok_and(|dir| host.exists(dir.join(".config")));
    Ok((!found).then(|| format!("headers: {config} does not resolve to a file; run apply")))
}

/// Removes the links this package made (while they still point where it made
/// them), putting back a link that stood there before.
pub fn release(step: &Step, record: &mut Record) -> Result<()> {
    let host = &step.host;
    while let Some(made) = record.header_links.last().cloned() {
        match host.read_link(&made.link)? {
            Some(t) if t == Path::new(&made.target) => match &made.previous {
                Some(previous) => {
                    host.symlink(previous, &made.link)?;
                }
                None => {
                    host.remove(&made.link)?;
                }
            },
            _ => log::warn!(
                "headers: {} is no longer the link this package made; left as it is",
                made.link
            ),
        }
        record.header_links.pop();
        record.save(step)?;
    }
    Ok(())
}

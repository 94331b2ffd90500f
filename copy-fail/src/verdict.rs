// SPDX-License-Identifier: Apache-2.0
//! Whether the node is still vulnerable, in one line an operator can grep across a
//! fleet's logs (`grep 'CVE-2026-31431: node'`), printed once by config-check and
//! by post-interrupt-check:
//!
//! ```text
//! copy-fail: CVE-2026-31431: node protected: algif_aead not loaded, loading it blocked by /etc/modprobe.d/disable-algif.conf
//! copy-fail: CVE-2026-31431: node VULNERABLE: algif_aead loaded (in use: reference count 1)
//! ```
//!
//! The node is vulnerable while the running kernel has the module (built in, or
//! loaded), or while it can load it (the file is missing or holds something else,
//! or a modprobe.d file kmod reads first installs it with another command).

use std::collections::BTreeSet;
use std::fmt;
use std::path::Path;

use skyhook_core::error::excerpt;
use skyhook_core::{Host, Result};
use tuning::{modprobe, modules};

use crate::KIND;
use crate::plan::{BUILT_IN_ARGUMENT, CVE, FILE, LINE, MODULE, content};

/// Why the node is vulnerable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exposure {
    /// The module is built into the running kernel (its release).
    BuiltIn(String),
    /// The module is loaded (why it is still there).
    Loaded(String),
    /// The module is not loaded, but nothing keeps it out (why).
    Loadable(String),
}

impl Exposure {
    /// Whether the running kernel has the module (what `ALLOW_LOADED_MODULE`
    /// accepts in config-check): loaded or built in, as opposed to loadable.
    pub fn in_running_kernel(&self) -> bool {
        !matches!(self, Exposure::Loadable(_))
    }
}

impl fmt::Display for Exposure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Exposure::BuiltIn(release) => write!(
                f,
                "{MODULE} built into kernel {release} (a modprobe.d line cannot keep it out: the kernel argument \
                 {BUILT_IN_ARGUMENT}, or a fixed kernel)"
            ),
            Exposure::Loaded(why) => write!(f, "{MODULE} loaded ({why})"),
            Exposure::Loadable(why) => write!(f, "{MODULE} loadable: {why}"),
        }
    }
}

/// The node's exposure, `None` when it is protected.
pub fn assess(host: &Host) -> Result<Option<Exposure>> {
    let names = BTreeSet::from([MODULE]);
    if let (release, built_in) = modules::built_in(host, &names)?
        && !built_in.is_empty()
    {
        return Ok(Some(Exposure::BuiltIn(release.unwrap_or_default())));
    }
    if let Some(m) = modules::find(&modules::loaded(host)?, MODULE) {
        let why = m
            .in_use()
            .unwrap_or_else(|| "nothing uses it: config unloads it".to_string());
        return Ok(Some(Exposure::Loaded(why)));
    }
    match host.read(FILE)? {
        None => return Ok(Some(Exposure::Loadable(format!("{FILE} is missing")))),
        Some(b) if b != content().as_bytes() => {
            return Ok(Some(Exposure::Loadable(format!(
                "{FILE} does not hold exactly {}",
                excerpt(LINE)
            ))));
        }
        Some(_) => {}
    }
    let first = modprobe::overrides(host, Path::new(FILE), &names)?
        .into_iter()
        .find(|o| !modprobe::REFUSALS.contains(&o.command.trim()));
    Ok(first.map(|o| {
        Exposure::Loadable(format!(
            "{} line {} installs it with {}, and kmod reads it before {FILE}",
            o.file.display(),
            o.line,
            excerpt(&o.command)
        ))
    }))
}

/// The line for `exposure`.
pub fn line(exposure: Option<&Exposure>) -> String {
    match exposure {
        None => format!("{KIND}: {CVE}: node protected: {MODULE} not loaded, loading it blocked by {FILE}"),
        Some(e) => format!("{KIND}: {CVE}: node VULNERABLE: {e}"),
    }
}

/// Logs the line: a warning when the node is vulnerable.
pub fn report(exposure: Option<&Exposure>) {
    match exposure {
        None => log::info!("{}", line(None)),
        Some(_) => log::warn!("{}", line(exposure)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_says_protected_or_vulnerable_and_why() {
        assert_eq!(
            line(None),
            "copy-fail: CVE-2026-31431: node protected: algif_aead not loaded, loading it blocked by \
             /etc/modprobe.d/disable-algif.conf"
        );
        assert_eq!(
            line(Some(&Exposure::Loaded("in use: reference count 1".into()))),
            "copy-fail: CVE-2026-31431: node VULNERABLE: algif_aead loaded (in use: reference count 1)"
        );
        assert!(Exposure::BuiltIn("6.8.0".into()).in_running_kernel());
        assert!(!Exposure::Loadable("x".into()).in_running_kernel());
        for e in [
            Exposure::BuiltIn("6.8.0".into()),
            Exposure::Loaded("x".into()),
            Exposure::Loadable("y".into()),
        ] {
            assert!(!line(Some(&e)).contains('\n'), "one line");
        }
    }
}

// SPDX-License-Identifier: Apache-2.0
//! The configMap, validated before anything changes: `crashkernel` (the kernel's
//! syntax, and no more than half of the node's memory) and `kdump.conf` (the service
//! configuration, deployed verbatim).

use skyhook_core::runtime::configmap::ConfigMaps;
use skyhook_core::{Error, Host, Result};

use crate::advice;
use crate::crashkernel::{CrashKernel, Form, human};
use crate::platform::Platform;

/// Validates the configMap offline, without looking at a node (the entry point of
/// `skyhook-pkg lint`): the crashkernel syntax, kdump.conf, and unknown keys.
pub fn validate(configmaps: &ConfigMaps) -> Result<()> {
    let mut problems = match Input::parse(configmaps) {
        Ok(_) => Vec::new(),
        Err(Error::Input(p)) => p,
        Err(e) => return Err(e),
    };
    for key in configmaps.keys() {
        if key != CRASHKERNEL_KEY && key != KDUMP_CONF_KEY {
            problems.push(format!(
                "configMap key {key:?} is not one this package reads ({CRASHKERNEL_KEY:?}, {KDUMP_CONF_KEY:?}); \
                 config ignores it"
            ));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(Error::Input(problems))
    }
}

/// The configMap key holding the crashkernel value.
pub const CRASHKERNEL_KEY: &str = "crashkernel";
/// The configMap key holding the service configuration.
pub const KDUMP_CONF_KEY: &str = "kdump.conf";

/// What the configMap asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Input {
    /// The crashkernel value; `None` leaves the kernel command line as the distribution set it.
    pub crashkernel: Option<CrashKernel>,
    /// The service configuration; `None` leaves the distribution's.
    pub kdump_conf: Option<String>,
}

impl Input {
    /// The keys as given, syntax checked, without looking at the node (checks and
    /// uninstall: they compare, they do not refuse).
    pub fn parse(configmaps: &ConfigMaps) -> Result<Self> {
        let mut problems = Vec::new();
        let mut input = Input::default();
        match crashkernel_text(configmaps) {
            Ok(None) => {}
            Ok(Some(text)) => match CrashKernel::parse(&text) {
                Ok(ck) => input.crashkernel = Some(ck),
                Err(why) => problems.push(format!(
                    "configMap key {CRASHKERNEL_KEY:?} ({text:?}) is not a crashkernel value the kernel accepts: {why}. \
                     Accepted: a size (256M, 1G), size@offset (256M@16M), a range list \
                     (1G-4G:192M,4G-64G:256M,64G-:512M, optionally @offset), size,high (512M,high), \
                     size,high with its size,low (1G,high 128M,low), or auto"
                )),
            },
            Err(e) => problems.push(e.to_string()),
        }
        match configmaps.text(KDUMP_CONF_KEY) {
            Ok(Some(text)) if text.trim().is_empty() => log::warn!(
                "configMap key {KDUMP_CONF_KEY:?} is empty: keeping the distribution's configuration \
                 (remove the key, or give the file's content)"
            ),
            Ok(Some(text)) => input.kdump_conf = Some(text.to_string()),
            Ok(None) => {}
            Err(e) => problems.push(e.to_string()),
        }
        if problems.is_empty() {
            Ok(input)
        } else {
            Err(Error::Input(problems))
        }
    }

    /// The keys for config: parsed, then weighed against this node (memory, kernel,
    /// family); every problem is bad input, reported before anything changes.
    pub fn for_config(configmaps: &ConfigMaps, platform: &Platform, host: &Host) -> Result<Self> {
        configmaps.warn_unread(
            &[CRASHKERNEL_KEY, KDUMP_CONF_KEY],
            "it reads crashkernel and kdump.conf",
        );
        let input = Self::parse(configmaps)?;
        if let Some(ck) = &input.crashkernel {
            check_against_node(ck, platform, host)?;
        }
        if let Some(conf) = &input.kdump_conf
            && platform.has_use_kdump()
            && use_kdump(conf).as_deref() != Some("1")
        {
            log::warn!(
                "configMap key {KDUMP_CONF_KEY:?} does not set USE_KDUMP=1: deployed to {} as given, \
                 kdump-tools will not load a crash kernel",
                platform.kdump_conf()
            );
        }
        Ok(input)
    }
}

/// The crashkernel value with surrounding whitespace removed (the bash package read it
/// with `$(<file)`, which drops trailing newlines); `None` when absent or empty.
fn crashkernel_text(configmaps: &ConfigMaps) -> Result<Option<String>> {
    let Some(text) = configmaps.text(CRASHKERNEL_KEY)? else {
        return Ok(None);
    };
    let text = text.trim();
    if text.is_empty() {
        log::warn!(
            "configMap key {CRASHKERNEL_KEY:?} is empty: the kernel command line stays as the distribution set it"
        );
        return Ok(None);
    }
    Ok(Some(text.to_string()))
}

/// Refuses a reservation larger than half of the node's memory; warns about values
/// this node's kernel will not honour.
fn check_against_node(ck: &CrashKernel, platform: &Platform, host: &Host) -> Result<()> {
    if matches!(ck.form(), Form::Auto) {
        if !platform.supports_auto() {
            log::warn!(
                "crashkernel=auto: the kernel of {} does not understand \"auto\" (RHEL dropped it in version 9; \
                 Debian, Ubuntu, Fedora and Amazon Linux kernels never had it), so it will reserve no memory and \
                 kdump cannot work. Give a size or a range list instead, e.g. 1G-4G:192M,4G-64G:256M,64G-:512M",
                platform.name()
            );
        }
        return Ok(());
    }
    let total = host.total_memory()?;
    let reserved = ck.reservation(total).unwrap_or(0).saturating_add(ck.low().unwrap_or(0));
    if reserved.saturating_mul(2) > total {
        return Err(Error::input(format!(
            "configMap key {CRASHKERNEL_KEY:?}: crashkernel={ck} would reserve {} ({reserved} bytes) on this node, \
             more than half of its memory ({} total, {total} bytes); the node would be left with too little to run. \
             Reserve less (256M to 1G is usual), or use a range list sized per node",
            human(reserved),
            human(total)
        )));
    }
    if reserved == 0 {
        log::warn!(
            "crashkernel={ck}: no range covers this node's memory ({}), so no memory will be reserved and kdump \
             cannot work on this node",
            human(total)
        );
    } else {
        log::info!(
            "crashkernel={ck} reserves {} of this node's {}",
            human(reserved),
            human(total)
        );
        if let Some(warning) = advice::too_small(reserved, total, &advice::NodeFacts::read(host)?) {
            log::warn!("crashkernel={ck}: {warning}");
        }
    }
    Ok(())
}

/// The value of the last `USE_KDUMP=` assignment in a kdump-tools configuration, unquoted.
pub fn use_kdump(text: &str) -> Option<String> {
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("USE_KDUMP="))
        .next_back()
        .map(|v| {
            v.split('#')
                .next()
                .unwrap_or("")
                .trim()
                .trim_matches(['"', '\''])
                .to_string()
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_use_kdump_as_a_shell_would() {
        assert_eq!(use_kdump("# USE_KDUMP=1\nUSE_KDUMP=0\n").as_deref(), Some("0"));
        assert_eq!(use_kdump("USE_KDUMP=0\nUSE_KDUMP=\"1\"  # on\n").as_deref(), Some("1"));
        assert_eq!(use_kdump("KDUMP_COREDIR=/var/crash\n"), None);
    }

    #[test]
    fn trims_the_value_and_treats_empty_as_absent() {
        let m = ConfigMaps::from_entries([("crashkernel", "256M\n"), ("kdump.conf", "  \n")]);
        let i = Input::parse(&m).unwrap();
        assert_eq!(i.crashkernel.unwrap().tokens(), ["crashkernel=256M"]);
        assert_eq!(i.kdump_conf, None);
        let m = ConfigMaps::from_entries([("crashkernel", "\n")]);
        assert_eq!(Input::parse(&m).unwrap(), Input::default());
    }

    #[test]
    fn lists_every_bad_key() {
        let m = ConfigMaps::from_entries([("crashkernel", b"25 6M".to_vec()), ("kdump.conf", b"\xff".to_vec())]);
        match Input::parse(&m).unwrap_err() {
            Error::Input(p) => {
                assert_eq!(p.len(), 2, "{p:?}");
                assert!(p[0].contains("\"25 6M\"") && p[0].contains("range list"), "{}", p[0]);
                assert!(p[1].contains("kdump.conf") && p[1].contains("UTF-8"), "{}", p[1]);
            }
            e => panic!("{e:?}"),
        }
    }
}

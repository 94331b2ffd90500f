// SPDX-License-Identifier: Apache-2.0
//! The inotify limits (upstream's `system_node_settings.sh`, UPSTREAM.md §10:
//! `fs.inotify.max_user_instances=65535`, `fs.inotify.max_user_watches=524288`),
//! on the tuning engine in process under its own kind ([`KIND`]): its sysctl.d file,
//! the live values, its records, its checks and its uninstall.
//!
//! Where upstream wrote both values as they are, here each is a floor: a node whose
//! kernel already allows more keeps its own value (Linux scales the default of
//! `max_user_watches` with memory, to 1048576 on a GPU node, which upstream's value
//! would have halved).

use skyhook_core::{ConfigMaps, Error, Host, Result};

use crate::engine::Use;

/// The kind the engine's records of these settings live under.
pub const KIND: &str = "nvidia-setup-eks";
/// The settings and their floors.
pub const FLOORS: [(&str, u64); 2] = [
    ("fs.inotify.max_user_instances", 65535),
    ("fs.inotify.max_user_watches", 524288),
];

/// The engine's use for `host`: each setting at its floor, or at the live value
/// when that is higher; a kernel without one is refused (before any change, as apply
/// reads this first).
pub fn engine(host: &Host) -> Result<Use> {
    let mut conf = String::new();
    for (key, floor) in FLOORS {
        let Some(live) = live_value(host, key)? else {
            return Err(Error::action(format!(
                "inotify: {key} cannot be read from /proc/sys (a kernel without inotify?); nothing was changed"
            )));
        };
        conf.push_str(&format!("{key}={}\n", live.max(floor)));
    }
    Ok(with_sysctls(&conf))
}

/// The engine's use for uninstall and its check, which work from the engine's
/// records: the floors.
pub fn recorded() -> Use {
    let conf: String = FLOORS.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
    with_sysctls(&conf)
}

/// The engine's use with `conf` as its `sysctl.conf`.
fn with_sysctls(conf: &str) -> Use {
    Use {
        kind: KIND,
        input: ConfigMaps::from_entries([("sysctl.conf", conf)]),
        preset: tuning::Preset::default(),
    }
}

/// The live value of `key` (`/proc/sys/fs/inotify/…`), `None` when the kernel has
/// none or it is not a number.
fn live_value(host: &Host, key: &str) -> Result<Option<u64>> {
    let path = format!("/proc/sys/{}", key.replace('.', "/"));
    Ok(host.read_to_string(&path)?.and_then(|v| v.trim().parse().ok()))
}

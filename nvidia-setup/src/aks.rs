// SPDX-License-Identifier: Apache-2.0
//! aks-h100's steps (upstream's `configure_ib_rdma`, UPSTREAM.md §6.11): the
//! InfiniBand user-space modules loaded now and at every boot ([`crate::ib_modules`]),
//! and unlimited locked memory for login sessions (root's too, as upstream) and for
//! containerd and kubelet, on the tuning engine in process: its `ulimit.conf` and
//! `service_<unit>.conf` keys, so writing, recording, the checks (a running service's
//! own `/proc/<pid>/limits` after the interrupt) and uninstall are tuning's.
//!
//! The engine keeps its records under its own kind ([`ENGINE_KIND`]), apart from
//! this package's. Upstream's files (`99-ib-memlock.conf` and the two
//! `memlock.conf` drop-ins), which said the same, are taken over: removed by apply
//! and uninstall while they hold exactly upstream's content, so uninstall leaves
//! no unlimited memlock behind. The interrupt is the SCR's: a restart of
//! containerd and kubelet (or a reboot); only containers created after it get the
//! limit.

use skyhook_core::{ConfigMaps, Result, Step};

use crate::engine::Use;

/// The kind the tuning engine's records of this package live under.
pub const ENGINE_KIND: &str = "nvidia-setup-aks";

/// The drop-in giving a service unlimited locked memory.
const MEMLOCK_DROP_IN: &str = "[Service]\nLimitMEMLOCK=infinity\n";

/// Upstream's files and their exact content.
const UPSTREAM_FILES: [(&str, &str); 3] = [
    (
        "/etc/security/limits.d/99-ib-memlock.conf",
        "* - memlock unlimited\nroot - memlock unlimited\n",
    ),
    ("/etc/systemd/system/containerd.service.d/memlock.conf", MEMLOCK_DROP_IN),
    ("/etc/systemd/system/kubelet.service.d/memlock.conf", MEMLOCK_DROP_IN),
];

/// The engine's input: memlock unlimited for sessions, containerd and kubelet.
pub fn input() -> ConfigMaps {
    ConfigMaps::from_entries([
        ("ulimit.conf", "memlock=unlimited\n"),
        ("service_containerd.conf", MEMLOCK_DROP_IN),
        ("service_kubelet.conf", MEMLOCK_DROP_IN),
    ])
}

/// The engine's use: the [`input`], and `ulimit.conf`'s limits for root too, which
/// the `*` domain does not cover (limits.conf(5)), as upstream's
/// `99-ib-memlock.conf` gave them.
pub fn engine() -> Use {
    Use {
        kind: ENGINE_KIND,
        input: input(),
        preset: tuning::Preset {
            ulimit_root: true,
            ..tuning::Preset::default()
        },
    }
}

/// Removes upstream's files that hold exactly upstream's content.
pub fn take_over_upstream(step: &Step) -> Result<()> {
    for (path, content) in UPSTREAM_FILES {
        if step.host.read(path)?.as_deref() == Some(content.as_bytes()) {
            step.host.remove(path)?;
            log::info!("{path}: upstream's file, taken over (the tuning engine's files say the same)");
        }
    }
    Ok(())
}

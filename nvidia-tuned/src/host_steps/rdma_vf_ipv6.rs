// SPDX-License-Identifier: Apache-2.0
//! IPv6 on the RDMA virtual functions that exist when config runs (what upstream's
//! oci profile script does at activation): the service profile's
//! `net.ipv6.conf.all.disable_ipv6 = 0` does not re-enable an interface already
//! disabled, so each mlx5 VF (a `/sys/class/net` interface whose device has a `physfn`
//! link and the `mlx5_core` driver) gets `disable_ipv6 = 0` and `accept_ra = 1` live
//! and is set up. VFs are recreated on every pod handoff and those created later get
//! the profile's defaults, so nothing is recorded, checked or taken back; a VF that
//! refuses is a warning, as upstream, never a failure.

use skyhook_core::formats::sysctl::{self, Key};
use skyhook_core::host::command::Cmd;
use skyhook_core::{Host, Result};

/// The step's name in the log.
pub const STEP: &str = "rdma-vf-ipv6";
/// The driver of the VFs concerned.
const DRIVER: &str = "mlx5_core";

/// The mlx5 VF interfaces of `host`.
pub fn vfs(host: &Host) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for iface in host.list_dir("/sys/class/net")? {
        let device = format!("/sys/class/net/{iface}/device");
        if !host.exists(format!("{device}/physfn")) {
            continue;
        }
        let driver = host.read_link(format!("{device}/driver"))?;
        if driver
            .as_deref()
            .and_then(|d| d.file_name())
            .is_some_and(|n| n == DRIVER)
        {
            out.push(iface);
        }
    }
    Ok(out)
}

/// Re-enables IPv6 on each VF that exists now.
pub fn apply(host: &Host) -> Result<()> {
    for iface in vfs(host)? {
        for (setting, value) in [("disable_ipv6", "0"), ("accept_ra", "1")] {
            let done = Key::parse(&format!("net/ipv6/conf/{iface}/{setting}"))
                .map_err(|why| why.to_string())
                .and_then(|key| sysctl::write(host, &key, value).map_err(|e| e.to_string()));
            if let Err(why) = done {
                log::warn!("{STEP}: could not set {setting}={value} on RDMA VF {iface}: {why}");
            }
        }
        let up = Cmd::new("ip").args(["link", "set", iface.as_str(), "up"]);
        if let Err(e) = host.run_ok(&up) {
            log::warn!("{STEP}: could not bring RDMA VF {iface} up: {e}");
        }
        log::info!("{STEP}: re-enabled IPv6 on RDMA VF {iface}");
    }
    Ok(())
}

// SPDX-License-Identifier: Apache-2.0
//! cloud-init on EC2 (upstream's `cloud_init_cfg.sh`, UPSTREAM.md §10; canonical/cloud-init
//! issue 5289): cloud-init-local must not ask the instance metadata service before the
//! network device that reaches it exists, or a large instance boots without its
//! metadata. Three files: the EC2 datasource's waits (`99-dgxcloud.cfg`), a
//! `cloud-init-local.service` drop-in requiring the device, and the udev rule that
//! gives an ENA (or Xen `vif`) network device the systemd alias `/dev/ec2imds`.
//!
//! Only on an EC2 host (a network device driven by `ena` or `vif`) with cloud-init
//! installed (`/etc/cloud/cloud.cfg.d`): elsewhere the device never appears and the
//! drop-in would hold cloud-init-local until it fails. The originals, and the
//! directories that were not there, are recorded before the writes and given back
//! at uninstall. Each takes effect at the next boot.

use skyhook_core::host::systemd::Systemd;
use skyhook_core::records::original::SavedFile;
use skyhook_core::{Host, Result, Step};

use crate::record::Record;

/// Where cloud-init reads its configuration drop-ins.
const CLOUD_CFG_D: &str = "/etc/cloud/cloud.cfg.d";
/// Where the network devices are.
const NET: &str = "/sys/class/net";
/// The drivers of EC2's network devices.
const EC2_DRIVERS: [&str; 2] = ["ena", "vif"];
/// The drop-in, which needs a daemon-reload.
const DROP_IN: &str = "/etc/systemd/system/cloud-init-local.service.d/10-wait-for-net-device.conf";

/// The files and their content, upstream's.
pub const FILES: [(&str, &str); 3] = [
    (
        "/etc/cloud/cloud.cfg.d/99-dgxcloud.cfg",
        "datasource:\n  Ec2:\n    max_wait: 300\n    timeout: 30\n",
    ),
    (
        DROP_IN,
        "# Written by the Skyhook package nvidia-setup: cloud-init-local waits for the network\n\
         # device that reaches the instance metadata service (canonical/cloud-init#5289).\n\
         [Unit]\nRequires=dev-ec2imds.device\nAfter=dev-ec2imds.device\n",
    ),
    (
        "/etc/udev/rules.d/10-ec2imds.rules",
        "ACTION!=\"remove\", SUBSYSTEM==\"net\", KERNEL!=\"lo\", DRIVERS==\"ena|vif\", TAG+=\"systemd\", \
         ENV{SYSTEMD_ALIAS}+=\"/dev/ec2imds\"\n",
    ),
];

/// Whether the files belong on this node: an EC2 network device and cloud-init.
fn wanted(host: &Host) -> Result<bool> {
    if !host.is_dir(CLOUD_CFG_D) {
        return Ok(false);
    }
    for device in host.list_dir(NET)? {
        let driver = host.read_link(format!("{NET}/{device}/device/driver"))?;
        if driver
            .as_deref()
            .and_then(|d| d.file_name())
            .is_some_and(|name| EC2_DRIVERS.iter().any(|e| name == *e))
        {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Writes the files (recording the originals first) where they belong.
pub fn apply(step: &Step, record: &mut Record) -> Result<()> {
    let host = &step.host;
    if record.cloud_init.is_empty() {
        if !wanted(host)? {
            log::info!("cloud-init: not an EC2 network device with cloud-init here; nothing written");
            return Ok(());
        }
        record.cloud_init = FILES
            .iter()
            .map(|(path, _)| SavedFile::capture(host, path))
            .collect::<Result<_>>()?;
        record.cloud_init_dirs = missing_dirs(host);
        record.save(step)?;
    }
    let mut reload = false;
    for (path, content) in FILES {
        let wrote = host.write(path, content.as_bytes(), 0o644)?;
        reload |= wrote && path == DROP_IN;
    }
    if reload {
        Systemd::new(host).daemon_reload()?;
    }
    log::info!(
        "cloud-init: the EC2 datasource waits, and cloud-init-local waits for /dev/ec2imds (from the next boot)"
    );
    Ok(())
}

/// The directories of the files that do not exist yet, deepest first.
fn missing_dirs(host: &Host) -> Vec<String> {
    let mut missing: Vec<String> = Vec::new();
    for (path, _) in FILES {
        let parent = std::path::Path::new(path).parent().unwrap_or(std::path::Path::new("/"));
        for dir in parent.ancestors().take_while(|d| !host.is_dir(d)) {
            let dir = dir.display().to_string();
            if !missing.contains(&dir) {
                missing.push(dir);
            }
        }
    }
    missing.sort_by_key(|d| std::cmp::Reverse(d.matches('/').count()));
    missing
}

/// What is unmet: on a node the files belong on, one missing or changed.
pub fn check(host: &Host) -> Result<Vec<String>> {
    if !wanted(host)? {
        return Ok(Vec::new());
    }
    let mut unmet = Vec::new();
    for (path, content) in FILES {
        if !host.has_content(path, content.as_bytes(), 0o644)? {
            unmet.push(format!("cloud-init: {path} is missing or changed; apply writes it"));
        }
    }
    Ok(unmet)
}

/// uninstall's part: the originals back.
pub fn release(step: &Step, record: &mut Record) -> Result<()> {
    if record.cloud_init.is_empty() {
        return Ok(());
    }
    for saved in &record.cloud_init {
        saved.restore(&step.host)?;
    }
    for dir in &record.cloud_init_dirs {
        step.host.remove_empty_dir(dir)?;
    }
    Systemd::new(&step.host).daemon_reload()?;
    record.cloud_init.clear();
    record.cloud_init_dirs.clear();
    record.save(step)?;
    log::info!("cloud-init: its three files given back");
    Ok(())
}

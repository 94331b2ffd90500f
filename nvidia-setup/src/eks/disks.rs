// SPDX-License-Identifier: Apache-2.0
//! The NVMe instance storage: upstream assembled every EC2 instance-store disk
//! (`/dev/disk/by-id/*NVMe_Instance_Storage_*`) into a RAID0 array, formatted and
//! mounted it at `/mnt/k8s-disks/0`, and moved kubelet's, containerd's and the pod
//! logs' directories onto it. This version does not build the array: a node
//! without instance storage, or whose storage is already mounted there (an AMI's
//! own bootstrap did it), passes; a node with instance-store disks and nothing
//! mounted is refused before any change, naming the disks.

use skyhook_core::formats::mountinfo;
use skyhook_core::{Error, Result, Step};

/// Where EC2 exposes disks by model and serial.
const BY_ID: &str = "/dev/disk/by-id";
/// The marker of EC2's instance-store model string in a by-id name.
const INSTANCE_STORAGE: &str = "NVMe_Instance_Storage_";
/// Where upstream mounts the array.
pub const MOUNT_POINT: &str = "/mnt/k8s-disks/0";

/// The instance-store disks' by-id names, sorted.
pub fn instance_storage(step: &Step) -> Result<Vec<String>> {
    Ok(step
        .host
        .list_dir(BY_ID)?
        .into_iter()
        .filter(|n| n.contains(INSTANCE_STORAGE) && !n.contains("-part"))
        .collect())
}

/// No instance storage, or storage mounted at [`MOUNT_POINT`]; else the refusal.
pub fn require(step: &Step) -> Result<()> {
    let disks = instance_storage(step)?;
    if disks.is_empty() {
        log::info!("disks: no NVMe instance storage on this node; nothing to assemble");
        return Ok(());
    }
    if mountinfo::read_host(&step.host)?.at(MOUNT_POINT).is_some() {
        log::info!(
            "disks: {} instance-store disk(s), {MOUNT_POINT} already mounted",
            disks.len()
        );
        return Ok(());
    }
    Err(Error::action(format!(
        "disks: this node has {} NVMe instance-store disk(s) ({}) and nothing mounted at {MOUNT_POINT}; this \
         version of nvidia-setup does not build the RAID0 array upstream's step made: assemble them with the \
         AMI's own setup-local-disks (or run that entry with upstream's image), then run apply again; nothing was \
         changed",
        disks.len(),
        disks.join(", ")
    )))
}

// SPDX-License-Identifier: Apache-2.0
//! The instance storage's intent: what apply asks the boot unit to build (a RAID0
//! array named [`super::probe::ARRAY_NAME`] over every instance-store disk, XFS,
//! mounted at [`MOUNT_POINT`], the [`DIRECTORIES`] bound onto it) and how far the
//! unit got with the array it made. One file for the node ([`PATH`], in the
//! [`STORE`] beside the unit's helper), on the root disk: the disks themselves may
//! be new and blank after a stop and start, the intent is not.
//!
//! Progress is recorded after each irreversible step, so a boot killed half way
//! resumes: an array this unit created is formatted until [`Made::formatted`] says
//! it was (a format killed half way is redone over the unit's own empty array,
//! never over one that ever held data).

use serde::{Deserialize, Serialize};
use skyhook_core::records::json;
use skyhook_core::{Host, Result};

/// The directory of the intent and the unit's helper, this package's own (removed
/// whole at uninstall).
pub const STORE: &str = "/var/lib/skyhook-packages/nvidia-setup-instance-storage";
/// Where the intent lives.
pub const PATH: &str = "/var/lib/skyhook-packages/nvidia-setup-instance-storage/intent.json";
/// Where the array is mounted (upstream's mount point).
pub const MOUNT_POINT: &str = "/mnt/k8s-disks/0";
/// The directories moved onto the array, as upstream's step moves them.
pub const DIRECTORIES: [&str; 3] = ["/var/lib/kubelet", "/var/lib/containerd", "/var/log/pods"];

/// The intent and the progress of the array it made.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Intent {
    /// An array is being created over blank disks: members found at the next boot
    /// with no array recorded are that creation's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub creating: bool,
    /// The array the boot unit created, once it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub made: Option<Made>,
}

/// An array the boot unit created.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Made {
    /// Its UUID (blkid's `UUID` of its members).
    pub uuid: String,
    /// Whether its file system was made to the end.
    pub formatted: bool,
}

impl Intent {
    /// The node's intent, `None` when apply never asked for the array.
    pub fn load(host: &Host) -> Result<Option<Intent>> {
        match host.read(PATH)? {
            None => Ok(None),
            Some(raw) => json::decode(&raw, host.path(PATH)?.as_path(), "the instance storage's intent").map(Some),
        }
    }

    /// Writes the intent (atomically).
    pub fn save(&self, host: &Host) -> Result<()> {
        host.write(PATH, &json::encode(self)?, 0o600)?;
        Ok(())
    }

    /// Whether the array with `uuid` was made and formatted by the unit.
    pub fn formatted(&self, uuid: &str) -> bool {
        self.made.as_ref().is_some_and(|m| m.uuid == uuid && m.formatted)
    }

    /// Whether the array with `uuid` is the one the unit made.
    pub fn made(&self, uuid: &str) -> bool {
        self.made.as_ref().is_some_and(|m| m.uuid == uuid)
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use skyhook_core::records::state::STATE_ROOT;

    use super::*;

    #[test]
    fn the_store_is_a_directory_of_cores_state_root_holding_the_intent() {
        // uninstall removes the store as a scratch tree under STATE_ROOT: it must be
        // one of its directories, never the state root itself or a path elsewhere.
        assert_eq!(Path::new(STORE).parent(), Some(Path::new(STATE_ROOT)));
        assert_eq!(Path::new(PATH).parent(), Some(Path::new(STORE)));
    }
}

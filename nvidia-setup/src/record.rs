// SPDX-License-Identifier: Apache-2.0
//! What apply changed, recorded before each change is made
//! (`/var/lib/skyhook-packages/nvidia-setup/<name>/state.json`), so that a step
//! killed at any instant and run again knows the originals, and uninstall gives
//! them back from the record alone.

use serde::{Deserialize, Serialize};
use skyhook_core::boot::edited::Content;
use skyhook_core::records::original::SavedFile;
use skyhook_core::records::state::Record as StateRecord;
use skyhook_core::{Host, Result, Step};

/// Everything the package changed on this node.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// The boot default: GRUB's defaults file and saved entry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot: Option<BootRecord>,
    /// The apt pin file and the holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pin: Option<PinRecord>,
    /// An update-grub is owed: the defaults file changed and GRUB's configuration
    /// was not regenerated since (a step killed in between).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub regenerate_grub: bool,
    /// The EFA installer's scratch directory may exist (eks): owed until removed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub efa_work_dir: bool,
    /// The OFI files as they were (eks).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ofi: Vec<SavedFile>,
    /// An ldconfig is owed: the linker's configuration changed since the last one.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ldconfig_owed: bool,
    /// chrony's configuration as it was and as apply wrote it (eks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chrony: Option<Edited>,
    /// A restart of chrony is owed: its configuration changed since the last one.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub chrony_restart_owed: bool,
    /// `/etc/modules-load.d/ib-umad.conf` as it was (aks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modules_load: Option<SavedFile>,
    /// ufw as it was before apply masked it (eks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ufw: Option<crate::eks::firewall::UfwRecord>,
    /// cloud-init's three files as they were (eks, on EC2 hosts).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cloud_init: Vec<SavedFile>,
    /// The directories of those files apply made (removed at uninstall when empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cloud_init_dirs: Vec<String>,
    /// The instance storage's boot unit, helper and intent were installed (eks).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub instance_storage: bool,
    /// The kernel headers links made on bcm nodes (one per running kernel).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub header_links: Vec<LinkRecord>,
}

/// The boot default before apply made the installed kernel GRUB's saved entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BootRecord {
    /// `/etc/default/grub` as it was.
    pub grub_defaults: SavedFile,
    /// What apply wrote there (`None` until it did).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub written: Option<Content>,
    /// GRUB's `saved_entry` as it was (`None`: unset).
    #[serde(default)]
    pub saved_entry: Option<String>,
    /// Whether GRUB's environment block existed (`grub-set-default` creates it).
    #[serde(default)]
    pub grubenv_existed: bool,
    /// The entry apply saved (`None` until it did).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry: Option<String>,
}

/// The apt pin file and holds before apply pinned the kernel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PinRecord {
    /// `/etc/apt/preferences.d/pin-kernel` as it was.
    pub file: SavedFile,
    /// What apply wrote there (`None` until it did).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub written: Option<Content>,
    /// The packages apply holds that were not held before (released at uninstall).
    #[serde(default)]
    pub held: Vec<String>,
}

/// A file apply edits but does not own: its original and what apply wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Edited {
    /// The file as it was.
    pub original: SavedFile,
    /// What apply wrote.
    pub written: Content,
}

/// A headers link apply made, and what stood there before.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkRecord {
    /// The link (`/usr/src/linux-<release>`).
    pub link: String,
    /// Its target as made (`linux-headers-<release>`).
    pub target: String,
    /// The target of the link that stood there before, if one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<String>,
}

impl StateRecord for Record {
    fn is_empty(&self) -> bool {
        self.boot.is_none()
            && self.pin.is_none()
            && !self.regenerate_grub
            && !self.efa_work_dir
            && self.ofi.is_empty()
            && !self.ldconfig_owed
            && self.chrony.is_none()
            && !self.chrony_restart_owed
            && self.modules_load.is_none()
            && !self.instance_storage
            && self.ufw.is_none()
            && self.cloud_init.is_empty()
            && self.cloud_init_dirs.is_empty()
            && self.header_links.is_empty()
    }
}

/// `path` as it is now, recorded before a write, except that a file holding exactly
/// `upstream`, the bash version's content, counts as absent: it is this package's
/// own, so uninstall removes it rather than putting it back.
pub fn original_unless_upstreams(host: &Host, path: &str, upstream: &str) -> Result<SavedFile> {
    let saved = SavedFile::capture(host, path)?;
    Ok(match saved.text.as_deref() == Some(upstream) {
        true => SavedFile {
            existed: false,
            mode: None,
            text: None,
            ..saved
        },
        false => saved,
    })
}

impl Record {
    /// The step's record (empty when there is none).
    pub fn load(step: &Step) -> Result<Record> {
        step.state().load()
    }

    /// Saves the record, or removes the state when it records nothing.
    pub fn save(&self, step: &Step) -> Result<()> {
        step.state().save_or_clear(self)
    }
}

// SPDX-License-Identifier: Apache-2.0
//! The NVMe instance storage (upstream's `setup_local_disks.sh raid0`): every EC2
//! instance-store disk in one RAID0 array, XFS, mounted at [`MOUNT_POINT`], with
//! kubelet's, containerd's and the pod logs' directories on it.
//!
//! Upstream built the array from inside its step (`mdadm --create --force`,
//! `mkfs.xfs -f`, the directories copied under stopped services) and pinned it with
//! mount units naming the file system's UUID, which a stop and start that brings new
//! disks leaves pointing at nothing. Here apply only checks and asks: every disk
//! must be blank or a member of this array ([`probe`]; anything else is refused
//! before any change, exit 2), then it installs `mdadm` and `xfsprogs`, records
//! the [`intent`], copies this binary into the [`STORE`] ([`helper`]) and enables [`UNIT`], which
//! does the work at each boot before containerd and kubelet ([`boot`]). The array
//! comes with the reboot the entry's interrupt gives; post-interrupt-check requires
//! it mounted and the directories bound.
//!
//! A node whose storage is already mounted at [`MOUNT_POINT`] by something else
//! (the AMI's own `setup-local-disks`, the bash package) is left as it is.

pub mod boot;
pub mod intent;
pub mod probe;

use skyhook_core::formats::mountinfo;
use skyhook_core::host::systemd::Systemd;
use skyhook_core::os::pkgmgr::PackageManager;
use skyhook_core::records::state::STATE_ROOT;
use skyhook_core::{Error, Host, Interrupt, Result, Step};

pub use intent::MOUNT_POINT;
use intent::{DIRECTORIES, Intent, STORE};

use crate::record::Record;

/// The boot unit.
pub const UNIT: &str = "skyhook-instance-storage.service";
/// Where the unit goes.
pub const UNIT_PATH: &str = "/etc/systemd/system/skyhook-instance-storage.service";
/// Where this binary is copied for the unit: `<STORE>/<version>/nvidia-setup`, a
/// directory per version, so an upgrade installs its own beside the one the unit
/// still names and then removes the old (statically linked, it runs before
/// anything but the root file system is there).
pub fn helper() -> String {
    format!("{STORE}/{}/nvidia-setup", env!("CARGO_PKG_VERSION"))
}
/// The packages the unit's tools come from.
const TOOLS: [&str; 2] = ["mdadm", "xfsprogs"];

/// What apply does about the instance storage, decided before any change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    /// No instance storage, or storage someone else mounted.
    Nothing,
    /// The boot unit builds and mounts the array.
    Build,
}

/// Reads the disks and refuses, before any change, what the unit would refuse.
pub fn plan(host: &Host) -> Result<Plan> {
    let disks = probe::disks(host)?;
    if disks.is_empty() {
        log::info!("disks: no NVMe instance storage on this node; nothing to assemble");
        return Ok(Plan::Nothing);
    }
    let ours = Intent::load(host)?.is_some();
    let mounted = mountinfo::read_host(host)?.at(MOUNT_POINT).is_some();
    if mounted && !ours {
        log::info!(
            "disks: {} instance-store disk(s), {MOUNT_POINT} already mounted by the node's own setup; left as it is",
            disks.len()
        );
        return Ok(Plan::Nothing);
    }
    if !mounted {
        match probe::layout(host, &disks)? {
            probe::Layout::Blank => log::info!("disks: {} blank instance-store disk(s)", disks.len()),
            probe::Layout::Members(uuid) => log::info!("disks: the instance storage holds the array {uuid}"),
        }
    }
    Ok(Plan::Build)
}

/// The unit's text.
fn unit_text() -> String {
    format!(
        "# Written by the Skyhook package nvidia-setup; removed by its uninstall.\n\
         [Unit]\n\
         Description=RAID0 over the NVMe instance storage at {MOUNT_POINT} (Skyhook nvidia-setup)\n\
         DefaultDependencies=no\n\
         Wants=systemd-udev-settle.service\n\
         After=local-fs.target systemd-udev-settle.service\n\
         Before=containerd.service kubelet.service\n\
         ConditionPathExists={}\n\
         \n\
         [Service]\n\
         Type=oneshot\n\
         RemainAfterExit=yes\n\
         TimeoutStartSec=infinity\n\
         ExecStart={} {}\n\
         \n\
         [Install]\n\
         WantedBy=multi-user.target\n",
        intent::PATH,
        helper(),
        boot::COMMAND
    )
}

/// This binary's bytes (the unit's helper).
fn own_binary() -> Result<Vec<u8>> {
    let exe = std::env::current_exe().map_err(|e| {
        Error::action(format!(
            "disks: cannot locate this binary to copy it to {}: {e}",
            helper()
        ))
    })?;
    std::fs::read(&exe).map_err(|e| Error::action(format!("disks: cannot read {}: {e}", exe.display())))
}

/// Installs the tools, the intent, the helper and the enabled unit; a reboot while
/// the array is not mounted yet.
pub fn apply(step: &Step, record: &mut Record, pm: &PackageManager, plan: Plan) -> Result<Option<Interrupt>> {
    if plan == Plan::Nothing {
        return Ok(None);
    }
    let host = &step.host;
    pm.install(&TOOLS)?;
    if !record.instance_storage {
        record.instance_storage = true;
        record.save(step)?;
    }
    if Intent::load(host)?.is_none() {
        Intent::default().save(host)?;
    }
    if !host.exists(helper()) {
        host.write(helper(), &own_binary()?, 0o755)?;
    }
    let systemd = Systemd::new(host);
    if host.write(UNIT_PATH, unit_text().as_bytes(), 0o644)? {
        systemd.daemon_reload()?;
    }
    remove_other_helpers(host)?;
    if !systemd.is_enabled(UNIT)? {
        systemd.enable(UNIT)?;
    }
    if mountinfo::read_host(host)?.at(MOUNT_POINT).is_some() {
        log::info!("disks: the array is mounted at {MOUNT_POINT}; {UNIT} keeps it so at every boot");
        return Ok(None);
    }
    log::info!(
        "disks: {UNIT} is enabled; at the next boot, before containerd and kubelet, it builds the RAID0 array, \
         mounts it at {MOUNT_POINT} and moves {} onto it (needs a reboot)",
        DIRECTORIES.join(", ")
    );
    Ok(Some(Interrupt::Reboot))
}

/// Removes the helpers of other versions (the unit no longer names them).
fn remove_other_helpers(host: &Host) -> Result<()> {
    let own = env!("CARGO_PKG_VERSION");
    for name in host.list_dir(STORE)? {
        let path = format!("{STORE}/{name}");
        if name != own && host.is_dir(&path) {
            host.remove_scratch_tree(std::path::Path::new(STORE), &path)?;
        }
    }
    Ok(())
}

/// What is unmet: with no intent, instance storage absent or mounted; with one, the
/// unit installed and enabled, and after the reboot (`booted`) the array mounted
/// and the directories bound.
pub fn check(host: &Host, booted: bool) -> Result<Vec<String>> {
    let mut unmet = Vec::new();
    let table = mountinfo::read_host(host)?;
    if Intent::load(host)?.is_none() {
        let disks = probe::disks(host)?;
        if !disks.is_empty() && table.at(MOUNT_POINT).is_none() {
            unmet.push(format!(
                "disks: {} NVMe instance-store disk(s) and nothing mounted at {MOUNT_POINT}; apply enables the unit \
                 that builds the array",
                disks.len()
            ));
        }
        return Ok(unmet);
    }
    if !host.has_content(UNIT_PATH, unit_text().as_bytes(), 0o644)? || host.mode(helper())? != Some(0o755) {
        unmet.push(format!(
            "disks: {UNIT_PATH} or {} is missing or changed; apply installs them",
            helper()
        ));
    }
    if !Systemd::new(host).is_enabled(UNIT)? {
        unmet.push(format!("disks: {UNIT} is not enabled; apply enables it"));
    }
    if booted {
        let unbound: Vec<&str> = DIRECTORIES.into_iter().filter(|d| !boot::bound(&table, d)).collect();
        if table.at(MOUNT_POINT).is_none() || !unbound.is_empty() {
            unmet.push(format!(
                "disks: the array is not mounted at {MOUNT_POINT} with {} bound onto it; see `journalctl -u {UNIT}` \
                 for what the boot unit found",
                DIRECTORIES.join(", ")
            ));
        }
    }
    Ok(unmet)
}

/// uninstall's part: the unit disabled and removed, the [`STORE`] (the helper, the
/// intent) removed.
/// The array stays assembled and mounted until the next boot, its data on its disks.
pub fn release(step: &Step, record: &mut Record) -> Result<()> {
    if !record.instance_storage {
        return Ok(());
    }
    let host = &step.host;
    let systemd = Systemd::new(host);
    // The unit file may be gone (by hand) with its enablement link left.
    let disabled = systemd.disable_installed(UNIT, UNIT_PATH)?;
    if host.remove(UNIT_PATH)? || disabled {
        systemd.daemon_reload()?;
    }
    host.remove_scratch_tree(std::path::Path::new(STATE_ROOT), STORE)?;
    record.instance_storage = false;
    record.save(step)?;
    if mountinfo::read_host(host)?.at(MOUNT_POINT).is_some() {
        log::warn!(
            "disks: {UNIT} is removed; the array stays mounted at {MOUNT_POINT} with {} on it until the next boot. \
             From then on they are the root disk's again (as before the array); the array's disks keep their data \
             until reused, and a later apply of nvidia-setup assembles the same array again",
            DIRECTORIES.join(", ")
        );
    }
    Ok(())
}

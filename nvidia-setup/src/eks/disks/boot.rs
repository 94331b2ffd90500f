// SPDX-License-Identifier: Apache-2.0
//! The boot unit's work (`nvidia-setup assemble-instance-storage`, one of the
//! package's commands, run by [`super::UNIT`] before containerd and kubelet start): the array of the
//! [`Intent`], assembled from its members or created over blank disks, formatted
//! once, mounted at [`MOUNT_POINT`], and the [`DIRECTORIES`] copied onto it once
//! and bound there.
//!
//! Every boot does it again from what the disks and the intent say, so the array
//! survives what upstream's mount units did not: a stop and start that gives the
//! node new, blank disks (the array is made again; the directories are copied again
//! from the root disk, where the originals stay underneath). A disk with any
//! signature other than this array's members is never written to: the unit fails,
//! naming it, and kubelet starts on the root disk. Nothing is moved while
//! containerd or kubelet runs. A boot killed at any instant resumes at the next.

use std::path::Path;

use skyhook_core::formats::mountinfo::{self, MountTable};
use skyhook_core::host::command::Cmd;
use skyhook_core::host::systemd::Systemd;
use skyhook_core::{Error, Host, Result};

use super::intent::{DIRECTORIES, Intent, MOUNT_POINT, Made, PATH};
use super::probe::{self, ARRAY_NAME, Layout, Signature};

/// The command-line word that runs this instead of a Skyhook mode.
pub const COMMAND: &str = "assemble-instance-storage";
/// Where mdadm makes the array's device link.
const ARRAY: &str = "/dev/md/kubernetes";
/// The services that use the directories.
const SERVICES: [&str; 2] = ["containerd.service", "kubelet.service"];
/// The suffix of a directory's copy until it is complete.
const PARTIAL: &str = ".partial";

/// Builds, mounts and binds what the intent asks for; nothing without an intent.
pub fn run(host: &Host) -> Result<()> {
    let Some(mut intent) = Intent::load(host)? else {
        log::info!("instance storage: no intent at {PATH} (uninstalled?); nothing to do");
        return Ok(());
    };
    if mountinfo::read_host(host)?.at(MOUNT_POINT).is_none() {
        let array = array(host, &mut intent)?;
        format(host, &mut intent, &array)?;
        host.create_dir(MOUNT_POINT, 0o755)?;
        let device = array.device.as_str();
        host.run_ok(&Cmd::new("mount").args(["-t", "xfs", "-o", "defaults,noatime", device, MOUNT_POINT]))?;
        log::info!("instance storage: {device} mounted at {MOUNT_POINT}");
    }
    for dir in DIRECTORIES {
        bind(host, dir)?;
    }
    log::info!(
        "instance storage: ready ({} bound onto {MOUNT_POINT})",
        DIRECTORIES.join(", ")
    );
    Ok(())
}

/// The running array this boot uses.
struct Array {
    /// Its device (`/dev/md127`).
    device: String,
    /// Its UUID, as its members' RAID metadata gives it.
    uuid: String,
}

/// The array: already running (udev's incremental assembly at boot), or
/// assembled from its members, or created over blank disks. The running array is
/// found by what holds the disks (`/sys/block/<disk>/holders`), not by a name: udev
/// names an array after the host that made it, and the host's name may change.
fn array(host: &Host, intent: &mut Intent) -> Result<Array> {
    let disks = probe::disks(host)?;
    if disks.is_empty() {
        return Err(Error::action(format!(
            "instance storage: no NVMe instance-store disk on this node (/dev/disk/by-id/*NVMe_Instance_Storage_*), \
             so there is nothing to mount at {MOUNT_POINT}; kubelet and containerd stay on the root disk. An \
             instance type without instance storage needs no nvidia-setup disks: uninstall the entry there"
        )));
    }
    if let Some(md) = holder(host, &disks)? {
        if array_state(host, &md)? != "inactive" {
            log::info!("instance storage: the array is running (/dev/{md})");
            let uuid = member_uuid(host, &disks)?;
            adopt(host, intent, &uuid)?;
            return Ok(Array {
                device: format!("/dev/{md}"),
                uuid,
            });
        }
        // udev began assembling it and some member was missing then: an inactive
        // array holds some of the disks. Stopped, it is assembled whole below.
        host.run_ok(&Cmd::new("mdadm").args(["--stop", &format!("/dev/{md}")]))?;
        log::info!("instance storage: stopped the partly assembled /dev/{md}");
    }
    let devices: Vec<&str> = disks.iter().map(|d| d.device.as_str()).collect();
    let uuid = match probe::layout(host, &disks)? {
        Layout::Blank => create(host, intent, &devices)?,
        Layout::Members(uuid) => {
            host.run_ok(
                &Cmd::new("mdadm")
                    .args(["--assemble", ARRAY])
                    .args(devices.iter().copied()),
            )?;
            adopt(host, intent, &uuid)?;
            log::info!("instance storage: assembled {ARRAY} from {}", devices.join(", "));
            uuid
        }
    };
    match holder(host, &disks)? {
        Some(md) => Ok(Array {
            device: format!("/dev/{md}"),
            uuid,
        }),
        None => Err(Error::action(format!(
            "instance storage: mdadm started {ARRAY}, but no md device holds {} (/sys/block/*/holders); see \
             `cat /proc/mdstat` and `mdadm --detail {ARRAY}`",
            devices.join(", ")
        ))),
    }
}

/// The md device (`md127`) that holds one of `disks`, if any.
fn holder(host: &Host, disks: &[probe::Disk]) -> Result<Option<String>> {
    for disk in disks {
        let name = Path::new(&disk.device)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned());
        let Some(name) = name else { continue };
        let holders = host.list_dir(format!("/sys/block/{name}/holders"))?;
        if let Some(md) = holders.into_iter().find(|h| h.starts_with("md")) {
            return Ok(Some(md));
        }
    }
    Ok(None)
}

/// The md device's `array_state` (`clean`, `active`, `inactive`, …).
fn array_state(host: &Host, md: &str) -> Result<String> {
    let state = host.read_to_string(format!("/sys/block/{md}/md/array_state"))?;
    Ok(state.unwrap_or_default().trim().to_string())
}

/// Records the array `uuid` as made by this unit when a creation was under way and
/// nothing was recorded: the boot that created it was killed before it could say so.
fn adopt(host: &Host, intent: &mut Intent, uuid: &str) -> Result<()> {
    if intent.creating && intent.made.is_none() {
        intent.made = Some(Made {
            uuid: uuid.to_string(),
            formatted: false,
        });
        intent.creating = false;
        intent.save(host)?;
    }
    Ok(())
}

/// Creates the array over blank disks, recording first that a creation is under way
/// and then the array it made; returns its UUID.
fn create(host: &Host, intent: &mut Intent, devices: &[&str]) -> Result<String> {
    intent.creating = true;
    intent.made = None;
    intent.save(host)?;
    let count = devices.len().to_string();
    let mut cmd = Cmd::new("mdadm").args([
        "--create",
        ARRAY,
        "--run",
        "--level=0",
        &format!("--name={ARRAY_NAME}"),
        &format!("--raid-devices={count}"),
    ]);
    if devices.len() == 1 {
        // mdadm asks for --force before a one-disk array.
        cmd = cmd.arg("--force");
    }
    host.run_ok(&cmd.args(devices.iter().copied()))?;
    let Signature::Member { uuid } = probe::signature(host, devices[0])? else {
        return Err(Error::action(format!(
            "instance storage: `mdadm --create {ARRAY}` succeeded but {} shows no RAID metadata named {ARRAY_NAME}; \
             see `mdadm --examine {}`",
            devices[0], devices[0]
        )));
    };
    intent.made = Some(Made {
        uuid: uuid.clone(),
        formatted: false,
    });
    intent.creating = false;
    intent.save(host)?;
    log::info!("instance storage: created RAID0 {ARRAY} over {}", devices.join(", "));
    Ok(uuid)
}

/// Makes the array's XFS file system unless it has one: over an array this unit
/// made and never finished formatting, again with `-f` (it never held data).
fn format(host: &Host, intent: &mut Intent, array: &Array) -> Result<()> {
    let Array { device, uuid } = array;
    let unfinished = intent.made(uuid) && !intent.formatted(uuid);
    let force = match probe::signature(host, device)? {
        Signature::FileSystem(fs) if fs == "xfs" && !unfinished => return Ok(()),
        Signature::Blank => false,
        _ if unfinished => true,
        other => {
            let what = other.foreign().unwrap_or_else(|| "RAID metadata".to_string());
            return Err(Error::action(format!(
                "instance storage: {device} holds {what}, not XFS, and this unit did not make it; nothing was \
                 formatted. Mount it yourself, or wipe it (`wipefs -a {device}`) and reboot"
            )));
        }
    };
    let mut cmd = Cmd::new("mkfs.xfs");
    if force {
        cmd = cmd.arg("-f");
    }
    host.run_ok(&cmd.args(["-l", "su=8b", device]))?;
    intent.made = Some(Made {
        uuid: uuid.clone(),
        formatted: true,
    });
    intent.save(host)?;
    log::info!("instance storage: made an XFS file system on {device}");
    Ok(())
}

/// The array's UUID, read from the first of `disks` that is a member.
fn member_uuid(host: &Host, disks: &[probe::Disk]) -> Result<String> {
    for disk in disks {
        if let Signature::Member { uuid } = probe::signature(host, &disk.device)? {
            return Ok(uuid);
        }
    }
    Ok(String::new())
}

/// Copies `dir` onto the array once (under a scratch name, renamed when complete)
/// and binds the copy over it.
fn bind(host: &Host, dir: &str) -> Result<()> {
    let table = mountinfo::read_host(host)?;
    if bound(&table, dir) {
        return Ok(());
    }
    if let Some(other) = table.at(dir) {
        return Err(Error::action(format!(
            "instance storage: {dir} already has a mount of its own ({} from {}); it is left as it is and not bound \
             onto {MOUNT_POINT}",
            other.fstype, other.source
        )));
    }
    let systemd = Systemd::new(host);
    for service in SERVICES {
        if systemd.is_active(service)? == Some(true) {
            return Err(Error::action(format!(
                "instance storage: {service} is running, so {dir} is not moved under it; this runs at boot before \
                 containerd and kubelet (reboot the node)"
            )));
        }
    }
    let name = Path::new(dir)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let copy = format!("{MOUNT_POINT}/{name}");
    host.create_dir(dir, 0o755)?;
    if !host.exists(&copy) {
        let partial = format!("{copy}{PARTIAL}");
        host.remove_scratch_tree(Path::new(MOUNT_POINT), &partial)?;
        host.run_ok(&Cmd::new("cp").args(["-a", &format!("{dir}/."), &partial]))?;
        host.rename_sibling(&partial, &copy)?;
        log::info!("instance storage: copied {dir} to {copy}");
    }
    host.run_ok(&Cmd::new("mount").args(["--bind", &copy, dir]))?;
    log::info!("instance storage: {copy} bound at {dir}");
    Ok(())
}

/// Whether `dir` is bound from the array's copy of it.
pub fn bound(table: &MountTable, dir: &str) -> bool {
    let name = Path::new(dir)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match (table.at(dir), table.at(MOUNT_POINT)) {
        (Some(d), Some(array)) => d.device == array.device && d.root == format!("/{name}"),
        _ => false,
    }
}

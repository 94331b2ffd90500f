// SPDX-License-Identifier: Apache-2.0
//! NVMe instance storage on a simulated EKS node: disks as files, and stand-ins for
//! the tools the boot unit runs, modelling what the unit relies on.
//!
//! A disk is a regular file (`/dev/nvme1n1`) whose first line is what its first
//! blocks carry: empty (blank), `md UUID HOST:NAME COUNT` (RAID metadata),
//! `fs TYPE UUID` (a file system) or `pt TYPE` (a partition table). EC2 shows it as
//! `/dev/disk/by-id/nvme-Amazon_EC2_NVMe_Instance_Storage_<serial>`. A running
//! array is `/dev/md127` (`array UUID`) with mdadm's link `/dev/md/kubernetes`;
//! what its blocks carry lives in the stand-ins' directory (`md/UUID`), so it
//! survives a reboot as the data on the members does. An array's UUID comes from
//! a counter there and a file system's from its device (the real tools pick random
//! ones), so a killed run and an uninterrupted one make the same.
//!
//! Modelled, read from upstream sources:
//! - [`BLKID`]: util-linux 2.39.3 `misc-utils/blkid.c`, the low-level probe
//!   `blkid -p -o export DEV`: `DEVNAME=` then `TYPE`/`LABEL`/`UUID` (a RAID member
//!   as `TYPE=linux_raid_member`, `LABEL=HOST:NAME`), or `PTTYPE` for a partition
//!   table; exit 2 when nothing is found; exit 2 with an error for a missing device.
//! - [`MDADM`]: mdadm 4.3 `mdadm.c`, `Create.c`, `Assemble.c`: `--create DEV --run
//!   --level=0 --name=N --raid-devices=K [--force] DISK…` (K must be the number of
//!   disks; one disk needs `--force`; `--run` answers mdadm's question about disks
//!   that carry something, so it writes over them), `--assemble DEV DISK…` (every
//!   disk a member of one array, all of its members given, none held by a running or
//!   partly assembled array: "is busy - skipping", exit 2), `--stop DEV`. A started
//!   array holds its disks in sysfs (`/sys/block/<disk>/holders/md127`) and shows its
//!   `array_state` (`/sys/block/md127/md/array_state`: `clean`, or `inactive` while
//!   udev's incremental assembly waits for a member).
//! - [`MKFS_XFS`]: xfsprogs 6.6 `mkfs/xfs_mkfs.c`: refuses a device that carries a
//!   file system, a partition table or RAID metadata unless `-f` (exit 1, "appears
//!   to contain an existing filesystem", "Use the -f option to force overwrite").
//! - [`MOUNT`]: util-linux 2.39.3 `sys-utils/mount.c`: `mount -t xfs -o OPTS DEV DIR`
//!   (exit 32 for a missing mount point or a device without XFS) and
//!   `mount --bind SRC DIR` (the source's file system, its directory as the root),
//!   each a line of `/proc/1/mountinfo`.
//! - [`CP`]: GNU coreutils `cp -a SRC/. DST` (the real `cp`, under the host root).

use super::{CHRONY_CONF, Node, eks};

/// blkid's low-level probe (see the module doc).
pub const BLKID: &str = r#"D=$(dirname "$0"); R="$SKYHOOK_HOST_ROOT"
[ "$1 $2 $3" = "-p -o export" ] || { echo "unexpected: blkid $*" >&2; exit 4; }
dev=$4
[ -e "$R$dev" ] || { echo "blkid: error: $dev: No such file or directory" >&2; exit 2; }
line=$(head -n 1 "$R$dev")
case "$line" in array\ *) line=$(head -n 1 "$D/md/${line#array }") ;; esac
set -- $line
echo "DEVNAME=$dev"
case "$1" in
md) echo "UUID=$2"; echo "UUID_SUB=sub-$2"; echo "LABEL=$3"; echo "TYPE=linux_raid_member"; echo "USAGE=raid" ;;
fs) echo "UUID=$3"; echo "TYPE=$2"; echo "USAGE=filesystem" ;;
pt) echo "PTUUID=0a1b"; echo "PTTYPE=$2" ;;
*) exit 2 ;;
esac"#;

/// mdadm's create and assemble (see the module doc).
pub const MDADM: &str = r#"D=$(dirname "$0"); R="$SKYHOOK_HOST_ROOT"; mkdir -p "$D/md"
running() { [ -e "$R/dev/md127" ] && { echo "mdadm: $1 is already in use." >&2; exit 1; }; }
busy() { [ ! -d "$R/sys/block/$(basename "$1")/holders/md127" ] || { echo "mdadm: $1 is busy - skipping" >&2; exit 2; }; }
# start UUID STATE DISK…: md127 running (STATE clean) or holding its disks unstarted (inactive).
start() {
    uuid=$1; state=$2; shift 2
    echo "array $uuid" > "$R/dev/md127"; mkdir -p "$R/sys/block/md127/md"; echo "$state" > "$R/sys/block/md127/md/array_state"
    for d; do mkdir -p "$R/sys/block/$(basename "$d")/holders/md127"; done
}
verb=$1; array=$2; shift 2
case "$verb" in
--create)
    running "$array"; name=; count=; force=
    while [ $# -gt 0 ]; do case "$1" in
        --run|--level=0) shift ;; --force) force=1; shift ;;
        --name=*) name=${1#--name=}; shift ;; --raid-devices=*) count=${1#--raid-devices=}; shift ;;
        -*) echo "unexpected: mdadm --create $1" >&2; exit 2 ;; *) break ;;
    esac; done
    if [ "$count" = 1 ] && [ -z "$force" ]; then
        echo "mdadm: '1' is an unusual number of drives for an array, so it is probably a mistake.  If you really mean it you will need to specify --force before setting the number of drives." >&2; exit 2
    fi
    [ "$count" = $# ] || { echo "mdadm: You have listed $# devices, but the array has $count" >&2; exit 2; }
    for d; do [ -f "$R$d" ] || { echo "mdadm: cannot open $d: No such file or directory" >&2; exit 1; }; done
    n=$(( $(cat "$D/md-count" 2>/dev/null || echo 0) + 1 )); echo "$n" > "$D/md-count"; uuid="a1b2c3d4:0000000$n"
    for d; do echo "md $uuid node:$name $count" > "$R$d"; done
    : > "$D/md/$uuid"; start "$uuid" clean "$@"; mkdir -p "$R/dev/md"; ln -sfn ../md127 "$R/dev/md/kubernetes"
    echo "mdadm: array $array started." >&2 ;;
--assemble)
    running "$array"; uuid=; count=0; given=$#; disks="$*"
    for d; do busy "$d"; done
    for d; do
        set -- $(head -n 1 "$R$d" 2>/dev/null)
        [ "$1" = md ] || { echo "mdadm: no RAID superblock on $d" >&2; echo "mdadm: $d has no superblock - assembly aborted" >&2; exit 1; }
        [ -z "$uuid" ] || [ "$uuid" = "$2" ] || { echo "mdadm: superblock on $d doesn't match others - assembly aborted" >&2; exit 1; }
        uuid=$2; count=$4
    done
    [ "$given" = "$count" ] || { echo "mdadm: $array assembled from $given drives - not enough to start the array." >&2; exit 1; }
    start "$uuid" clean $disks; mkdir -p "$R/dev/md"; ln -sfn ../md127 "$R/dev/md/kubernetes"
    echo "mdadm: $array has been started with $count drives." >&2 ;;
--stop)
    [ -e "$R$array" ] || { echo "mdadm: error opening $array: No such file or directory" >&2; exit 1; }
    rm -rf "$R/dev/md127" "$R/dev/md" "$R/sys/block/md127" "$R"/sys/block/*/holders/md127
    echo "mdadm: stopped $array" >&2 ;;
*) echo "unexpected: mdadm $verb $array $*" >&2; exit 2 ;;
esac"#;

/// mkfs.xfs (see the module doc).
pub const MKFS_XFS: &str = r#"D=$(dirname "$0"); R="$SKYHOOK_HOST_ROOT"
force=; [ "$1" = -f ] && { force=1; shift; }
[ "$1 $2" = "-l su=8b" ] || { echo "unexpected: mkfs.xfs $*" >&2; exit 1; }
dev=$3; real=$(readlink -f "$R$dev"); store=$real
line=$(head -n 1 "$real"); case "$line" in array\ *) store="$D/md/${line#array }" ;; esac
if [ -s "$store" ] && [ -z "$force" ]; then
    echo "mkfs.xfs: $dev appears to contain an existing filesystem ($(head -n 1 "$store" | cut -d' ' -f2))." >&2
    echo "mkfs.xfs: Use the -f option to force overwrite." >&2; exit 1
fi
echo "fs xfs xfs-on-$(basename "$store")" > "$store""#;

/// mount and mount --bind (see the module doc).
pub const MOUNT: &str = r#"R="$SKYHOOK_HOST_ROOT"; T="$R/proc/1/mountinfo"
id=$(( $(wc -l < "$T") + 40 ))
if [ "$1" = --bind ]; then
    src=$2; dir=$3
    [ -d "$R$src" ] && [ -d "$R$dir" ] || { echo "mount: $dir: special device $src does not exist." >&2; exit 32; }
    best=; for mp in $(awk '{print $5}' "$T"); do
        case "$src" in "$mp"|"${mp%/}"/*) [ ${#mp} -ge ${#best} ] && best=$mp ;; esac
    done
    [ "$best" = / ] && rel=$src || rel=${src#"$best"}
    awk -v mp="$best" -v id="$id" -v rel="$rel" -v dir="$dir" '$5 == mp { line = id " 22 " $3 " " rel " " dir " rw,noatime shared:" id " - " $9 " " $10 " " $11 } END { print line }' "$T" >> "$T"
    exit 0
fi
[ "$1 $3" = "-t -o" ] || { echo "unexpected: mount $*" >&2; exit 1; }
dev=$5; dir=$6
[ -d "$R$dir" ] || { echo "mount: $dir: mount point does not exist." >&2; exit 32; }
real=$(readlink -f "$R$dev"); line=$(head -n 1 "$real")
case "$line" in array\ *) line=$(head -n 1 "$(dirname "$0")/md/${line#array }") ;; esac
case "$line" in "fs xfs "*) ;; *) echo "mount: $dir: wrong fs type, bad option, bad superblock on $dev, missing codepage or helper program, or other error." >&2; exit 32 ;; esac
echo "$id 22 9:127 / $dir rw,noatime shared:$id - xfs /dev/md127 rw,attr2,inode64" >> "$T""#;

/// `cp -a SRC/. DST`, the real cp under the host root.
pub const CP: &str = r#"R="$SKYHOOK_HOST_ROOT"
[ "$1" = -a ] && [ $# = 3 ] || { echo "unexpected: cp $*" >&2; exit 1; }
exec cp -a "$R$2" "$R$3""#;

/// The root file system's line of the host's mount table.
pub const ROOT_MOUNT: &str = "22 1 253:1 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p1 rw\n";

/// Gives the node `serials.len()` blank instance-store disks (`/dev/nvme1n1`, …)
/// under those serials, and the disk tools' stand-ins.
pub fn instance_storage(n: &Node, serials: &[&str]) {
    std::fs::create_dir_all(n.path("/dev/disk/by-id")).unwrap();
    for (i, serial) in serials.iter().enumerate() {
        let dev = format!("nvme{}n1", i + 1);
        n.file(&format!("/dev/{dev}"), "");
        let link = n.path(&format!(
            "/dev/disk/by-id/nvme-Amazon_EC2_NVMe_Instance_Storage_{serial}"
        ));
        std::os::unix::fs::symlink(format!("../../{dev}"), link).unwrap();
    }
    n.stand_in("blkid", BLKID)
        .stand_in("mdadm", MDADM)
        .stand_in("mkfs.xfs", MKFS_XFS)
        .stand_in("mount", MOUNT)
        .stand_in("cp", CP);
}

/// A stop and start of the instance: new blank disks under new serials.
pub fn new_disks(n: &Node, serials: &[&str]) {
    let by_id = n.path("/dev/disk/by-id");
    std::fs::remove_dir_all(&by_id).unwrap();
    for e in std::fs::read_dir(n.path("/dev")).unwrap().flatten() {
        if e.file_name().to_string_lossy().starts_with("nvme") {
            std::fs::remove_file(e.path()).unwrap();
        }
    }
    instance_storage(n, serials);
}

/// A reboot: the mounts and the running array gone; udev's incremental assembly
/// (mdadm's `64-md-raid-assembly.rules`) starts the array when every member is
/// there, under a name of its own (no `/dev/md/kubernetes`); then the boot unit's
/// run when it is enabled (as systemd runs it, before containerd and kubelet).
/// Returns its exit code, `None` when the unit is not enabled.
pub fn reboot(n: &Node) -> Option<i32> {
    power_cycle(n);
    let disks = disk_files(n);
    let members: Vec<&str> = disks
        .iter()
        .filter(|d| n.read(d).is_some_and(|l| l.starts_with("md ")))
        .map(String::as_str)
        .collect();
    if !members.is_empty() && members.len() == disks.len() {
        let mut args = vec!["--assemble", "/dev/md/kubernetes"];
        args.extend(members);
        if n.run_stand_in("mdadm", &args).code == 0 {
            std::fs::remove_dir_all(n.path("/dev/md")).unwrap();
        }
    }
    n.clear_calls();
    boot_unit(n)
}

/// A reboot on which udev assembled nothing (its mdadm rules absent, or a member
/// late): the boot unit finds the disks as they are.
pub fn reboot_without_udev_assembly(n: &Node) -> Option<i32> {
    power_cycle(n);
    boot_unit(n)
}

/// The mounts and the running array gone.
fn power_cycle(n: &Node) {
    n.file("/proc/1/mountinfo", ROOT_MOUNT);
    for p in ["/dev/md127", "/dev/md", "/sys/block"] {
        let p = n.path(p);
        let _ = std::fs::remove_file(&p);
        let _ = std::fs::remove_dir_all(&p);
    }
}

/// The boot unit's run when it is enabled.
fn boot_unit(n: &Node) -> Option<i32> {
    if !n.exists("/etc/systemd/system/multi-user.target.wants/skyhook-instance-storage.service") {
        return None;
    }
    Some(n.run("assemble-instance-storage").code)
}

/// The instance-store disks (`/dev/nvme*`), sorted.
fn disk_files(n: &Node) -> Vec<String> {
    let mut found: Vec<String> = std::fs::read_dir(n.path("/dev"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("nvme"))
        .map(|name| format!("/dev/{name}"))
        .collect();
    found.sort();
    found
}

/// A reboot on which udev's incremental assembly stopped half way (a member came
/// late): an inactive md127 holding the first disk only; then the boot unit's run.
pub fn reboot_partly_assembled(n: &Node) -> Option<i32> {
    power_cycle(n);
    partly_assembled(n);
    boot_unit(n)
}

/// An inactive md127 holding the first disk only.
fn partly_assembled(n: &Node) {
    let first = &disk_files(n)[0];
    let uuid = n.read(first).unwrap().split(' ').nth(1).unwrap().to_string();
    n.file("/dev/md127", format!("array {uuid}\n"))
        .file("/sys/block/md127/md/array_state", "inactive\n");
    let holders = format!("/sys/block/{}/holders/md127", &first["/dev/".len()..]);
    std::fs::create_dir_all(n.path(&holders)).unwrap();
}

/// The mount point of each line of the host's mount table.
pub fn mount_points(n: &Node) -> Vec<String> {
    n.read("/proc/1/mountinfo")
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split(' ').nth(4).map(str::to_string))
        .collect()
}

/// An EKS node with two blank instance-store disks, kubelet's and containerd's
/// directories holding something, chrony configured.
pub fn eks_node() -> Node {
    let n = eks();
    n.file("/etc/chrony/chrony.conf", CHRONY_CONF)
        .file("/var/lib/kubelet/config.yaml", "kind: KubeletConfiguration\n")
        .file("/var/lib/containerd/io.containerd.metadata.v1.bolt/meta.db", "db");
    std::fs::create_dir_all(n.path("/etc/systemd/system/multi-user.target.wants")).unwrap();
    instance_storage(&n, &["AWS11", "AWS22"]);
    n.clear_calls();
    n
}

/// The node of a first boot after apply: no array, blank disks, nothing mounted
/// (after a boot that built them, as a kill-point campaign starts from it).
pub fn first_boot_again(n: &Node) {
    power_cycle(n);
    std::fs::remove_dir_all(n.path("/mnt")).unwrap();
    std::fs::remove_dir_all(n.commands_dir().join("md")).unwrap();
    std::fs::remove_file(n.commands_dir().join("md-count")).unwrap();
    for d in ["/dev/nvme1n1", "/dev/nvme2n1"] {
        n.file(d, "");
    }
    n.file(
        "/var/lib/skyhook-packages/nvidia-setup-instance-storage/intent.json",
        "{}\n",
    );
}

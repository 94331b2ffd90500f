// SPDX-License-Identifier: Apache-2.0
//! The simulated node of the bind-mount tests: a host root with the host's mount
//! table (`/proc/1/mountinfo`: the root file system and the source mount
//! `/mnt/k8s-disks/0`, xfs on `/dev/md127`), a booted systemd, and the `systemctl`
//! stand-in [`SYSTEMCTL`].
#![allow(dead_code)]

pub use skyhook_testkit::{Node, Run};

/// The source mount point of the default configMap.
pub const SOURCE: &str = "/mnt/k8s-disks/0";
/// The target of the default configMap.
pub const TARGET: &str = "/mnt/data";
/// Its mount unit.
pub const UNIT: &str = "mnt-data.mount";
/// Where the unit lives.
pub const UNIT_FILE: &str = "/etc/systemd/system/mnt-data.mount";
/// The link `systemctl enable` makes.
pub const WANTS: &str = "/etc/systemd/system/local-fs.target.wants/mnt-data.mount";
/// The host's mount table.
pub const MOUNTINFO: &str = "/proc/1/mountinfo";

/// The root file system and the source mount.
pub const BASE_MOUNTS: &str = "\
22 1 253:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw
40 22 9:127 / /mnt/k8s-disks/0 rw,noatime shared:30 - xfs /dev/md127 rw,attr2,inode64
";

/// A stand-in for systemd 252's `systemctl` (Debian 12; src/systemctl/ of systemd
/// v252) as far as mount units go:
/// - `daemon-reload`: succeeds, changes nothing the tests look at;
/// - `enable U`: fails (exit 1) when `/etc/systemd/system/U` is missing, else makes the
///   `WantedBy=local-fs.target` link `local-fs.target.wants/U` → the unit file, as
///   the `[Install]` section asks; `disable U` removes that link (exit 0 either way);
/// - `is-enabled U`: `enabled` (0) with the link, else `disabled` (1) with the file,
///   else `not-found` (1);
/// - `start`/`restart U`: mount-unit activation (src/core/mount.c): an
///   `AssertDirectoryNotEmpty=!Where` on a non-empty `Where` fails the start
///   ("Assertion failed", exit 1, nothing mounted); otherwise the kernel's bind of
///   `What` appears as a new line of `/proc/1/mountinfo` at `Where` with `What`'s
///   device, root, file system and source, and the unit is active. Starting an
///   active unit does nothing;
/// - `stop U`: removes the unit's line and makes it inactive;
/// - `is-active U`: `active` (0) or `inactive` (3).
///
/// Anything else is an unknown verb: exit 1.
pub const SYSTEMCTL: &str = r#"
R="$SKYHOOK_HOST_ROOT"; U="$R/etc/systemd/system"; W="$U/local-fs.target.wants"
A="$R/run/systemctl-stand-in.active"; MI="$R/proc/1/mountinfo"
verb="$1"; unit="$2"
case "$verb" in
daemon-reload) exit 0 ;;
enable)
    [ -f "$U/$unit" ] || { echo "Failed to enable unit: Unit file $unit does not exist." >&2; exit 1; }
    mkdir -p "$W" && ln -sfn "/etc/systemd/system/$unit" "$W/$unit" ;;
disable) rm -f "$W/$unit" ;;
is-enabled)
    if [ -L "$W/$unit" ]; then echo enabled; exit 0; fi
    if [ -f "$U/$unit" ]; then echo disabled; exit 1; fi
    echo not-found; exit 1 ;;
is-active)
    if grep -qx "$unit" "$A" 2>/dev/null; then echo active; exit 0; fi
    echo inactive; exit 3 ;;
start|restart)
    f="$U/$unit"; [ -f "$f" ] || { echo "Unit $unit not found." >&2; exit 5; }
    grep -qx "$unit" "$A" 2>/dev/null && exit 0
    what=$(sed -n 's/^What=//p' "$f"); where=$(sed -n 's/^Where=//p' "$f")
    if grep -qx "AssertDirectoryNotEmpty=!$where" "$f" && [ -n "$(ls -A "$R$where" 2>/dev/null)" ]; then
        echo "Assertion failed on job for $unit." >&2; exit 1
    fi
    line=$(awk -v p="$what" -v w="$where" '$5 == p { id = $1; dev = $3; root = $4; n = index($0, " - "); rest = substr($0, n) }
        END { if (dev == "") exit 1; print 900 + NR " " id " " dev " " root " " w " rw,relatime shared:99" rest }' "$MI") \
        || { echo "mount: $what: not a mount point" >&2; exit 32; }
    printf '%s\n' "$line" >> "$MI"; echo "$unit" >> "$A" ;;
stop)
    f="$U/$unit"; where=$(sed -n 's/^Where=//p' "$f" 2>/dev/null)
    awk -v w="$where" '$5 != w' "$MI" > "$MI.new" && mv "$MI.new" "$MI"
    grep -vx "$unit" "$A" > "$A.new" 2>/dev/null; mv "$A.new" "$A" ;;
*) echo "Unknown command verb $verb." >&2; exit 1 ;;
esac
"#;

/// A Debian 12 node with the source mounted, the default configMap and the stand-ins.
pub fn node() -> Node {
    let n = Node::new(env!("CARGO_BIN_EXE_bind-mount"));
    n.systemd_running(true)
        .file("/etc/os-release", "ID=debian\nVERSION_ID=\"12\"\n")
        .file("/etc/fstab", "UUID=1 / ext4 defaults 0 1\n")
        .file(MOUNTINFO, BASE_MOUNTS)
        .stand_in("systemctl", SYSTEMCTL);
    std::fs::create_dir_all(n.path(SOURCE)).unwrap();
    std::fs::write(n.path(&format!("{SOURCE}/payload")), "data on the source").unwrap();
    n.configmap("source", SOURCE).configmap("target", TARGET);
    n
}

/// Adds a line to the host's mount table.
pub fn mount(n: &Node, line: &str) {
    let mut t = n.read(MOUNTINFO).unwrap();
    t.push_str(line);
    t.push('\n');
    n.file(MOUNTINFO, t);
}

/// Runs `mode`, requires `code`, returns the run.
pub fn run(n: &Node, mode: &str, code: i32) -> Run {
    let r = n.run(mode);
    r.expect_code(code);
    r
}

/// Carries out the interrupt the package asks for: what the agent does for
/// `{type: service, services: [<unit>]}` (daemon-reload, then restart).
pub fn interrupt(n: &Node, unit: &str) -> Run {
    n.run_stand_in("systemctl", &["daemon-reload"]);
    n.run_stand_in("systemctl", &["restart", unit])
}

/// Whether the host's mount table has a mount at `path`.
pub fn mounted(n: &Node, path: &str) -> bool {
    n.read(MOUNTINFO)
        .unwrap()
        .lines()
        .any(|l| l.split(' ').nth(4) == Some(path))
}

/// The receipt directory of the default entry.
pub fn receipt(n: &Node) -> String {
    let _ = n;
    "/var/lib/skyhook-packages/bind-mount/test-scr_bind-mount/state.json".into()
}

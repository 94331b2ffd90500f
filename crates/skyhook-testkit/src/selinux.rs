// SPDX-License-Identifier: Apache-2.0
//! A node with SELinux enabled, and the `restorecon` stand-in.
//!
//! [`RESTORECON`] models `restorecon <path>` of policycoreutils 3.5 (RHEL 9's; read in
//! SELinuxProject/selinux 3.5, `policycoreutils/setfiles/setfiles.c`, restorecon(8),
//! and `libselinux/src/selinux_restorecon.c`, which does the work) for one path
//! without options:
//!
//! - The label is looked up in the policy's file contexts for the path; the most
//!   specific entry wins. The stand-in's policy is [`FILE_CONTEXTS`] (a few of the
//!   targeted policy's entries), an entry ending in `/` standing for everything below
//!   that directory (the policy's `(/.*)?`).
//! - Without `-F`, only the type changes: an existing label keeps its user, role and
//!   level (`system_u:object_r:etc_t:s0` → `system_u:object_r:kdump_etc_t:s0`); a file
//!   without one gets `system_u:object_r:<type>:s0`.
//! - A path the file contexts do not name is left as it is, exit 0.
//! - A missing path is an error naming it (`lstat(<path>) failed`), exit 255.
//!
//! The stand-in records what it set in `restorecon.labels` of the commands directory
//! (`<path> <label>`, one line per call), then sets `security.selinux` on the file
//! (with python3's `os.setxattr`). A kernel without SELinux may refuse that attribute
//! on some file systems (ext4 and tmpfs keep it for root, which is what the tests
//! run as here): the record is what tests assert, the attribute where it was kept.
//!
//! Not modelled: regular-expression entries other than a directory's subtree,
//! `<<none>>` entries, customizable types (kept without `-F`), `-R`, `-n`, `-v`,
//! `-F`, several paths, and the policy's `file_contexts.local`.

use crate::Node;

/// The stand-in's file contexts: `(path or directory/, type)`, from the targeted
/// policy's entries for them (Fedora selinux-policy: `kdump.fc`, `bootloader.fc`,
/// `tuned.fc`, `systemd.fc`, `modutils.fc`, `miscfiles.fc`/`files.fc`).
pub const FILE_CONTEXTS: [(&str, &str); 7] = [
    ("/etc/", "etc_t"),
    ("/etc/kdump.conf", "kdump_etc_t"),
    ("/etc/default/grub", "bootloader_etc_t"),
    ("/etc/tuned/", "tuned_etc_t"),
    ("/etc/systemd/system/", "systemd_unit_file_t"),
    ("/etc/modprobe.d/", "modules_conf_t"),
    ("/etc/sysctl.d/", "system_conf_t"),
];

/// The `restorecon` stand-in (see the module's notes).
pub const RESTORECON: &str = r#"R="$SKYHOOK_HOST_ROOT"; D="$(dirname "$0")"
[ $# -eq 1 ] || { echo "restorecon stand-in: one path, no options (got $*)" >&2; exit 2; }
P="$1"; F="$R$P"
[ -e "$F" ] || [ -L "$F" ] || { echo "restorecon: lstat($P) failed: No such file or directory" >&2; exit 255; }
TYPE=; BEST=0
while read -r E T; do
  case "$E" in
    */) case "$P" in "$E"*) ;; *) continue ;; esac ;;
    *) [ "$P" = "$E" ] || continue ;;
  esac
  [ ${#E} -gt $BEST ] && { BEST=${#E}; TYPE=$T; }
done < "$D/restorecon.contexts"
[ -n "$TYPE" ] || exit 0
exec python3 - "$F" "$P" "$TYPE" "$D/restorecon.labels" <<'PY'
import os, sys
f, p, t, log = sys.argv[1:]
try:
    old = os.getxattr(f, "security.selinux", follow_symlinks=False).rstrip(b"\0").decode()
except OSError:
    old = ""
parts = old.split(":") if old.count(":") >= 3 else ["system_u", "object_r", "", "s0"]
parts[2] = t
label = ":".join(parts)
with open(log, "a") as out:
    out.write(f"{p} {label}\n")
try:
    os.setxattr(f, "security.selinux", label.encode() + b"\0", follow_symlinks=False)
except OSError as e:
    print(f"restorecon stand-in: this file system keeps no security.selinux here ({e})", file=sys.stderr)
PY
"#;

/// Makes `node` a node with SELinux enabled (its file system mounted, enforcing) and
/// `restorecon` installed.
pub fn enable(node: &Node) {
    node.file("/sys/fs/selinux/enforce", "1");
    let contexts: String = FILE_CONTEXTS.iter().map(|(p, t)| format!("{p} {t}\n")).collect();
    std::fs::write(node.commands_dir().join("restorecon.contexts"), contexts).expect("write the file contexts");
    node.stand_in("restorecon", RESTORECON);
}

/// The labels `restorecon` set on `node`, in order: `(path, label)`.
pub fn labels(node: &Node) -> Vec<(String, String)> {
    std::fs::read_to_string(node.commands_dir().join("restorecon.labels"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(p, l)| (p.to_string(), l.to_string()))
        .collect()
}

/// The `security.selinux` label of the host file `path` on `node`, when its file
/// system kept one.
pub fn label_of(node: &Node, path: &str) -> Option<String> {
    use std::os::unix::ffi::OsStrExt;
    let real = node.path(path);
    let c = std::ffi::CString::new(real.as_os_str().as_bytes()).ok()?;
    let mut buf = vec![0u8; 256];
    // SAFETY: `c` is a NUL-terminated path and `buf` is writable for its length.
    let n = unsafe {
        nix::libc::lgetxattr(
            c.as_ptr(),
            c"security.selinux".as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    if n < 0 {
        return None;
    }
    buf.truncate(n as usize);
    Some(String::from_utf8_lossy(&buf).trim_end_matches('\0').to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restorecon_sets_the_most_specific_type_and_keeps_user_role_and_level() {
        let node = Node::new("/bin/true");
        enable(&node);
        node.file("/etc/kdump.conf", "path /var/crash\n")
            .file("/etc/tuned/p/tuned.conf", "")
            .file("/var/lib/x", "");
        node.run_stand_in("restorecon", &["/etc/kdump.conf"]).expect_code(0);
        node.run_stand_in("restorecon", &["/etc/tuned/p/tuned.conf"])
            .expect_code(0);
        node.run_stand_in("restorecon", &["/var/lib/x"]).expect_code(0);
        node.run_stand_in("restorecon", &["/etc/missing"])
            .expect_code(255)
            .expect_output("lstat(/etc/missing) failed");
        assert_eq!(
            labels(&node),
            [
                (
                    "/etc/kdump.conf".to_string(),
                    "system_u:object_r:kdump_etc_t:s0".to_string()
                ),
                (
                    "/etc/tuned/p/tuned.conf".to_string(),
                    "system_u:object_r:tuned_etc_t:s0".to_string()
                ),
            ],
            "a path the contexts do not name is left alone"
        );
        match label_of(&node, "/etc/kdump.conf") {
            Some(label) => assert_eq!(label, "system_u:object_r:kdump_etc_t:s0"),
            None => eprintln!("this file system keeps no security.selinux: the record alone is asserted"),
        }
        // Only the type changes: a label with another user and level keeps them.
        let custom = node.path("/etc/default/grub");
        std::fs::create_dir_all(custom.parent().unwrap()).unwrap();
        std::fs::write(&custom, "").unwrap();
        let c = std::ffi::CString::new(custom.to_str().unwrap()).unwrap();
        let old = b"unconfined_u:object_r:etc_t:s0-s0:c0.c1023\0";
        // SAFETY: NUL-terminated path and value of the given length.
        let set = unsafe {
            nix::libc::lsetxattr(
                c.as_ptr(),
                c"security.selinux".as_ptr(),
                old.as_ptr().cast(),
                old.len(),
                0,
            )
        };
        node.run_stand_in("restorecon", &["/etc/default/grub"]).expect_code(0);
        if set == 0 {
            assert_eq!(
                labels(&node).last().unwrap().1,
                "unconfined_u:object_r:bootloader_etc_t:s0-s0:c0.c1023"
            );
        }
    }
}

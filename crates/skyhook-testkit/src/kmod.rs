// SPDX-License-Identifier: Apache-2.0
//! The kernel's loaded modules on a simulated node: a `/proc/modules` under the
//! host root ([`loaded`], [`line`]) and a stand-in for kmod's `rmmod` acting on it
//! ([`RMMOD`], installed by [`install_rmmod`]).
//!
//! `/proc/modules` lines are the kernel's format (kernel/module/procfs.c: name,
//! size, reference count, the modules using it as `a,b,` or `-`, state, address).
//!
//! The stand-in models kmod's `rmmod <name>` (kmod `tools/rmmod.c`,
//! `check_module_inuse`, kmod 30 to 34): a module that is not listed is "not
//! currently loaded" (exit 1); one that other modules use is "in use by: …"
//! (exit 1); one with a reference count other than 0 is "in use" (exit 1); one
//! marked `[permanent]` cannot be removed, as the kernel's `delete_module` answers
//! `EBUSY` (exit 1); otherwise its line leaves `/proc/modules` (exit 0), as the
//! module leaves the kernel. Names are compared with `-` read as `_`, as kmod does.
//! Not modelled: `--force`, `--wait`, paths to `.ko` files, several names at once.

use crate::Node;

/// The `rmmod` stand-in (see the module documentation).
pub const RMMOD: &str = r#"M="$SKYHOOK_HOST_ROOT/proc/modules"
for arg; do :; done
name=$(printf '%s' "$arg" | tr - _)
line=$(grep "^$name " "$M" 2>/dev/null)
if [ -z "$line" ]; then echo "rmmod: ERROR: Module $name is not currently loaded" >&2; exit 1; fi
set -- $line
case "$4" in *'[permanent]'*)
  echo "rmmod: ERROR: could not remove module $name: Device or resource busy" >&2; exit 1 ;;
esac
users=$(printf '%s' "$4" | tr ',' ' ' | sed 's/^-$//')
if [ -n "$(echo $users)" ]; then echo "rmmod: ERROR: Module $name is in use by: $users" >&2; exit 1; fi
if [ "$3" != 0 ]; then echo "rmmod: ERROR: Module $name is in use" >&2; exit 1; fi
grep -v "^$name " "$M" > "$M.rmmod"
mv "$M.rmmod" "$M"
"#;

/// Installs the [`RMMOD`] stand-in on `node`.
pub fn install_rmmod(node: &Node) {
    node.stand_in("rmmod", RMMOD);
}

/// One `/proc/modules` line: `name` with reference count `refcount`, used by
/// `users` (none: `-`), Live.
pub fn line(name: &str, refcount: u32, users: &[&str]) -> String {
    let users = match users {
        [] => "-".to_string(),
        u => u.iter().map(|u| format!("{u},")).collect(),
    };
    format!("{name} 16384 {refcount} {users} Live 0x0000000000000000\n")
}

/// Makes `/proc/modules` list exactly `modules` ([`line`]s).
pub fn loaded(node: &Node, modules: &[String]) {
    node.file("/proc/modules", modules.concat());
}

/// Whether `/proc/modules` lists `name`.
pub fn is_loaded(node: &Node, name: &str) -> bool {
    node.read("/proc/modules")
        .unwrap_or_default()
        .lines()
        .any(|l| l.split_whitespace().next() == Some(name))
}

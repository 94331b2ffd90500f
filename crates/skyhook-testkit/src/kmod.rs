// SPDX-License-Identifier: Apache-2.0
//! The kernel's loaded modules on a simulated node: a `/proc/modules` under the
//! host root ([`loaded`], [`line`]) and stand-ins for kmod's `rmmod` and `modprobe`
//! acting on it ([`RMMOD`], installed by [`install_rmmod`]; [`MODPROBE`], installed
//! with the running kernel's modules by [`install_modprobe`]).
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

/// The `modprobe` stand-in. Models kmod's `modprobe <name>` (kmod `tools/modprobe.c`
/// and `libkmod/libkmod-module.c`, kmod 31 to 34): the module is looked up in
/// `/lib/modules/<release>/modules.dep` of the running kernel (`release` from
/// `/proc/sys/kernel/osrelease`), `-` read as `_`; one the kernel lacks is
/// `modprobe: FATAL: Module <name> not found in directory /lib/modules/<release>`
/// (exit 1); one already loaded is nothing to do (exit 0); otherwise its line joins
/// `/proc/modules` (exit 0). Not modelled: dependencies, aliases, options,
/// `install`/`blacklist` lines of modprobe.d, `-r`, several names at once.
pub const MODPROBE: &str = r#"M="$SKYHOOK_HOST_ROOT/proc/modules"
for arg; do :; done
name=$(printf '%s' "$arg" | tr - _)
rel=$(cat "$SKYHOOK_HOST_ROOT/proc/sys/kernel/osrelease")
dep="$SKYHOOK_HOST_ROOT/lib/modules/$rel/modules.dep"
if ! grep -q "/$name\.ko[^:]*:" "$dep" 2>/dev/null; then
  echo "modprobe: FATAL: Module $name not found in directory /lib/modules/$rel" >&2; exit 1
fi
grep -q "^$name " "$M" 2>/dev/null && exit 0
echo "$name 16384 0 - Live 0x0000000000000000" >> "$M"
"#;

/// Installs the [`MODPROBE`] stand-in on `node`, with `modules` (names) in the
/// running kernel's `modules.dep` (the node's `/proc/sys/kernel/osrelease` must be
/// set first).
pub fn install_modprobe(node: &Node, modules: &[&str]) {
    let release = node
        .read("/proc/sys/kernel/osrelease")
        .expect("the running kernel's release");
    let dep: String = modules
        .iter()
        .map(|m| format!("kernel/drivers/{m}.ko.zst:\n"))
        .collect();
    node.file(&format!("/lib/modules/{}/modules.dep", release.trim()), dep);
    node.stand_in("modprobe", MODPROBE);
}

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

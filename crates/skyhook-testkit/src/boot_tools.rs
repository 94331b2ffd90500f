// SPDX-License-Identifier: Apache-2.0
//! Stand-ins for the boot tools, stateful and behaving as the real ones do, so a
//! package test sees what a node would:
//!
//! - [`GRUBBY`]: grubby-bls, the `grubby` of RHEL 8+, Fedora and Amazon Linux 2023
//!   (Fedora's `grubby-bls` script, grubby 8.40-69; read for this model). Models:
//!   entries are `/boot/loader/entries/*.conf` sorted by name with `sort -Vr`;
//!   `--info=ALL` prints `index`, `kernel` (`/boot` + the `linux` line), `args`
//!   (the `options` without `root=`), `root`, `initrd`, `title`, `id` (the file's
//!   name without `.conf`); `--update-kernel=ALL|<kernel>` with `--remove-args`
//!   (`key=value`: the first such argument; `key`: every argument of the key) and
//!   `--args` (every argument with a key given is removed, then the new ones are
//!   appended at the end, so several arguments of one key are all kept), the
//!   `options` line rewritten and its spacing collapsed; with `ALL` only: every
//!   line of `/etc/default/grub` that starts with `GRUB_CMDLINE_LINUX` (the
//!   `_DEFAULT` one included) becomes `GRUB_CMDLINE_LINUX="<new value>"`, the new
//!   value computed from the file's `GRUB_CMDLINE_LINUX` as sourced, and nothing is
//!   written when that is empty; and `/etc/kernel/cmdline` gets the same edit of
//!   its first line, created first from the last entry in that order (often the
//!   rescue one) when missing (no file, with a message, where `/etc/kernel` does not
//!   exist, as the real one). An argument is taken as given, split at spaces only
//!   (`update_args`, 8.40-69): a double-quoted value (`pci="config_acs=A;B"`) goes on
//!   the `options` lines and `/etc/kernel/cmdline` with its quotes, its key (`pci`)
//!   removing every argument of that key first, and into `/etc/default/grub`
//!   unescaped inside `GRUB_CMDLINE_LINUX="…"`, so that sourcing the file there ends
//!   the value at the inner quote and the assignment at the `;`. Does not model: `$kernelopts` in `options` and
//!   grubenv (RHEL 8.0-8.2), `--no-etc-grub-update`, regular-expression characters
//!   in a key (grubby's sed reads `rd.luks` as `rd?luks`), the second of two
//!   adjacent bare duplicates surviving a removal, globbing by `echo $args`,
//!   `--add-kernel`, `--set-default`, zipl and ppc64le's grub2-mkconfig.
//! - [`GRUBBY_C`]: the C grubby of RHEL 7 and Amazon Linux 2 (rhboot/grubby
//!   `grubby.c`, 8.40, `updateActualImage`; read for this model) on the `linux`,
//!   `linux16` or `linuxefi` lines of `/boot/grub2/grub.cfg`. Models: `--info=ALL`
//!   (`index`, `kernel`, `args`, `root`); `--args`: each argument replaces the first
//!   argument of its key not yet replaced in this call, in place, else is appended;
//!   `--remove-args`: the first argument of the key (of that value, when one is
//!   given). Edits no other file. Does not model: `--add-kernel`, multiboot, `root`
//!   lines, other boot loaders.
//! - [`GRUB2_MKCONFIG`]: grub2-mkconfig before RHEL 9.3: sources `/etc/default/grub`,
//!   writes one `linux` line to the output and leaves BLS entries alone.
//! - [`GRUB2_MKCONFIG_BLS`] and [`GRUB2_MKCONFIG_FEDORA`]: grub2-mkconfig of RHEL
//!   9.3+ and of Fedora on a BLS host (rhboot/grub2, the `grub2` source of both:
//!   branch `rhel-9-main` at 7878971 and `fedora-44` at 5e9e7e4, `util/grub-mkconfig.in`
//!   and `util/grub.d/10_linux.in`, read for this model). Models, of both:
//!   `-o FILE`, `--output=FILE`, `--no-grubenv-update`; any other option is refused
//!   (`Unrecognized option`, the usage, exit 1, nothing written); an output that is
//!   `/boot/efi/EFI/<ID>/grub.cfg` (`ID` of `/etc/os-release`, `rhel` read as
//!   `redhat`) and not empty is refused with its three lines ("will overwrite the GRUB
//!   wrapper", exit 1, nothing written): on RHEL 9 and Fedora 34+ that file is the
//!   EFI stub ([`EFI_STUB`]); `/etc/default/grub` sourced; the output holds the
//!   `kernelopts` fallback and `insmod blscfg` / `blscfg` (the entries are loaded
//!   from `/boot/loader/entries` at boot). When the BLS command line is updated:
//!   every entry's `options` line becomes `root=<root> ro $GRUB_CMDLINE_LINUX
//!   $GRUB_CMDLINE_LINUX_DEFAULT` as one string (spacing kept; a `debug` entry also
//!   gets `$GRUB_CMDLINE_LINUX_DEBUG`), and `/etc/kernel/cmdline` gets the same when
//!   `/etc/kernel` is writable and the file is missing or older than
//!   `/etc/default/grub`; on an ostree host (`/run/ostree-booted`, `/ostree/repo`) no
//!   entry is touched. Which runs update: RHEL 9.3+ only with `--update-bls-cmdline`
//!   (or when `/etc/default/grub` does not set `GRUB_ENABLE_BLSCFG=true`); Fedora,
//!   whose grub2-mkconfig has no such option, at every run unless
//!   `--no-grubenv-update`. Not modelled: grub-probe (the root device is always
//!   `/dev/mapper/rl-root`), the other `/etc/grub.d` scripts and their menu entries,
//!   grubenv, the installer (`/run/install`), ppc64le's `populate_menu`.
//! - [`EFI_STUB`]: that stub, as RHEL 9 / Fedora 34+ install it on EFI hosts.
//! - [`UPDATE_GRUB`]: Debian's update-grub (`grub-mkconfig -o /boot/grub/grub.cfg`,
//!   GRUB 2.06/2.12 with Debian's patches; read for this model): sources
//!   `/etc/default/grub`, then each `/etc/default/grub.d/*.cfg` in name order (Debian's
//!   patch), and writes the default entry's `linux` line with `GRUB_CMDLINE_LINUX` then
//!   `GRUB_CMDLINE_LINUX_DEFAULT` as they stand after the last file, then (unless
//!   `GRUB_DISABLE_RECOVERY=true`) the recovery entry's, in the "Advanced options"
//!   submenu, with Ubuntu's recovery arguments (`recovery nomodeset dis_ucode_ldr`:
//!   Ubuntu's `mkconfig-ubuntu-recovery` and `ubuntu-recovery-dis_ucode_ldr` patches,
//!   x86) then `GRUB_CMDLINE_LINUX` alone; with tuned's `/etc/grub.d/00_tuned`
//!   installed, that script's section setting `tuned_params` from
//!   `/etc/tuned/bootcmdline` first. Absolute `/etc/` paths the sourced files read are
//!   read under the scratch root. Does not model: other `/etc/grub.d` scripts, several
//!   kernels, the submenu's second entry of the default kernel (its arguments are the
//!   default entry's), the other `GRUB_DISABLE_*`. The one update-grub of every
//!   package's tests.
//! - kdumpctl and the kernel-install hook: [`crate::kdumpctl`].
//! - [`killed_once`]: a stand-in that kills the step calling it the first time.

use std::fs;

use crate::Node;

/// The grubby-bls stand-in (see the module's list).
pub const GRUBBY: &str = r#"R="$SKYHOOK_HOST_ROOT"; E="$R/boot/loader/entries"; G="$R/etc/default/grub"; K="$R/etc/kernel/cmdline"
kernel=""; add=""; rm=""; info=""
for a; do case "$a" in
  --info=*) info="${a#--info=}" ;;
  --update-kernel=*) kernel="${a#--update-kernel=}" ;;
  --args=*) add="${a#--args=}" ;;
  --remove-args=*) rm="${a#--remove-args=}" ;;
  *) echo "grubby: invalid option \"$a\"" >&2; exit 1 ;;
esac; done
update_args() { # $1: arguments; prints them with $rm removed and $add put on (grubby-bls's update_args)
  awk -v cur="$1" -v add="$add" -v rm="$rm" 'function key(t) { sub(/=.*/, "", t); return t }
  BEGIN {
    n = split(cur, t, " "); nr = split(rm, r, " "); na = split(add, a, " ")
    for (j = 1; j <= nr; j++) for (i = 1; i <= n; i++) {
      if (index(r[j], "=")) { if (t[i] == r[j]) { t[i] = ""; break } } else if (t[i] != "" && key(t[i]) == r[j]) t[i] = ""
    }
    for (j = 1; j <= na; j++) for (i = 1; i <= n; i++) if (t[i] != "" && key(t[i]) == key(a[j])) t[i] = ""
    out = ""; for (i = 1; i <= n; i++) if (t[i] != "") out = out (out == "" ? "" : " ") t[i]
    for (j = 1; j <= na; j++) out = out (out == "" ? "" : " ") a[j]
    print out
  }'
}
sed_escape() { printf '%s' "$1" | sed -e 's/[\/&]/\\&/g'; }
files=$(for f in "$E"/*.conf; do [ -f "$f" ] && basename "$f" .conf; done | sort -Vr)
i=0; last=""
for id in $files; do
  f="$E/$id.conf"; last="$f"
  k="/boot$(sed -n 's/^linux[ 	]*//p' "$f")"
  opts="$(sed -n 's/^options[ 	]*//p' "$f")"
  if [ -n "$info" ]; then
    root="$(printf '%s\n' $opts | sed -n 's/^root=//p' | head -n 1)"
    args="$(printf '%s\n' $opts | grep -v '^root=' | tr '\n' ' ' | sed 's/ $//')"
    echo "index=$i"; echo "kernel=\"$k\""; echo "args=\"$args\""; [ -n "$root" ] && echo "root=\"$root\""
    echo "initrd=\"/boot$(sed -n 's/^initrd[ 	]*//p' "$f")\""; echo "title=\"$(sed -n 's/^title[ 	]*//p' "$f")\""; echo "id=\"$id\""
  elif [ "$kernel" = ALL ] || [ "$kernel" = "$k" ]; then
    new="$(update_args "$opts")"
    sed -i -e "s/^options.*/options $(sed_escape "$new")/" "$f"
  fi
  i=$((i+1))
done
[ -n "$info" ] && exit 0
if [ "$kernel" = ALL ] && { [ -n "$add" ] || [ -n "$rm" ]; }; then
  if [ -f "$G" ]; then
    old="$(. "$G"; echo $GRUB_CMDLINE_LINUX)"
    if [ -n "$old" ]; then
      sed -i -e "s/^GRUB_CMDLINE_LINUX.*/GRUB_CMDLINE_LINUX=\"$(sed_escape "$(update_args "$old")")\"/" "$G"
    fi
  fi
  # without /etc/kernel (systemd ships it) these fail as the real ones do: a message, no file
  [ -f "$K" ] || echo $(sed -n 's/^options[ 	]*//p' "$last") > "$K"
  read -r old < "$K" && echo "$(update_args "$old")" > "$K"
fi
exit 0"#;

/// The C grubby stand-in of RHEL 7 and Amazon Linux 2 (see the module's list).
pub const GRUBBY_C: &str = r#"R="$SKYHOOK_HOST_ROOT"; C="$R/boot/grub2/grub.cfg"
kernel=""; add=""; rm=""; info=""
for a; do case "$a" in
  --info=*) info="${a#--info=}" ;;
  --update-kernel=*) kernel="${a#--update-kernel=}" ;;
  --args=*) add="${a#--args=}" ;;
  --remove-args=*) rm="${a#--remove-args=}" ;;
  *) echo "grubby: bad argument $a" >&2; exit 1 ;;
esac; done
awk -v info="$info" -v kernel="$kernel" -v add="$add" -v rm="$rm" 'function key(t) { sub(/=.*/, "", t); return t }
  $1 ~ /^linux(16|efi)?$/ {
    k = $2; if (k !~ /^\/boot/) k = "/boot" k
    if (info != "") {
      args = ""; root = ""
      for (i = 3; i <= NF; i++) if ($i ~ /^root=/ && root == "") root = substr($i, 6); else args = args (args == "" ? "" : " ") $i
      print "index=" idx++; print "kernel=" k; print "args=\"" args "\""; if (root != "") print "root=" root
      next
    }
    if (kernel == "ALL" || kernel == k) {
      n = NF; for (i = 1; i <= n; i++) { t[i] = $i; used[i] = 0 }
      na = split(add, a, " ")
      for (j = 1; j <= na; j++) {
        for (i = 3; i <= n; i++) if (!used[i] && key(t[i]) == key(a[j])) break
        if (i <= n) { t[i] = a[j]; used[i] = 1 } else { t[++n] = a[j]; used[n] = 1 }
      }
      nr = split(rm, r, " ")
      for (j = 1; j <= nr; j++) for (i = 3; i <= n; i++)
        if (t[i] != "" && key(t[i]) == key(r[j]) && (index(r[j], "=") == 0 || t[i] == r[j])) { t[i] = ""; break }
      match($0, /^[ \t]*/); line = substr($0, 1, RLENGTH) t[1]
      for (i = 2; i <= n; i++) if (t[i] != "") line = line " " t[i]
      print line; next
    }
  }
  info == "" { print }' "$C" > "$C.tmp" || exit 1
if [ -n "$info" ]; then cat "$C.tmp"; rm -f "$C.tmp"; else mv "$C.tmp" "$C"; fi"#;

/// grub2-mkconfig before RHEL 9.3 (`-o <output>`): one `linux` line from the GRUB defaults.
pub const GRUB2_MKCONFIG: &str = r#"R="$SKYHOOK_HOST_ROOT"
[ "$1" = -o ] || { echo "unexpected: grub2-mkconfig $*" >&2; exit 1; }
GRUB_CMDLINE_LINUX=""; . "$R/etc/default/grub"
mkdir -p "$(dirname "$R$2")"
printf "menuentry 'Rocky Linux' {\n\tlinux /vmlinuz-5.14.0-427.el9.x86_64 root=/dev/mapper/rl-root ro %s\n}\n" "$GRUB_CMDLINE_LINUX" > "$R$2""#;

/// Debian's update-grub (see the module's list): `/boot/grub/grub.cfg` from the GRUB
/// defaults and their drop-ins.
pub const UPDATE_GRUB: &str = r#"R="$SKYHOOK_HOST_ROOT"; out="$R/boot/grub/grub.cfg"
[ $# -eq 0 ] || { echo "unexpected: update-grub $*" >&2; exit 1; }
under_root() { sed "s#\([[:space:]\"'=]\)/etc/#\1$R/etc/#g" "$1"; }
lines=$(
  GRUB_CMDLINE_LINUX=""; GRUB_CMDLINE_LINUX_DEFAULT=""; GRUB_DISABLE_RECOVERY=""
  for f in "$R/etc/default/grub" "$R"/etc/default/grub.d/*.cfg; do
    [ -f "$f" ] && eval "$(under_root "$f")"
  done
  echo "$GRUB_CMDLINE_LINUX $GRUB_CMDLINE_LINUX_DEFAULT"
  [ "$GRUB_DISABLE_RECOVERY" = true ] || echo "recovery nomodeset dis_ucode_ldr $GRUB_CMDLINE_LINUX"
) || exit 1
args=$(printf '%s\n' "$lines" | sed -n 1p); recovery=$(printf '%s\n' "$lines" | sed -n 2p)
mkdir -p "$R/boot/grub"
{
  echo '### BEGIN /etc/grub.d/00_header ###'; echo 'set timeout=5'; echo '### END /etc/grub.d/00_header ###'
  if [ -f "$R/etc/grub.d/00_tuned" ]; then
    TUNED_BOOT_CMDLINE=""; [ -f "$R/etc/tuned/bootcmdline" ] && . "$R/etc/tuned/bootcmdline"
    echo '### BEGIN /etc/grub.d/00_tuned ###'; echo "set tuned_params=\"$TUNED_BOOT_CMDLINE\""; echo '### END /etc/grub.d/00_tuned ###'
  fi
  echo '### BEGIN /etc/grub.d/10_linux ###'
  echo "menuentry 'Ubuntu' {"
  printf '\tlinux\t/boot/vmlinuz-6.8.0-31-generic root=UUID=0b1c ro %s\n' "$args"
  echo '}'
  if [ -n "$recovery" ]; then
    echo "submenu 'Advanced options for Ubuntu' {"
    echo "	menuentry 'Ubuntu, with Linux 6.8.0-31-generic (recovery mode)' {"
    printf '\t\tlinux\t/boot/vmlinuz-6.8.0-31-generic root=UUID=0b1c ro %s\n' "$recovery"
    echo '	}'
    echo '}'
  fi
  echo '### END /etc/grub.d/10_linux ###'
} > "$out.new" && mv "$out.new" "$out"
echo 'Generating grub configuration file ...' >&2; echo done >&2"#;
/// grub2-mkconfig of a BLS host, RHEL 9.3+ or Fedora (see the module's list): the
/// option parsing of one (`$1`), when the BLS command line is updated (`$2`).
macro_rules! grub2_mkconfig_bls {
    ($option:literal, $update:literal) => {
        concat!(
            r#"R="$SKYHOOK_HOST_ROOT"; out=""; bls_cmdline_update=""; grubenv=yes
while [ $# -gt 0 ]; do a=$1; shift; case "$a" in
  -o|--output) out=$1; shift ;;
  --output=*) out=${a#--output=} ;;
  --no-grubenv-update) grubenv=no ;;
"#,
            $option,
            r#"  -*) echo "Unrecognized option \`$a'" >&2; echo "Usage: grub2-mkconfig [OPTION]" >&2; exit 1 ;;
esac; done
os=$(sed -n 's/^ID=//p' "$R/etc/os-release" | sed -e 's/rhel/redhat/' -e 's/"//g')
if [ -s "$R$out" ] && [ "$out" = "/boot/efi/EFI/$os/grub.cfg" ]; then
  echo "Running \`grub2-mkconfig -o $out' will overwrite the GRUB wrapper." >&2
  echo "Please run \`grub2-mkconfig -o /boot/grub2/grub.cfg' instead to update grub.cfg." >&2
  echo "GRUB configuration file was not updated." >&2; exit 1
fi
GRUB_CMDLINE_LINUX=""; GRUB_CMDLINE_LINUX_DEFAULT=""; GRUB_CMDLINE_LINUX_DEBUG=""; GRUB_ENABLE_BLSCFG=""
if [ -f "$R/etc/default/grub" ]; then . "$R/etc/default/grub"; fi
cmdline="root=/dev/mapper/rl-root ro ${GRUB_CMDLINE_LINUX} ${GRUB_CMDLINE_LINUX_DEFAULT}"
"#,
            $update,
            r#"
if [ "$update" = yes ]; then
  if [ -w "$R/etc/kernel" ] && { [ ! -f "$R/etc/kernel/cmdline" ] || [ "$R/etc/kernel/cmdline" -ot "$R/etc/default/grub" ]; }; then
    echo "$cmdline" > "$R/etc/kernel/cmdline"
  fi
  if [ ! -f "$R/run/ostree-booted" ] && [ ! -d "$R/ostree/repo" ]; then
    for f in "$R"/boot/loader/entries/*.conf; do
      [ -f "$f" ] || continue
      options="$cmdline"
      case "$f" in *debug*) options="$options ${GRUB_CMDLINE_LINUX_DEBUG}" ;; esac
      awk -v new="$options" '/^options/ { print "options " new; next } { print }' "$f" > "$f.tmp" && mv "$f.tmp" "$f"
    done
  fi
fi
mkdir -p "$(dirname "$R$out")"
printf '### BEGIN /etc/grub.d/10_linux ###\nif [ -z "${kernelopts}" ]; then\n  set kernelopts="%s"\nfi\n\ninsmod blscfg\nblscfg\n### END /etc/grub.d/10_linux ###\n' "$cmdline" > "$R$out""#
        )
    };
}

/// grub2-mkconfig of RHEL 9.3+ (`[--update-bls-cmdline] -o <output>`): a grub.cfg
/// loading the BLS entries, whose `options` change only with the option (see the
/// module's list).
pub const GRUB2_MKCONFIG_BLS: &str = grub2_mkconfig_bls!(
    "  --update-bls-cmdline) bls_cmdline_update=true ;;\n",
    r#"update=yes; if [ "$GRUB_ENABLE_BLSCFG" = true ] && [ "$bls_cmdline_update" != true ]; then update=no; fi"#
);

/// grub2-mkconfig of Fedora (`-o <output>`), which has no `--update-bls-cmdline`
/// and rewrites every BLS entry's `options` at each run (see the module's list).
pub const GRUB2_MKCONFIG_FEDORA: &str = grub2_mkconfig_bls!("", r#"update=$grubenv"#);

/// The EFI System Partition's `grub.cfg` of RHEL 9+ / Fedora 34+: a stub that finds
/// the boot partition and loads `/boot/grub2/grub.cfg`; no tool may overwrite it.
pub const EFI_STUB: &str = "search --no-floppy --fs-uuid --set=dev 0a1b-2c3d\nset prefix=($dev)/grub2\n\nexport $prefix\nconfigfile $prefix/grub.cfg\n";

/// The BLS entry GRUB's Fedora `20-grub.install` (grub2 2.06, RHEL 9) writes for a
/// kernel installed on a BLS node: its `options` are `/etc/kernel/cmdline` (its
/// words, as bash's `read -a` splits them) when that file exists; otherwise (where
/// the real hook reads `/usr/lib/kernel/cmdline` or `/proc/cmdline`) the options of
/// the first entry that is not a rescue one. Does not model: its grub2-mkconfig run
/// when `/etc/kernel/cmdline` is older than `/etc/default/grub`, debug entries,
/// `saved_entry`.
pub fn add_kernel_entry(node: &Node, version: &str) {
    let options = match node.read("/etc/kernel/cmdline") {
        Some(text) => text.split_whitespace().collect::<Vec<_>>().join(" "),
        None => {
            let entries = node.path("/boot/loader/entries");
            let mut names: Vec<_> = fs::read_dir(&entries)
                .expect("BLS entries")
                .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".conf") && !n.contains("rescue"))
                .collect();
            names.sort();
            let first = names.first().expect("a non-rescue BLS entry");
            bls_options(node, &format!("/boot/loader/entries/{first}"))
        }
    };
    node.file(
        &format!("/boot/loader/entries/0a1b-{version}.conf"),
        bls_entry(version, &options),
    );
}

/// `body` as a stand-in that, the first time it runs, kills the step that called
/// it (SIGKILL to its parent) before doing anything, as a node losing power or the
/// agent killing the pod would; later runs do what `body` says.
pub fn killed_once(node: &Node, body: &str) -> String {
    let marker = node.commands_dir().join(".killed-once");
    let _ = fs::remove_file(&marker);
    format!(
        "if [ ! -e '{m}' ]; then : > '{m}'; kill -KILL $PPID; exit 137; fi\n{body}",
        m = marker.display()
    )
}

/// A BLS entry file for `kernel` (`5.14.0-427.el9.x86_64`) with `options`.
pub fn bls_entry(kernel: &str, options: &str) -> String {
    format!(
        "title Linux ({kernel})\nversion {kernel}\nlinux /vmlinuz-{kernel}\ninitrd /initramfs-{kernel}.img\noptions {options}\n"
    )
}

/// The `options` of the BLS entry at `path` on `node`.
pub fn bls_options(node: &Node, path: &str) -> String {
    node.read(path)
        .expect("BLS entry")
        .lines()
        .find_map(|l| l.strip_prefix("options ").map(str::to_string))
        .expect("options line")
}

/// `var` as a shell sourcing the file at `path` on `node` gets it (as
/// grub-mkconfig sources `/etc/default/grub`), with what the shell said on stderr.
pub fn sourced(node: &Node, path: &str, var: &str) -> (String, String) {
    let out = crate::output_gated(
        std::process::Command::new("sh")
            .arg("-c")
            .arg(format!(". \"$1\"; printf '%s' \"${var}\""))
            .arg("sh")
            .arg(node.path(path)),
    )
    .expect("sh runs");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

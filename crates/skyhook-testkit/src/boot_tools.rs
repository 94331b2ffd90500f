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
//!   patch). Absolute `/etc/` paths the sourced files read are read under the scratch
//!   root. With tuned's `/etc/grub.d/00_tuned` installed, that script's section
//!   setting `tuned_params` from `/etc/tuned/bootcmdline` comes after the header. Two
//!   shapes of output:
//!   - no `/boot/vmlinuz-*` on the node: the fixed file every package's tests were
//!     written against, kept byte for byte: `set timeout=5`, then the default entry's
//!     `linux` line of kernel 6.8.0-31-generic with `GRUB_CMDLINE_LINUX` then
//!     `GRUB_CMDLINE_LINUX_DEFAULT` as they stand after the last file, then (unless
//!     `GRUB_DISABLE_RECOVERY=true`) the recovery entry's, in the "Advanced options"
//!     submenu, with Ubuntu's recovery arguments (`recovery nomodeset dis_ucode_ldr`:
//!     Ubuntu's `mkconfig-ubuntu-recovery` and `ubuntu-recovery-dis_ucode_ldr` patches,
//!     x86) then `GRUB_CMDLINE_LINUX` alone; no menu entry ids, no `default`.
//!   - one or more `/boot/vmlinuz-*` (not `*.dpkg-*`, `*.rpmsave`, `*.rpmnew`,
//!     `*.sig`, `README*`): the menu of Debian's `grub-common` 2.12-9+deb13u4 (trixie:
//!     `/etc/grub.d/00_header` and `10_linux`, `/usr/sbin/grub-mkconfig`,
//!     `/usr/share/grub/grub-mkconfig_lib`; read for this model, and `10_linux` run on
//!     two kernels to compare). `00_header`: `load_env` when `$prefix/grubenv` is not
//!     empty (whatever `GRUB_DEFAULT` says), then `set default="${next_entry}"` when
//!     one is set, else `set default="<GRUB_DEFAULT>"`: `0` when unset,
//!     `${saved_entry}` for `saved`, else the value as given; `menuentry_id_option`;
//!     `set timeout=<GRUB_TIMEOUT, 5 when unset>`. `10_linux`: the kernels newest
//!     first (`sort -V -r` of the file names), the version being the file name after
//!     its leading non-digits and `-`; the OS name is `GRUB_DISTRIBUTOR` (`Ubuntu` when
//!     unset: Ubuntu's `/etc/default/grub` sets it from `lsb_release -i -s`, where the
//!     real script, given none, would say `GNU/Linux`), with ` GNU/Linux` appended
//!     unless it is `Ubuntu`, `Kubuntu` or ends in `GNU/Linux`, and the first
//!     `--class` its first word in lower case; titles quoted as `grub_quote` does.
//!     The newest kernel gets the top-level `menuentry '<OS>' … $menuentry_id_option
//!     'gnulinux-simple-0b1c'`, then `submenu 'Advanced options for <OS>'
//!     $menuentry_id_option 'gnulinux-advanced-0b1c'` holds, for each kernel, `'<OS>,
//!     with Linux <ver>'` (`gnulinux-<ver>-advanced-0b1c`) and, unless
//!     `GRUB_DISABLE_RECOVERY=true`, `'<OS>, with Linux <ver> (<GRUB_RECOVERY_TITLE,
//!     recovery mode when unset>)'` (`gnulinux-<ver>-recovery-0b1c`), indented by a tab;
//!     `GRUB_DISABLE_SUBMENU=y|yes|true` drops the simple entry and the submenu and puts
//!     those entries at the top level. Each entry: `linux\t/boot/<file> root=UUID=0b1c
//!     ro <args>` with the same arguments as above (recovery ones for the recovery
//!     entries), and `initrd\t/boot/initrd.img-<ver>` when that file exists; stderr
//!     says `Found linux image: …` (and `Found initrd image: …`) per kernel.
//!
//!   Does not model: other `/etc/grub.d` scripts and the rest of `00_header` and
//!   `10_linux`'s output (`savedefault`, `recordfail`, `load_video`, `insmod`,
//!   `search`, `echo 'Loading …'`, the gfxmode setup), `root=` being the device
//!   (`/dev/…`) when the root file system's `/dev/disk/by-uuid` link or the kernel's
//!   initrd is missing (always `UUID=0b1c` here), Debian's own recovery arguments
//!   (`single`; `GRUB_CMDLINE_LINUX_RECOVERY`), `.old` kernels, `/vmlinuz-*` and
//!   `/boot/kernel-*`, other initrd names, `GRUB_TOP_LEVEL`, `GRUB_SAVEDEFAULT`, the
//!   title correction for an old-style `GRUB_DEFAULT` title, a separate `/boot`
//!   partition, the other `GRUB_DISABLE_*`. The one update-grub of every package's
//!   tests.
//! - [`GRUB_EDITENV`]: grub-editenv (GRUB 2.12, `util/grub-editenv.c` and
//!   `util/editenv.c`, `grub-core/lib/envblk.c`; checked byte for byte against the
//!   binary of Debian's `grub-common` 2.06-13+deb12u2, whose messages and block are
//!   those in the strings of 2.12-9+deb13u4's): `[-v] FILE COMMAND`, one argument
//!   being the command on `/boot/grub/grubenv`, as is a `FILE` of `-`; `FILE` is a node
//!   path, read under the scratch root (a relative one too). The block is `# GRUB
//!   Environment Block\n# WARNING: Do not edit this file by tools other than
//!   grub-editenv!!!\n`, the variables as `name=value\n` lines, and `#` up to the
//!   file's size (1024 bytes for a new one). `create` writes a blank block (over an
//!   existing one) through `FILE.new` and a rename; `list`, `set` and `unset` create it
//!   first when missing (``cannot open `FILE.new'``, exit 1, when its directory is
//!   missing), refuse a file not starting with the signature (`invalid environment
//!   block`, exit 1), and rewrite it in place at its size; `list` prints `name=value`
//!   per variable, comments skipped, `\` escapes undone; `set NAME=VALUE…` replaces a
//!   variable's value where it stands or appends it after the last line, a `\` in
//!   the value written as `\\`, refuses an argument without `=` (`invalid parameter
//!   X.`, exit 1, nothing written) and a block that would outgrow the file
//!   (`environment block too small.`, exit 1, nothing written); `unset NAME…` removes
//!   them, absent ones ignored; no command: exit 64; an unknown one: `Unknown command`,
//!   exit 1. Does not model: newlines in values, option arguments after the file,
//!   `--help`, the btrfs/zfs special envblk storage.
//! - [`GRUB_SET_DEFAULT`]: grub-set-default (GRUB 2.12 `util/grub-set-default.in`,
//!   as Debian's `grub2-common` 2.12-9+deb13u4 installs it at
//!   `/usr/sbin/grub-set-default`; read for this model): `[--boot-directory=DIR |
//!   --root-directory=DIR] MENU_ENTRY`, then in `DIR/grub/grubenv` (`/boot/grub/grubenv`)
//!   as grub-editenv (above) does: `unset prev_saved_entry`, `unset next_entry`, `set
//!   saved_entry=MENU_ENTRY`, each a separate run whose failure (a missing directory)
//!   prints grub-editenv's error and does not change the exit status, 0. No entry:
//!   `Menu entry not specified.` on stderr, the usage on stdout, exit 1; two: `More
//!   than one menu entry?`, exit 1; an unknown option: `Unrecognized option`, exit 1;
//!   `-h`, `-V`. The entry is not checked against any `grub.cfg`, as the real one
//!   does not.
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
/// defaults and their drop-ins; one menu entry per `/boot/vmlinuz-*` when there are
/// any, else the fixed single-kernel file every package's tests have compared since
/// the start.
pub const UPDATE_GRUB: &str = r#"R="$SKYHOOK_HOST_ROOT"; out="$R/boot/grub/grub.cfg"
[ $# -eq 0 ] || { echo "unexpected: update-grub $*" >&2; exit 1; }
under_root() { sed "s#\([[:space:]\"'=]\)/etc/#\1$R/etc/#g" "$1"; }
kernels=$(for k in "$R"/boot/vmlinuz-*; do
  [ -f "$k" ] || continue
  case "$k" in *.dpkg-*|*.rpmsave|*.rpmnew|*/README*|*.sig) continue ;; esac
  printf '%s\n' "${k##*/}"
done | LC_ALL=C sort -V -r)
if [ -n "$kernels" ]; then
  echo 'Generating grub configuration file ...' >&2
  exec 3>&1
  cfg=$(
    GRUB_CMDLINE_LINUX=""; GRUB_CMDLINE_LINUX_DEFAULT=""; GRUB_DISABLE_RECOVERY=""; GRUB_DEFAULT=""; GRUB_TIMEOUT=""
    GRUB_DISTRIBUTOR=""; GRUB_DISABLE_SUBMENU=""; GRUB_RECOVERY_TITLE=""
    for f in "$R/etc/default/grub" "$R"/etc/default/grub.d/*.cfg; do
      [ -f "$f" ] && eval "$(under_root "$f")"
    done >&3
    os=${GRUB_DISTRIBUTOR:-Ubuntu}
    class="--class $(printf '%s\n' "$os" | tr 'A-Z' 'a-z' | cut -d' ' -f1 | LC_ALL=C sed 's/[^[:alnum:]_]/_/g')"
    class="$class --class gnu-linux --class gnu --class os"
    case "$os" in Ubuntu|Kubuntu|*GNU/Linux) ;; *) os="$os GNU/Linux" ;; esac
    case "$GRUB_DEFAULT" in '') GRUB_DEFAULT=0 ;; saved) GRUB_DEFAULT='${saved_entry}' ;; esac
    case "$GRUB_DISABLE_SUBMENU" in y|yes) GRUB_DISABLE_SUBMENU=true ;; esac
    args="$GRUB_CMDLINE_LINUX $GRUB_CMDLINE_LINUX_DEFAULT"
    recovery="recovery nomodeset dis_ucode_ldr $GRUB_CMDLINE_LINUX"
    quote() { printf '%s' "$1" | sed "s/'/'\\\\''/g"; }
    entry() { # $1 indentation, $2 title, $3 id, $4 image, $5 version, $6 arguments
      printf "%smenuentry '%s' %s \$menuentry_id_option '%s' {\n" "$1" "$(quote "$2")" "$class" "$3"
      printf '%s\tlinux\t/boot/%s root=UUID=0b1c ro %s\n' "$1" "$4" "$6"
      if [ -f "$R/boot/initrd.img-$5" ]; then printf '%s\tinitrd\t/boot/initrd.img-%s\n' "$1" "$5"; fi
      printf '%s}\n' "$1"
    }
    echo '### BEGIN /etc/grub.d/00_header ###'
    printf '%s\n' 'if [ -s $prefix/grubenv ]; then' '  set have_grubenv=true' '  load_env' 'fi' \
      'if [ "${next_entry}" ] ; then' '   set default="${next_entry}"' '   set next_entry=' '   save_env next_entry' \
      '   set boot_once=true' 'else' "   set default=\"$GRUB_DEFAULT\"" 'fi' '' \
      'if [ x"${feature_menuentry_id}" = xy ]; then' '  menuentry_id_option="--id"' 'else' '  menuentry_id_option=""' \
      'fi' '' 'export menuentry_id_option'
    echo "set timeout=${GRUB_TIMEOUT:-5}"
    echo '### END /etc/grub.d/00_header ###'
    if [ -f "$R/etc/grub.d/00_tuned" ]; then
      TUNED_BOOT_CMDLINE=""; [ -f "$R/etc/tuned/bootcmdline" ] && . "$R/etc/tuned/bootcmdline"
      echo '### BEGIN /etc/grub.d/00_tuned ###'; echo "set tuned_params=\"$TUNED_BOOT_CMDLINE\""; echo '### END /etc/grub.d/00_tuned ###'
    fi
    echo '### BEGIN /etc/grub.d/10_linux ###'
    indent=''; top=true
    for image in $kernels; do
      version=$(printf '%s\n' "$image" | sed 's/^[^0-9]*-//')
      echo "Found linux image: /boot/$image" >&2
      if [ -f "$R/boot/initrd.img-$version" ]; then echo "Found initrd image: /boot/initrd.img-$version" >&2; fi
      if [ "$top" = true ] && [ "$GRUB_DISABLE_SUBMENU" != true ]; then
        entry '' "$os" gnulinux-simple-0b1c "$image" "$version" "$args"
        printf "submenu '%s' \$menuentry_id_option 'gnulinux-advanced-0b1c' {\n" "$(quote "Advanced options for $os")"
        indent='	'; top=false
      fi
      entry "$indent" "$os, with Linux $version" "gnulinux-$version-advanced-0b1c" "$image" "$version" "$args"
      if [ "$GRUB_DISABLE_RECOVERY" != true ]; then
        entry "$indent" "$os, with Linux $version (${GRUB_RECOVERY_TITLE:-recovery mode})" \
          "gnulinux-$version-recovery-0b1c" "$image" "$version" "$recovery"
      fi
    done
    if [ "$top" != true ]; then echo '}'; fi
    echo '### END /etc/grub.d/10_linux ###'
  ) || exit 1
  mkdir -p "$R/boot/grub" && printf '%s\n' "$cfg" > "$out.new" && mv "$out.new" "$out" || exit 1
  echo done >&2; exit 0
fi
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
/// The shell function `editenv` of [`GRUB_EDITENV`] and [`GRUB_SET_DEFAULT`]: grub-editenv
/// with its arguments (see the module's list).
macro_rules! grub_editenv_fn {
    () => {
        r#"editenv_usage() {
  echo 'Usage: grub-editenv [OPTION...] FILENAME COMMAND' >&2
  echo "Try 'grub-editenv --help' or 'grub-editenv --usage' for more information." >&2
}
editenv_pad() { head -c "$1" /dev/zero | tr '\0' '#'; }
editenv() {
  while [ $# -gt 0 ]; do case "$1" in
    -v|--verbose) shift ;;
    -V|--version) echo 'grub-editenv (GRUB) 2.12-9+deb13u4'; exit 0 ;;
    --) shift; break ;;
    -?*) echo "grub-editenv: unrecognized option '$1'" >&2; editenv_usage; exit 64 ;;
    *) break ;;
  esac; done
  [ $# -gt 0 ] || { echo 'You need to specify at least one command.' >&2; editenv_usage; exit 64; }
  if [ $# -eq 1 ]; then file=/boot/grub/grubenv; else file=$1; shift; fi
  [ "$file" = - ] && file=/boot/grub/grubenv
  case "$file" in /*) F="$R$file" ;; *) F="$R/$file" ;; esac
  cmd=$1; shift
  case "$cmd" in create|list|set|unset) ;; *) echo "Unknown command \`$cmd'." >&2; editenv_usage; exit 1 ;; esac
  if [ "$cmd" = create ] || [ ! -e "$F" ]; then
    head='# GRUB Environment Block
# WARNING: Do not edit this file by tools other than grub-editenv!!!
'
    if ! (exec 2>/dev/null; { printf '%s' "$head"; editenv_pad $((1024 - ${#head})); } > "$F.new"); then
      echo "grub-editenv: error: cannot open \`$file.new': No such file or directory." >&2; exit 1
    fi
    mv -f "$F.new" "$F" || exit 1
  fi
  [ "$cmd" = create ] && return 0
  if [ "$(head -c 25 "$F" | tr '\n' '|')" != '# GRUB Environment Block|' ]; then
    echo 'grub-editenv: error: invalid environment block.' >&2; exit 1
  fi
  block=$(cat "$F"; echo x); block=${block%x}; size=$(wc -c < "$F")
  content=${block%"${block##*[!#]}"}
  if [ "$cmd" = list ]; then
    printf '%s' "$content" | LC_ALL=C awk '/^#/ { next } index($0, "=") {
      k = index($0, "="); v = substr($0, k + 1); o = ""
      for (i = 1; i <= length(v); i++) { c = substr(v, i, 1); if (c == "\\") { i++; c = substr(v, i, 1) } o = o c }
      print substr($0, 1, k - 1) "=" o }'
    return 0
  fi
  n=0
  for a; do
    if [ "$cmd" = set ]; then
      case "$a" in *=*) ;; *) echo "grub-editenv: error: invalid parameter $a." >&2; exit 1 ;; esac
    fi
    n=$((n + 1)); export "EDITENV_$n=$a"
  done
  new=$(printf '%s' "$content" | EDITENV_N=$n EDITENV_CMD=$cmd LC_ALL=C awk '{ line[++m] = $0 }
    function named(l, name) { return l !~ /^#/ && index(l, "=") && substr(l, 1, index(l, "=") - 1) == name }
    END {
      for (j = 1; j <= ENVIRON["EDITENV_N"]; j++) {
        a = ENVIRON["EDITENV_" j]; name = a; v = ""
        if (ENVIRON["EDITENV_CMD"] == "set") {
          k = index(a, "="); name = substr(a, 1, k - 1)
          for (i = k + 1; i <= length(a); i++) { c = substr(a, i, 1); v = v (c == "\\" ? "\\" : "") c }
        }
        for (i = 1; i <= m; i++) if (!gone[i] && named(line[i], name)) break
        if (ENVIRON["EDITENV_CMD"] == "unset") { if (i <= m) gone[i] = 1 }
        else if (i <= m) line[i] = name "=" v
        else line[++m] = name "=" v
      }
      for (i = 1; i <= m; i++) if (!gone[i]) print line[i]
    }'; echo x)
  new=${new%x}; length=$(printf '%s' "$new" | wc -c)
  if [ "$length" -gt "$size" ]; then echo 'grub-editenv: error: environment block too small.' >&2; exit 1; fi
  { printf '%s' "$new"; editenv_pad $((size - length)); } > "$F" || exit 1
}
"#
    };
}

/// grub-editenv (see the module's list): `[-v] FILE create|list|set NAME=VALUE…|unset
/// NAME…` on the 1024-byte environment block under the scratch root.
pub const GRUB_EDITENV: &str = concat!(
    r#"R="$SKYHOOK_HOST_ROOT"
"#,
    grub_editenv_fn!(),
    r#"editenv "$@""#
);

/// grub-set-default (see the module's list): `[--boot-directory=DIR] MENU_ENTRY` sets
/// `saved_entry` in `DIR/grub/grubenv` (`/boot/grub/grubenv`) as grub-editenv does.
pub const GRUB_SET_DEFAULT: &str = concat!(
    r#"R="$SKYHOOK_HOST_ROOT"
"#,
    grub_editenv_fn!(),
    r#"usage() {
  echo 'Usage: grub-set-default [OPTION] MENU_ENTRY'
  echo 'Set the default boot menu entry for GRUB.'
  echo 'This requires setting GRUB_DEFAULT=saved in /etc/default/grub.'
  echo
  echo '  -h, --help              print this message and exit'
  echo '  -V, --version           print the version information and exit'
  echo '  --boot-directory=DIR    expect GRUB images under the directory DIR/grub'
  echo '                          instead of the /boot/grub directory'
  echo
  echo 'MENU_ENTRY is a number, a menu item title or a menu item identifier.'
  echo
  echo 'Report bugs to <bug-grub@gnu.org>.'
}
entry=""; rootdir=""; bootdir=""
while [ $# -gt 0 ]; do o=$1; shift; case "$o" in
  -h|--help) usage; exit 0 ;;
  -V|--version) echo 'grub-set-default (GRUB) 2.12-9+deb13u4'; exit 0 ;;
  --root-directory|--boot-directory)
    [ $# -gt 0 ] || { echo "grub-set-default: option requires an argument -- \`$o'" >&2; exit 1; }
    if [ "$o" = --root-directory ]; then rootdir=$1; else bootdir=$1; fi; shift ;;
  --root-directory=*) rootdir=${o#--root-directory=} ;;
  --boot-directory=*) bootdir=${o#--boot-directory=} ;;
  -*) echo "Unrecognized option \`$o'" >&2; usage; exit 1 ;;
  *) if [ -n "$entry" ]; then echo 'More than one menu entry?' >&2; usage; exit 1; fi; entry=$o ;;
esac; done
[ -n "$entry" ] || { echo 'Menu entry not specified.' >&2; usage; exit 1; }
[ -n "$bootdir" ] || bootdir="$rootdir/boot"
grubenv=$(printf '%s/grub/grubenv' "$bootdir" | sed 's,//*,/,g')
(editenv "$grubenv" unset prev_saved_entry)
(editenv "$grubenv" unset next_entry)
(editenv "$grubenv" set "saved_entry=$entry")
exit 0"#
);

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

#[cfg(test)]
mod tests {
    use super::{GRUB_EDITENV, GRUB_SET_DEFAULT, UPDATE_GRUB};
    use crate::Node;

    /// What [`UPDATE_GRUB`] wrote before it modelled several kernels, for the defaults
    /// of [`node`]: every package's tests compare against it.
    const NO_KERNEL: &str = "### BEGIN /etc/grub.d/00_header ###
set timeout=5
### END /etc/grub.d/00_header ###
### BEGIN /etc/grub.d/10_linux ###
menuentry 'Ubuntu' {
\tlinux\t/boot/vmlinuz-6.8.0-31-generic root=UUID=0b1c ro console=ttyS0 quiet splash
}
submenu 'Advanced options for Ubuntu' {
\tmenuentry 'Ubuntu, with Linux 6.8.0-31-generic (recovery mode)' {
\t\tlinux\t/boot/vmlinuz-6.8.0-31-generic root=UUID=0b1c ro recovery nomodeset dis_ucode_ldr console=ttyS0
\t}
}
### END /etc/grub.d/10_linux ###
";

    /// The same, with tuned's script, `GRUB_DISABLE_RECOVERY=true` and `GRUB_DEFAULT=saved`.
    const NO_KERNEL_TUNED: &str = "### BEGIN /etc/grub.d/00_header ###
set timeout=5
### END /etc/grub.d/00_header ###
### BEGIN /etc/grub.d/00_tuned ###
set tuned_params=\"isolcpus=1\"
### END /etc/grub.d/00_tuned ###
### BEGIN /etc/grub.d/10_linux ###
menuentry 'Ubuntu' {
\tlinux\t/boot/vmlinuz-6.8.0-31-generic root=UUID=0b1c ro console=ttyS0 quiet splash
}
### END /etc/grub.d/10_linux ###
";

    /// The `10_linux` part of two kernels with the defaults of [`node`].
    const TWO_KERNELS: &str = "### BEGIN /etc/grub.d/10_linux ###
menuentry 'Ubuntu' --class ubuntu --class gnu-linux --class gnu --class os $menuentry_id_option 'gnulinux-simple-0b1c' {
\tlinux\t/boot/vmlinuz-6.17.0-1019-aws root=UUID=0b1c ro console=ttyS0 quiet splash
}
submenu 'Advanced options for Ubuntu' $menuentry_id_option 'gnulinux-advanced-0b1c' {
\tmenuentry 'Ubuntu, with Linux 6.17.0-1019-aws' --class ubuntu --class gnu-linux --class gnu --class os $menuentry_id_option 'gnulinux-6.17.0-1019-aws-advanced-0b1c' {
\t\tlinux\t/boot/vmlinuz-6.17.0-1019-aws root=UUID=0b1c ro console=ttyS0 quiet splash
\t}
\tmenuentry 'Ubuntu, with Linux 6.17.0-1019-aws (recovery mode)' --class ubuntu --class gnu-linux --class gnu --class os $menuentry_id_option 'gnulinux-6.17.0-1019-aws-recovery-0b1c' {
\t\tlinux\t/boot/vmlinuz-6.17.0-1019-aws root=UUID=0b1c ro recovery nomodeset dis_ucode_ldr console=ttyS0
\t}
\tmenuentry 'Ubuntu, with Linux 6.8.0-31-generic' --class ubuntu --class gnu-linux --class gnu --class os $menuentry_id_option 'gnulinux-6.8.0-31-generic-advanced-0b1c' {
\t\tlinux\t/boot/vmlinuz-6.8.0-31-generic root=UUID=0b1c ro console=ttyS0 quiet splash
\t}
\tmenuentry 'Ubuntu, with Linux 6.8.0-31-generic (recovery mode)' --class ubuntu --class gnu-linux --class gnu --class os $menuentry_id_option 'gnulinux-6.8.0-31-generic-recovery-0b1c' {
\t\tlinux\t/boot/vmlinuz-6.8.0-31-generic root=UUID=0b1c ro recovery nomodeset dis_ucode_ldr console=ttyS0
\t}
}
### END /etc/grub.d/10_linux ###
";

    /// The `00_header` part with `GRUB_DEFAULT=<default>` as `00_header` writes it.
    fn header(default: &str) -> String {
        format!(
            "### BEGIN /etc/grub.d/00_header ###
if [ -s $prefix/grubenv ]; then
  set have_grubenv=true
  load_env
fi
if [ \"${{next_entry}}\" ] ; then
   set default=\"${{next_entry}}\"
   set next_entry=
   save_env next_entry
   set boot_once=true
else
   set default=\"{default}\"
fi

if [ x\"${{feature_menuentry_id}}\" = xy ]; then
  menuentry_id_option=\"--id\"
else
  menuentry_id_option=\"\"
fi

export menuentry_id_option
set timeout=5
### END /etc/grub.d/00_header ###
"
        )
    }

    /// A node with the boot tools and GRUB defaults with both command lines, plus `extra`.
    fn node(extra: &str) -> Node {
        let n = Node::new("/bin/true");
        n.stand_in("update-grub", UPDATE_GRUB)
            .stand_in("grub-set-default", GRUB_SET_DEFAULT)
            .stand_in("grub-editenv", GRUB_EDITENV)
            .file(
                "/etc/default/grub",
                format!("GRUB_CMDLINE_LINUX_DEFAULT=\"quiet splash\"\nGRUB_CMDLINE_LINUX=\"console=ttyS0\"\n{extra}"),
            );
        n
    }

    fn update_grub(n: &Node) -> String {
        let r = n.run_stand_in("update-grub", &[]);
        r.expect_code(0);
        n.read("/boot/grub/grub.cfg").expect("grub.cfg")
    }

    /// The menu entry and submenu ids of `cfg`, in order, indented as they stand.
    fn ids(cfg: &str) -> Vec<String> {
        cfg.lines()
            .filter(|l| l.trim_start().starts_with("menuentry ") || l.starts_with("submenu "))
            .map(|l| {
                let id = l.rsplit('\'').nth(1).expect("an id");
                let indent = &l[..l.len() - l.trim_start().len()];
                format!("{indent}{id}")
            })
            .collect()
    }

    fn editenv(n: &Node, args: &[&str]) -> crate::Run {
        n.run_stand_in("grub-editenv", args)
    }

    #[test]
    fn update_grub_without_kernels_writes_what_it_always_wrote() {
        let n = node("");
        let r = n.run_stand_in("update-grub", &[]);
        r.expect_code(0);
        assert_eq!(r.stderr, "Generating grub configuration file ...\ndone\n");
        assert_eq!(n.read("/boot/grub/grub.cfg").unwrap(), NO_KERNEL);
        let n = node("GRUB_DISABLE_RECOVERY=true\nGRUB_DEFAULT=saved\n");
        n.file("/etc/grub.d/00_tuned", "")
            .file("/etc/tuned/bootcmdline", "TUNED_BOOT_CMDLINE=\"isolcpus=1\"\n");
        assert_eq!(update_grub(&n), NO_KERNEL_TUNED);
    }

    #[test]
    fn update_grub_with_two_kernels_and_a_saved_default_loads_the_environment() {
        let n = node("GRUB_DEFAULT=saved\n");
        n.file("/boot/vmlinuz-6.8.0-31-generic", "")
            .file("/boot/vmlinuz-6.17.0-1019-aws", "");
        let r = n.run_stand_in("update-grub", &[]);
        r.expect_code(0);
        assert_eq!(
            r.stderr,
            "Generating grub configuration file ...\nFound linux image: /boot/vmlinuz-6.17.0-1019-aws\n\
             Found linux image: /boot/vmlinuz-6.8.0-31-generic\ndone\n"
        );
        assert_eq!(
            n.read("/boot/grub/grub.cfg").unwrap(),
            format!("{}{TWO_KERNELS}", header("${saved_entry}"))
        );
    }

    #[test]
    fn update_grub_sorts_the_kernels_newest_first_in_the_submenu() {
        let n = node("GRUB_DEFAULT=\"gnulinux-advanced-0b1c>gnulinux-6.8.0-31-generic-advanced-0b1c\"\n");
        for k in [
            "6.8.0-31-generic",
            "6.8.0-100-generic",
            "6.17.0-1019-aws",
            "6.8.0-31-generic.dpkg-tmp",
        ] {
            n.file(&format!("/boot/vmlinuz-{k}"), "");
        }
        n.file("/boot/initrd.img-6.8.0-100-generic", "");
        let cfg = update_grub(&n);
        assert!(cfg.contains("   set default=\"gnulinux-advanced-0b1c>gnulinux-6.8.0-31-generic-advanced-0b1c\"\n"));
        assert_eq!(
            ids(&cfg),
            [
                "gnulinux-simple-0b1c",
                "gnulinux-advanced-0b1c",
                "\tgnulinux-6.17.0-1019-aws-advanced-0b1c",
                "\tgnulinux-6.17.0-1019-aws-recovery-0b1c",
                "\tgnulinux-6.8.0-100-generic-advanced-0b1c",
                "\tgnulinux-6.8.0-100-generic-recovery-0b1c",
                "\tgnulinux-6.8.0-31-generic-advanced-0b1c",
                "\tgnulinux-6.8.0-31-generic-recovery-0b1c",
            ]
        );
        assert!(cfg.contains(
            "\t\tlinux\t/boot/vmlinuz-6.8.0-100-generic root=UUID=0b1c ro console=ttyS0 quiet splash\n\
             \t\tinitrd\t/boot/initrd.img-6.8.0-100-generic\n\t}\n"
        ));
        assert_eq!(cfg.matches("initrd\t").count(), 2, "only that kernel has an initrd");
    }

    #[test]
    fn update_grub_without_a_submenu_puts_every_entry_at_the_top_level() {
        for (value, recovery) in [("y", ""), ("yes", ""), ("true", "GRUB_DISABLE_RECOVERY=true\n")] {
            let n = node(&format!("GRUB_DISABLE_SUBMENU={value}\n{recovery}"));
            n.file("/boot/vmlinuz-6.8.0-31-generic", "")
                .file("/boot/vmlinuz-6.17.0-1019-aws", "");
            let cfg = update_grub(&n);
            assert!(cfg.contains("   set default=\"0\"\n"), "GRUB_DEFAULT unset: {cfg}");
            let mut expected = vec![
                "gnulinux-6.17.0-1019-aws-advanced-0b1c",
                "gnulinux-6.17.0-1019-aws-recovery-0b1c",
                "gnulinux-6.8.0-31-generic-advanced-0b1c",
                "gnulinux-6.8.0-31-generic-recovery-0b1c",
            ];
            if !recovery.is_empty() {
                expected.retain(|id| !id.contains("recovery"));
            }
            assert_eq!(ids(&cfg), expected, "GRUB_DISABLE_SUBMENU={value}");
            assert!(cfg.contains("\n}\nmenuentry 'Ubuntu, with Linux 6.8.0-31-generic' "));
            assert!(
                cfg.contains(
                    "\tlinux\t/boot/vmlinuz-6.8.0-31-generic root=UUID=0b1c ro console=ttyS0 quiet splash\n}\n"
                )
            );
        }
    }

    #[test]
    fn update_grub_names_the_entries_after_the_distributor() {
        let n = node("GRUB_DISTRIBUTOR=`echo Debian`\nGRUB_RECOVERY_TITLE=\"it's broken\"\n");
        n.file("/boot/vmlinuz-6.1.0-28-amd64", "");
        let cfg = update_grub(&n);
        assert!(cfg.contains(
            "menuentry 'Debian GNU/Linux' --class debian --class gnu-linux --class gnu --class os \
             $menuentry_id_option 'gnulinux-simple-0b1c' {\n"
        ));
        assert!(cfg.contains("submenu 'Advanced options for Debian GNU/Linux' "));
        assert!(cfg.contains("\tmenuentry 'Debian GNU/Linux, with Linux 6.1.0-28-amd64 (it'\\''s broken)' "));
    }

    #[test]
    fn grub_set_default_saves_the_entry_and_editenv_lists_and_unsets_it() {
        let n = node("GRUB_DEFAULT=saved\n");
        let env = "/boot/grub/grubenv";
        let entry = "gnulinux-advanced-0b1c>gnulinux-6.17.0-1019-aws-advanced-0b1c";
        n.file("/boot/vmlinuz-6.17.0-1019-aws", "");
        update_grub(&n);
        editenv(&n, &[env, "set", "next_entry=1", "saved_entry=old", "other=x"]).expect_code(0);
        n.run_stand_in("grub-set-default", &[entry]).expect_code(0);
        let r = editenv(&n, &[env, "list"]);
        r.expect_code(0);
        assert_eq!(
            r.stdout,
            format!("saved_entry={entry}\nother=x\n"),
            "next_entry gone, saved_entry in place"
        );
        let block = std::fs::read(n.path(env)).unwrap();
        assert_eq!(block.len(), 1024);
        let text = String::from_utf8(block).unwrap();
        assert!(text.starts_with(&format!(
            "# GRUB Environment Block\n# WARNING: Do not edit this file by tools other than grub-editenv!!!\n\
             saved_entry={entry}\nother=x\n#"
        )));
        assert!(text.trim_end_matches('#').ends_with("other=x\n"));

        editenv(&n, &[env, "unset", "saved_entry", "absent"]).expect_code(0);
        assert_eq!(editenv(&n, &[env, "list"]).stdout, "other=x\n");
        assert_eq!(std::fs::metadata(n.path(env)).unwrap().len(), 1024);

        n.run_stand_in("grub-set-default", &["0"]).expect_code(0);
        assert_eq!(
            editenv(&n, &["-", "list"]).stdout,
            "other=x\nsaved_entry=0\n",
            "appended, `-` the default file"
        );
    }

    #[test]
    fn grub_set_default_without_an_entry_says_so() {
        let n = node("");
        let r = n.run_stand_in("grub-set-default", &[]);
        r.expect_code(1);
        assert_eq!(r.stderr, "Menu entry not specified.\n");
        assert!(r.stdout.starts_with("Usage: grub-set-default [OPTION] MENU_ENTRY\n"));
        n.run_stand_in("grub-set-default", &["a", "b"])
            .expect_code(1)
            .expect_output("More than one menu entry?");
        assert!(!n.exists("/boot/grub/grubenv"));
        let r = n.run_stand_in("grub-set-default", &["--boot-directory=/mnt/boot", "1"]);
        r.expect_code(0)
            .expect_output("cannot open `/mnt/boot/grub/grubenv.new'");
        n.file("/mnt/boot/grub/.keep", "");
        n.run_stand_in("grub-set-default", &["--boot-directory=/mnt/boot", "1"])
            .expect_code(0);
        assert_eq!(
            editenv(&n, &["/mnt/boot/grub/grubenv", "list"]).stdout,
            "saved_entry=1\n"
        );
    }

    #[test]
    fn grub_editenv_creates_the_block_and_refuses_what_the_real_one_refuses() {
        let n = node("");
        let env = "/boot/grub/grubenv";
        n.file("/boot/grub/.keep", "");
        editenv(&n, &[env, "set", "a=1", "b=x\\y", "c=d=e"]).expect_code(0);
        let r = editenv(&n, &[env, "list"]);
        assert_eq!(r.stdout, "a=1\nb=x\\y\nc=d=e\n");
        assert!(n.read(env).unwrap().contains("\nb=x\\\\y\n"), "the backslash escaped");
        let before = n.read(env).unwrap();
        editenv(&n, &[env, "set", "a=2", "bad"])
            .expect_code(1)
            .expect_output("invalid parameter bad.");
        let big = format!("big={}", "x".repeat(1000));
        editenv(&n, &[env, "set", &big])
            .expect_code(1)
            .expect_output("environment block too small.");
        assert_eq!(n.read(env).unwrap(), before, "nothing written");
        editenv(&n, &[env, "bogus"])
            .expect_code(1)
            .expect_output("Unknown command `bogus'.");
        assert_eq!(editenv(&n, &[]).code, 64);
        editenv(&n, &[env, "create"]).expect_code(0);
        assert_eq!(editenv(&n, &[env, "list"]).stdout, "", "create blanks the block");
        assert_eq!(n.read(env).unwrap().len(), 1024);
        n.file(env, "not a block");
        editenv(&n, &[env, "list"])
            .expect_code(1)
            .expect_output("invalid environment block.");
    }
}

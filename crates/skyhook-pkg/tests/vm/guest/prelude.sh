# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# The start of every boot's script (the VM tier; see vm.rs). The script runs as root
# in a systemd service, under bash, in $OUT; a failing command ends it.
set -euo pipefail

# keep FILE [NAME]: copies a guest file into $OUT (the host reads it with Boot::file).
keep() { cp -a -- "$1" "$OUT/${2:-$(basename "$1")}"; }

# record NAME COMMAND...: runs a command without ending the script when it fails; its
# output goes to $OUT/NAME.out (and the console), its exit code to $OUT/NAME.code (the
# host asserts on both with Boot::record).
record() {
    local name=$1
    shift
    set +e
    "$@" 2>&1 | tee "$OUT/$name.out"
    echo "${PIPESTATUS[0]}" > "$OUT/$name.code"
    set -e
}


# Assertions made in the guest: a failed one ends the script (exit 1) with a line the
# host shows ("guest check failed: ..."); a passed one leaves a line in the output.

# fail MESSAGE...: ends the script.
fail() {
    echo "guest check failed: $*" >&2
    exit 1
}

# expect_eq WHAT ACTUAL EXPECTED
expect_eq() {
    [ "$2" = "$3" ] || fail "$1: is '$2', expected '$3'"
    echo "guest check: $1 = '$2'"
}

# expect_exists PATH...: each path exists.
expect_exists() {
    local p
    for p; do [ -e "$p" ] || [ -L "$p" ] || fail "$p does not exist"; done
    echo "guest check: present: $*"
}

# expect_gone PATH...: no path exists.
expect_gone() {
    local p
    for p; do
        if [ -e "$p" ] || [ -L "$p" ]; then fail "$p is still there"; fi
    done
    echo "guest check: absent: $*"
}

# on_cmdline ARG: ARG is a whole token of the running kernel's command line.
on_cmdline() { tr ' ' '\n' < /proc/cmdline | grep -qxF -- "$1"; }

# expect_code WHAT CODE COMMAND...: runs COMMAND and expects its exit code to be CODE.
expect_code() {
    local what=$1 want=$2 code=0
    shift 2
    "$@" || code=$?
    expect_eq "exit code of $what" "$code" "$want"
}

# snapshot PATH...: every file, directory and link under the paths (type, mode, link
# target, content hash), sorted: two snapshots differ when anything was left or lost.
snapshot() {
    { find "$@" -xdev -printf '%y %m %p %l\n' 2>/dev/null || true; } | sort
    { find "$@" -xdev -type f -print0 2>/dev/null || true; } | sort -z | xargs -0 -r md5sum
}

# expect_same_snapshot WHAT BEFORE PATH...: a new snapshot of the paths equals the file
# BEFORE (made by snapshot); the difference is shown otherwise.
expect_same_snapshot() {
    local what=$1 before=$2
    shift 2
    snapshot "$@" > "$before.now"
    diff -u "$before" "$before.now" >&2 || fail "$what: $* differ from before (diff above)"
    echo "guest check: $what: $* as before"
}

# expect_untouched WHAT "PATH..." COMMAND...: runs COMMAND (it must succeed) and
# expects it to have added, removed or modified nothing under the paths (modification
# times compared, so even a file rewritten with the same content counts).
expect_untouched() {
    local what=$1 paths=$2 before list
    shift 2
    read -r -a list <<< "$paths"
    before=$(find "${list[@]}" -xdev -printf '%y %m %T@ %p %l\n' 2>/dev/null | sort)
    "$@"
    diff <(echo "$before") <(find "${list[@]}" -xdev -printf '%y %m %T@ %p %l\n' 2>/dev/null | sort) >&2 ||
        fail "$what: $* changed $paths (diff above)"
    echo "guest check: $what: nothing under $paths changed"
}

# wait_until WHAT SECONDS COMMAND...: runs COMMAND every 0.1 s until it succeeds.
wait_until() {
    local what=$1 limit=$2 i
    shift 2
    for ((i = 0; i < limit * 10; i++)); do
        "$@" && return 0
        sleep 0.1
    done
    fail "$what: not within $limit s"
}

# dpkg_status PACKAGE: dpkg's state of the package (installed, config-files...), or
# not-installed (also when dpkg knows nothing of it).
dpkg_status() { dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null || echo not-installed; }

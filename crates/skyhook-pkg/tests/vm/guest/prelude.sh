# SPDX-License-Identifier: Apache-2.0
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


#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Creates the GitHub release of a checked tag: the notes are the version's CHANGELOG
# section plus the binary sizes of the exported image trees (skyhook-pkg notes).
# Usage: PACKAGE=tuning VERSION=2.0.0 PRERELEASE=false GH_TOKEN=... GITHUB_REF_NAME=tuning/2.0.0 \
#        ci/github-release.sh <export-dir>
# <export-dir> holds one directory per platform (buildx's local exporter), each with
# the image's skyhook-package/. Without GH_TOKEN it only prints the notes.
set -euo pipefail
cd "$(dirname "$0")/.."
export_dir=${1:?usage: ci/github-release.sh <export-dir>}
: "${PACKAGE:?}" "${VERSION:?}"

trees=()
for tree in "$export_dir"/*/skyhook-package; do
    [ -d "$tree" ] && trees+=(--tree "$tree")
done
if [ "${#trees[@]}" -ne 4 ]; then
    echo "error: expected the trees of linux/amd64 and linux/arm64 under $export_dir/*/skyhook-package" >&2
    exit 1
fi

notes=$(mktemp)
cargo run --locked -q -p skyhook-pkg -- notes "$PACKAGE" "$VERSION" "${trees[@]}" > "$notes"
cat "$notes"
if [ -z "${GH_TOKEN:-}" ]; then
    exit 0
fi
flags=()
if [ "${PRERELEASE:-false}" = true ]; then
    flags+=(--prerelease)
fi
gh release create "${GITHUB_REF_NAME:-$PACKAGE/$VERSION}" --title "$PACKAGE $VERSION" --notes-file "$notes" "${flags[@]}"

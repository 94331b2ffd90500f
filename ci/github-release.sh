#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Creates the GitHub release of a checked and pushed tag: the notes are the version's
# CHANGELOG section, the binary sizes of the dist trees the image holds, and the
# pushed image's index digest with how to verify it (skyhook-pkg notes). The release
# is never marked "Latest": every package releases on its own, and one package's
# release must not take the mark from another's.
# Usage: PACKAGE=tuning VERSION=2.0.0 PRERELEASE=false IMAGE=ghcr.io/nvidia/skyhook-packages/tuning \
#        DIGEST=sha256:… GH_TOKEN=… GITHUB_REF_NAME=tuning/2.0.0 ci/github-release.sh <dist-dir>
# <dist-dir> holds <triple>/<package>/ for linux/amd64 and linux/arm64 (skyhook-pkg
# dist --target all). Without GH_TOKEN it only prints the notes.
set -euo pipefail
cd "$(dirname "$0")/.."
dist=${1:?usage: ci/github-release.sh <dist-dir>}
: "${PACKAGE:?}" "${VERSION:?}" "${IMAGE:?}" "${DIGEST:?}"

trees=()
for triple in x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu; do
    if [ -d "$dist/$triple/$PACKAGE" ]; then
        trees+=(--tree "$dist/$triple/$PACKAGE")
    fi
done
if [ "${#trees[@]}" -ne 4 ]; then
    echo "error: expected the trees of linux/amd64 and linux/arm64 under $dist/<triple>/$PACKAGE (skyhook-pkg dist --target all)" >&2
    exit 1
fi

notes=$(mktemp)
trap 'rm -f "$notes"' EXIT
cargo run --locked -q -p skyhook-pkg -- notes "$PACKAGE" "$VERSION" "${trees[@]}" \
    --image "$IMAGE:$VERSION@$DIGEST" > "$notes"
cat "$notes"
if [ -z "${GH_TOKEN:-}" ]; then
    exit 0
fi
flags=(--latest=false)
if [ "${PRERELEASE:-false}" = true ]; then
    flags+=(--prerelease)
fi
gh release create "${GITHUB_REF_NAME:-$PACKAGE/$VERSION}" --title "$PACKAGE $VERSION" --notes-file "$notes" "${flags[@]}"

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Pushes a package's checked multi-platform image from the OCI layout `skyhook-pkg
# image build` wrote, byte for byte (`--preserve-digests`: no recompression, no
# conversion), so the digest nodes pull is the one built and checked here; fails when
# the registry reports another. Prints `digest=sha256:…` for $GITHUB_OUTPUT. The
# login is ci/registry-login.sh's ($REGISTRY_AUTH_FILE, default ~/.docker/config.json).
# Usage: IMAGE=ghcr.io/nvidia/skyhook-packages/tuning VERSION=2.0.0 PACKAGE=tuning \
#        ci/push-image.sh <oci-layout>
set -euo pipefail
layout=${1:?usage: ci/push-image.sh <oci-layout>}
: "${IMAGE:?}" "${VERSION:?}" "${PACKAGE:?}"

local_digest="sha256:$(skopeo inspect --raw "oci:$layout:$PACKAGE" | sha256sum | cut -d' ' -f1)"
authfile=${REGISTRY_AUTH_FILE:-$HOME/.docker/config.json}
digestfile=$(mktemp)
trap 'rm -f "$digestfile"' EXIT
skopeo copy --all --preserve-digests --digestfile "$digestfile" --dest-authfile "$authfile" \
    "oci:$layout:$PACKAGE" "docker://$IMAGE:$VERSION" >&2
pushed=$(cat "$digestfile")
if [ "$pushed" != "$local_digest" ]; then
    echo "error: the registry holds $IMAGE:$VERSION as $pushed, not the checked $local_digest" >&2
    exit 1
fi
echo "digest=$pushed"

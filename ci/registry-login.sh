#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Logs in to the registry of IMAGE and keeps the login in Docker's config file
# ($REGISTRY_AUTH_FILE, default ~/.docker/config.json), where skopeo (the guard, the
# push), cosign, the attestation action and podman (the pulled-back check) find it.
# The token is read from REGISTRY_TOKEN and given on standard input, never as an
# argument. Usage: IMAGE=ghcr.io/nvidia/skyhook-packages/tuning REGISTRY_USER=… \
#        REGISTRY_TOKEN=… ci/registry-login.sh
set -euo pipefail
: "${IMAGE:?}" "${REGISTRY_USER:?}" "${REGISTRY_TOKEN:?}"
authfile=${REGISTRY_AUTH_FILE:-$HOME/.docker/config.json}
mkdir -p "$(dirname "$authfile")"
printf '%s' "$REGISTRY_TOKEN" |
    skopeo login --authfile "$authfile" --username "$REGISTRY_USER" --password-stdin "${IMAGE%%/*}"

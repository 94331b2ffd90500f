#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Refuses a release before anything is built or pushed, when:
# - the tagged commit is not on main (a tag on a branch or a fork's commit would
#   publish code that was never reviewed there): it must be an ancestor of
#   origin/main, so the checkout needs the history (fetch-depth: 0);
# - the image <IMAGE>:<VERSION> already exists in the registry: a release is pushed
#   once, and a re-run must not replace what nodes already pull. The registry is
#   asked with ci/registry-login.sh's login ($REGISTRY_AUTH_FILE, default
#   ~/.docker/config.json, when it exists). Only its "manifest unknown" or "name
#   unknown" answer (no such tag, no such image yet) lets the release go on; any other
#   failure to ask (network, authentication) refuses it too.
# Usage: IMAGE=ghcr.io/nvidia/skyhook-packages/tuning VERSION=2.0.0 COMMIT=<sha> ci/release-guard.sh
set -euo pipefail
: "${IMAGE:?}" "${VERSION:?}" "${COMMIT:?}"
main=${MAIN_REF:-origin/main}

if ! git rev-parse --verify --quiet "$main^{commit}" > /dev/null; then
    echo "error: $main is not known here: check out with the whole history (fetch-depth: 0)" >&2
    exit 1
fi
if ! git merge-base --is-ancestor "$COMMIT" "$main"; then
    echo "error: the tagged commit $COMMIT is not on $main: tag a commit of main" >&2
    exit 1
fi

authfile=${REGISTRY_AUTH_FILE:-$HOME/.docker/config.json}
auth=()
if [ -f "$authfile" ]; then
    auth=(--authfile "$authfile")
fi
if answer=$(skopeo inspect "${auth[@]}" --raw "docker://$IMAGE:$VERSION" 2>&1); then
    echo "error: $IMAGE:$VERSION already exists: a version is released once; bump the version to release again" >&2
    exit 1
fi
case "$answer" in
*"manifest unknown"* | *"MANIFEST_UNKNOWN"* | *"name unknown"* | *"NAME_UNKNOWN"*) ;;
*)
    echo "error: cannot tell whether $IMAGE:$VERSION exists (skopeo inspect): $answer" >&2
    exit 1
    ;;
esac
echo "release-guard: $COMMIT is on $main and $IMAGE:$VERSION does not exist yet"

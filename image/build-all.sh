#!/usr/bin/env bash
# Build every agent-sandbox image, offline, each step cached:
#   localhost/agent-sandbox-base:bookworm   (build-base.sh: debootstrap + podman import)
#   localhost/agent-sandbox:latest          (build.sh: podman build of Containerfile)
#   localhost/agent-sandbox-busybox:latest  (build-busybox.sh: busybox-static + podman import)
# Progress goes to stderr. When nothing changed it prints a single line and takes well under
# a second. On failure it exits 1 naming the step (the step prints its own cause and log tail).
#
# Timings on the dev machine (2 CPUs): from nothing 48 s (debootstrap is 42 s of it),
# nothing changed 0.9 s.
set -euo pipefail

AS_PROG=build-all
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

BASE=${AGENT_SANDBOX_BASE_IMAGE:-localhost/agent-sandbox-base:bookworm}
AGENT=${AGENT_SANDBOX_IMAGE:-localhost/agent-sandbox:latest}
BUSYBOX=${AGENT_SANDBOX_BUSYBOX_IMAGE:-localhost/agent-sandbox-busybox:latest}
export AGENT_SANDBOX_BASE_IMAGE=$BASE AGENT_SANDBOX_IMAGE=$AGENT AGENT_SANDBOX_BUSYBOX_IMAGE=$BUSYBOX
export AGENT_SANDBOX_QUIET_CACHED=1

as_need podman

ids() {
  local i
  for i in "$BASE" "$AGENT" "$BUSYBOX"; do printf '%s ' "$(as_image_id "$i")"; done
}

start=$SECONDS
before=$(ids)
"$here/build-base.sh" || as_die "base image $BASE failed to build (step build-base.sh)"
AGENT_SANDBOX_SKIP_BASE=1 "$here/build.sh" || as_die "agent image $AGENT failed to build (step build.sh)"
"$here/build-busybox.sh" || as_die "busybox image $BUSYBOX failed to build (step build-busybox.sh)"

if [ "$(ids)" = "$before" ]; then
  as_log "images up to date (cached): $BASE $AGENT $BUSYBOX"
else
  as_log "images ready in $((SECONDS - start)) s: $BASE $AGENT $BUSYBOX"
fi

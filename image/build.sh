#!/usr/bin/env bash
# Build localhost/agent-sandbox:latest from image/Containerfile on top of the base image
# (localhost/agent-sandbox-base:bookworm, made by build-base.sh), offline:
#   podman --runtime runc build --network=none --pull=never ...
# Everything the image needs came from debootstrap; nothing is downloaded here.
#
# The build context is assembled in a temp dir: Containerfile, entrypoint.sh and lib/, which
# holds image/build/bin/cred-stage and image/build/bin/egress-relay (the esbuild bundles made by
# tools/cred-stage and tools/egress-proxy in `pnpm run build`) as cred-stage.js and
# egress-relay.js, and run-snapshot.sh. The image makes a V8 startup snapshot of each bundle
# (Containerfile). The repo tree is never written to.
#
# Cached: podman's layer cache (content-addressed COPY), plus the base is skipped when its
# inputs label matches. Prints one line when nothing changed.
#
# Timings measured on the dev machine (2 CPUs, podman 4.3.1, runc, overlay):
#   first build, base absent:          48 s (base 46 s, of which debootstrap 42 s; this step 1-2 s)
#   agent image only, base cached:     1-2 s
#   second build, nothing changed:     0.7 s (build-all.sh: 0.9 s for all three images)
#   after editing entrypoint.sh:       0.8 s (only the layers from the COPY on are rebuilt)
#   `podman run --rm ... true` of the result with the session flags: 0.16 s
#
# Env: AGENT_SANDBOX_SKIP_BASE=1 (build-all.sh has just checked the base),
#      AGENT_SANDBOX_IMAGE / AGENT_SANDBOX_BASE_IMAGE to change the tags.
set -euo pipefail

AS_PROG=build
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

IMAGE=${AGENT_SANDBOX_IMAGE:-localhost/agent-sandbox:latest}
BASE=${AGENT_SANDBOX_BASE_IMAGE:-localhost/agent-sandbox-base:bookworm}
CRED_STAGE=$here/build/bin/cred-stage
EGRESS_RELAY=$here/build/bin/egress-relay
# Without cred-stage the entrypoint refuses every credentialed session (85), and without the
# egress relay a session has no way to its broker: an image built without either is useless,
# so refuse to build one rather than replace a good image with it.
for bundle in "$CRED_STAGE" "$EGRESS_RELAY"; do
  [ -f "$bundle" ] ||
    as_die "$bundle is missing: run \`pnpm run build\` first (it bundles cred-stage and egress-relay for the image)"
done

as_need podman mktemp
as_need_root

if [ "${AGENT_SANDBOX_SKIP_BASE:-0}" != 1 ] || ! podman image exists "$BASE"; then
  AGENT_SANDBOX_BASE_IMAGE=$BASE "$here/build-base.sh"
fi

ctx=$(mktemp -d "${TMPDIR:-/var/tmp}/agent-sandbox-ctx.XXXXXX")
trap 'rm -rf -- "$ctx"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

install -m 0644 "$here/Containerfile" "$ctx/Containerfile"
install -m 0755 "$here/entrypoint.sh" "$ctx/entrypoint.sh"
mkdir -p "$ctx/lib"
install -m 0644 "$CRED_STAGE" "$ctx/lib/cred-stage.js"
install -m 0644 "$EGRESS_RELAY" "$ctx/lib/egress-relay.js"
install -m 0755 "$here/run-snapshot.sh" "$ctx/lib/run-snapshot"

before=$(as_image_id "$IMAGE")
log=$ctx/podman-build.log
start=$SECONDS
if ! podman --runtime runc build \
  --network=none --pull=never --layers \
  --ulimit nofile=4096:4096 --ulimit nproc=4096:4096 \
  --build-arg "BASE=$BASE" \
  --file "$ctx/Containerfile" --tag "$IMAGE" \
  "$ctx" >"$log" 2>&1; then
  as_tail_log "$log"
  as_die "podman build of $IMAGE failed (see above)"
fi
after=$(as_image_id "$IMAGE")

what="with cred-stage and egress-relay (from their startup snapshots)"
if [ -n "$before" ] && [ "$before" = "$after" ]; then
  as_cached "$IMAGE is up to date (cached; $what)"
else
  as_prune_stale
  as_log "built $IMAGE (${after:0:12}) in $((SECONDS - start)) s; $what"
fi

#!/usr/bin/env bash
# Build localhost/agent-sandbox-agents:latest: the session image plus the real agent CLIs
# (image/Containerfile.agents). The CLIs come from the npm registry, pinned by
# image/agents/package-lock.json, installed on the host with `npm ci` (no install scripts run:
# only the platform packages holding native binaries are listed). The image build itself is
# offline (--network=none).
#
# Cached: the image carries a label with the hash of the lockfile and Containerfile.agents and
# the id of the image it was built on; when all match, nothing is done (one line).
set -euo pipefail

AS_PROG=build-agents
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

IMAGE=${AGENT_SANDBOX_AGENTS_IMAGE:-localhost/agent-sandbox-agents:latest}
BASE=${AGENT_SANDBOX_IMAGE:-localhost/agent-sandbox:latest}
agents=$here/agents

# npm only when there is something to build: an up-to-date image (the VM tier's guest carries
# one in, and has no npm) is checked with podman alone, and by any user in their own store (the
# guest's uid 1000 checks the copy in its rootless store); building needs root.
as_need podman mktemp
# Absent is exit 1 and silence; podman failing (as a user whose store it cannot open) says why.
if ! why=$(podman image exists "$BASE" 2>&1); then
  [ -z "$why" ] || as_die "podman could not tell whether $BASE is here: $why"
  as_die "$BASE is missing: run image/build-all.sh first"
fi

inputs=$(as_hash "$agents/package-lock.json" "$here/Containerfile.agents" -- "$(as_image_id "$BASE")")
if [ "$(as_image_label "$IMAGE")" = "$inputs" ]; then
  as_cached "$IMAGE is up to date (cached)"
  exit 0
fi
as_need_root
as_need npm
as_lock agents-image

codex_dir=$agents/node_modules/codex-linux-x64/vendor/x86_64-unknown-linux-musl
claude_bin=$agents/node_modules/@anthropic-ai/claude-code-linux-x64/claude
if [ ! -x "$codex_dir/bin/codex" ] || [ ! -x "$claude_bin" ] || [ "$agents/package-lock.json" -nt "$agents/node_modules" ]; then
  as_log "installing the pinned agent CLIs from the npm registry (about 650 MB, first time only)"
  (cd "$agents" && npm ci --no-audit --no-fund --ignore-scripts >&2)
  touch "$agents/node_modules"
fi

ctx=$(mktemp -d "${TMPDIR:-/var/tmp}/agent-sandbox-agents-ctx.XXXXXX")
trap 'rm -rf -- "$ctx"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
mkdir -p "$ctx/claude"
# Hard links when the context is on the same file system (no 650 MB copy), else a copy.
cp -al "$codex_dir" "$ctx/codex" 2>/dev/null || cp -a "$codex_dir" "$ctx/codex"
cp -l "$claude_bin" "$ctx/claude/claude" 2>/dev/null || cp "$claude_bin" "$ctx/claude/claude"
install -m 0644 "$here/Containerfile.agents" "$ctx/Containerfile"

as_log "building $IMAGE"
log=$ctx/podman-build.log
start=$SECONDS
if ! podman --runtime runc build \
  --network=none --pull=never --layers \
  --ulimit nofile=4096:4096 --ulimit nproc=4096:4096 \
  --build-arg "BASE=$BASE" --label "$AS_LABEL=$inputs" \
  --file "$ctx/Containerfile" --tag "$IMAGE" \
  "$ctx" >"$log" 2>&1; then
  as_tail_log "$log"
  as_die "podman build of $IMAGE failed (see above)"
fi
as_prune_stale
as_log "built $IMAGE in $((SECONDS - start)) s"

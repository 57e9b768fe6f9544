#!/usr/bin/env bash
# After the suite: nothing a test made may be left behind. Lists leftover containers, pods,
# network namespaces and per-session cgroups, and fails when there are any. Runs as root here
# and in the VM tier's guest as root and as uid 1000 (its own podman, slices and records).
set -uo pipefail
problems=0
report() { printf 'leak-check: %s\n' "$*" >&2; problems=$((problems + 1)); }

containers=$(podman --runtime runc ps -a --format '{{.Names}}' 2>/dev/null)
[ -z "$containers" ] || report "containers left: $(echo "$containers" | tr '\n' ' ')"
pods=$(podman --runtime runc pod ps --format '{{.Name}}' 2>/dev/null)
[ -z "$pods" ] || report "pods left: $(echo "$pods" | tr '\n' ' ')"
netns=$(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^as' || true)
[ -z "$netns" ] || report "network namespaces left: $(echo "$netns" | tr '\n' ' ')"
for base in /sys/fs/cgroup/*/agent-sandbox; do
  [ -d "$base" ] || continue
  left=$(find "$base" -mindepth 1 -maxdepth 1 -type d 2>/dev/null)
  [ -z "$left" ] || report "session cgroups left under $base: $(echo "$left" | tr '\n' ' ')"
done
# systemd hosts (cgroup v2): one slice per session inside agent_sandbox.slice, root's at the
# top, a rootless user's inside its user manager's tree.
for base in /sys/fs/cgroup/agent_sandbox.slice /sys/fs/cgroup/user.slice/user-*.slice/user@*.service/agent_sandbox.slice; do
  [ -d "$base" ] || continue
  left=$(find "$base" -mindepth 1 -maxdepth 1 -type d -name 'agent_sandbox-*.slice' 2>/dev/null)
  [ -z "$left" ] || report "session slices left under $base: $(echo "$left" | tr '\n' ' ')"
done
if [ "$(id -u)" = 0 ]; then owner_dir=/run/agent-sandbox/owners; else owner_dir=${XDG_RUNTIME_DIR:-/run/user/$(id -u)}/agent-sandbox/owners; fi
owners=$(find "$owner_dir" -mindepth 1 -maxdepth 1 2>/dev/null)
[ -z "$owners" ] || report "session owner records left: $(echo "$owners" | tr '\n' ' ')"
# The per-id names beside the owners: the broker's and the published ports' sockets, the ids' locks.
for kind in egress publish ids; do
  left=$(find "$(dirname "$owner_dir")/$kind" -mindepth 1 -maxdepth 1 2>/dev/null)
  [ -z "$left" ] || report "session $kind entries left: $(echo "$left" | tr '\n' ' ')"
done
# A session's sentinel (tools/agent-sandbox/src/recovery/sentinel.ts) outlives nothing but its launcher.
# shellcheck disable=SC2016 # the pattern is the literal script, $line included
sentinels=$(pgrep -f 'IFS= read -r line; \[ "\$line" = released \]' 2>/dev/null || true)
[ -z "$sentinels" ] || report "session sentinels still waiting (pids): $(echo "$sentinels" | tr '\n' ' ')"
if [ "$problems" -gt 0 ]; then
  echo "leak-check: $problems kind(s) of leftovers: a test or a run did not clean up" >&2
  exit 1
fi
echo "leak-check: no containers, pods, network namespaces, session cgroups, owner records, socket directories, id locks or sentinels left" >&2

# shellcheck shell=bash
# Shared helpers for the image/*.sh build scripts. Sourced, never executed.
#
# Facts the scripts rely on (measured on Debian 12, podman 4.3.1, root, cgroup v1 hybrid):
#  - crun fails every start here ("cgroups in hybrid mode not supported"), so whatever runs a
#    container (podman build's RUN steps included) uses `podman --runtime runc`.
#  - The default rlimits (nofile/nproc 1048576) fail without CAP_SYS_RESOURCE
#    ("setrlimit ... Operation not permitted"), so builds and runs pass explicit ulimits.
#  - No image registry is reachable: every image is made from local files (podman import of a
#    rootfs, podman build --pull=never FROM that import).

# Scripts set AS_PROG before sourcing; it prefixes every message.
: "${AS_PROG:=image}"

# Label on imported images recording the sha256 of everything that went into them.
# shellcheck disable=SC2034 # used by the scripts that source this file
AS_LABEL=io.agent-sandbox.inputs-sha256

as_log() { printf '%s: %s\n' "$AS_PROG" "$*" >&2; }

# as_cached MSG : the one line a cache hit prints; build-all.sh silences it
# (AGENT_SANDBOX_QUIET_CACHED=1) and prints a single line for all images instead.
as_cached() {
  [ "${AGENT_SANDBOX_QUIET_CACHED:-0}" = 1 ] || as_log "$@"
}

as_die() {
  printf '%s: error: %s\n' "$AS_PROG" "$*" >&2
  exit 1
}

# as_need CMD... : fail with a clear message when a host tool is missing.
as_need() {
  local c
  for c in "$@"; do
    command -v "$c" >/dev/null 2>&1 ||
      as_die "'$c' is not installed (CI: apt-get install podman runc debootstrap busybox-static)"
  done
}

as_need_root() {
  [ "$(id -u)" -eq 0 ] ||
    as_die "must run as root (debootstrap/chown of a rootfs, and the images live in root's podman storage)"
}

# as_hash FILE... -- STRING... : sha256 over the files' bytes and the extra strings.
as_hash() {
  {
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do
      printf 'file %s\n' "$(basename -- "$1")"
      cat -- "$1"
      shift
    done
    [ $# -gt 0 ] && shift
    local s
    for s in "$@"; do printf 'arg %s\n' "$s"; done
  } | sha256sum | cut -d' ' -f1
}

# as_image_label IMAGE : the inputs label of a local image; empty when absent or unlabelled.
as_image_label() {
  podman image inspect --format "{{ index .Labels \"$AS_LABEL\" }}" "$1" 2>/dev/null || true
}

as_image_id() {
  podman image inspect --format '{{.Id}}' "$1" 2>/dev/null || true
}

# as_lock NAME : serialize concurrent builds of the same image (held until the script exits).
as_lock() {
  local dir=${AGENT_SANDBOX_LOCK_DIR:-/run/lock}
  [ -d "$dir" ] && [ -w "$dir" ] || dir=${TMPDIR:-/tmp}
  exec 9>"$dir/agent-sandbox-$1.lock"
  if ! flock -n 9; then
    as_log "another build of $1 is running; waiting for it"
    flock 9
  fi
}

# as_rm_tree DIR : remove a temporary rootfs. Unmounts whatever debootstrap may have left
# mounted beneath it (proc, sys, devpts) first, deepest first, and never crosses into another
# filesystem, so an interrupted build cannot delete anything outside DIR.
as_rm_tree() {
  local dir=$1 m
  [ -n "$dir" ] && [ -d "$dir" ] || return 0
  while read -r m; do
    umount -l -- "$m" 2>/dev/null || true
  done < <(awk -v d="$dir" '$5 == d || index($5, d "/") == 1 { print $5 }' /proc/self/mountinfo | sort -r)
  rm -rf --one-file-system -- "$dir"
}

# as_tail_log FILE : show the end of a build log after a failure.
as_tail_log() {
  [ -s "$1" ] || return 0
  printf '%s: last lines of %s:\n' "$AS_PROG" "$1" >&2
  tail -n 25 -- "$1" | sed 's/^/    /' >&2
}

# as_prune_stale : remove dangling images that carry our inputs label. A rebuilt base leaves
# the previous base and the agent layers built on it untagged (about 270 MB each time), and
# every rebuild of an image leaves its previous version. Every layer built from our images
# inherits the label, so other people's images are never touched. AGENT_SANDBOX_PRUNE=0 skips it:
# for an experimental image built under another tag while others build theirs on the same
# storage (the newest layer of a build in progress is untagged for a moment).
as_prune_stale() {
  [ "${AGENT_SANDBOX_PRUNE:-1}" != 0 ] || return 0
  podman image prune --force --filter "label=$AS_LABEL" >/dev/null 2>&1 || true
}

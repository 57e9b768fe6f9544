#!/usr/bin/env bash
# Build localhost/agent-sandbox-base:bookworm: a minimal Debian 12 (bookworm) rootfs made with
# `debootstrap --variant=minbase` from the mirror apt is already configured with on this host
# (read from /etc/apt at run time; no mirror is written into the repo), then imported with
# `podman import`. No image registry is needed: only the Debian mirror apt uses anyway.
#
# Cached: the image carries a label with the sha256 of the inputs (this script, which holds
# the package list, lib.sh, suite, variant, architecture). When the label matches, nothing is
# done. Downloaded .debs are kept in $AGENT_SANDBOX_CACHE_DIR (default
# /var/cache/agent-sandbox/debootstrap-bookworm-<arch>) and re-verified against the signed
# Release, so a rebuild after editing this script does not download again.
# AGENT_SANDBOX_REBUILD=1 forces a rebuild (e.g. to pick up a Debian point release).
# AGENT_SANDBOX_APT_MIRROR=URI overrides the mirror read from apt's sources.
#
# Timings measured on the dev machine (2 CPUs, deb.debian.org, podman 4.3.1):
#   first build, empty .deb cache:  46 s (debootstrap 42 s, trim + tar + import 4 s)
#   rebuild, warm .deb cache:       34-38 s (debootstrap 28-33 s: dpkg, not the download)
#   cached (label matches):         0.04 s
# Result: 272 MB (libnode + libicu ~83 MB, git + perl ~95 MB, the rest Debian minbase).
set -euo pipefail

AS_PROG=build-base
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
# shellcheck source=apt-mirror.sh
. "$here/apt-mirror.sh"

IMAGE=${AGENT_SANDBOX_BASE_IMAGE:-localhost/agent-sandbox-base:bookworm}
SUITE=bookworm
VARIANT=minbase

# Packages on top of minbase (Essential + apt). Kept small on purpose: every contained session
# pays for the image only once (layers are shared), but every package is attack surface and
# build time.
PACKAGES=(
  # Node for container-side tools (cred-stage is an esbuild bundle run by this node) and for
  # agent CLIs that are plain JS. Debian's nodejs is 18.x; the bundles target node18 so they
  # need no node_modules inside the image.
  nodejs
  # Agents work in git repositories (worktrees with gitdir/commondir mounted at host paths).
  git
  # PID 1: forwards signals and reaps zombies, so `podman stop` and the agent's children behave.
  tini
  # TLS roots for the agents' HTTPS calls to model APIs (and git over https).
  ca-certificates
  # ps, pgrep, kill, free, top: agents and humans inspect processes inside the session.
  procps
  # Essential in bookworm already (setpriv, flock, findmnt); listed so the intent is explicit.
  util-linux
  # A byte-for-byte forwarder between a TCP port on the container's loopback and a unix socket
  # in a directory the launcher mounts: the well-kept standard tool for the session's relays
  # (about 1 MB with its libraries; it starts in a millisecond where a node relay takes tens).
  socat
  # Not included: python3-minimal (~25 MB with libpython; nothing here needs it, add it when an
  # agent workflow does), openssh-client (sessions run with --network=none by default),
  # locales (C.UTF-8 is built into glibc and set as LANG below).
)

as_need podman debootstrap flock sha256sum tar awk mktemp
as_need_root

arch=$(dpkg --print-architecture 2>/dev/null || uname -m)
inputs=$(as_hash "$here/build-base.sh" "$here/lib.sh" "$here/apt-mirror.sh" -- "$IMAGE" "$SUITE" "$VARIANT" "$arch" "${PACKAGES[*]}")

cached() {
  [ "${AGENT_SANDBOX_REBUILD:-0}" != 1 ] && [ "$(as_image_label "$IMAGE")" = "$inputs" ]
}
if cached; then
  as_cached "$IMAGE is up to date (cached)"
  exit 0
fi
as_lock base
if cached; then # built by a concurrent run while we waited
  as_cached "$IMAGE is up to date (cached)"
  exit 0
fi

if ! mirror_line=$(as_apt_mirror "$SUITE" | head -n 1) || [ -z "$mirror_line" ]; then
  as_die "no apt source for '$SUITE' found in /etc/apt/sources.list.d/*.sources or /etc/apt/sources.list (set AGENT_SANDBOX_APT_MIRROR=URI to choose one)"
fi
mirror=${mirror_line%%$'\t'*}
keyring=${mirror_line#*$'\t'}
case $mirror in
  http://* | https://* | file:///*) ;;
  *) as_die "apt source URI '$mirror' is not http(s) or file://; debootstrap cannot use it (set AGENT_SANDBOX_APT_MIRROR)" ;;
esac
keyring_arg=()
if [ -n "$keyring" ] && [ -f "$keyring" ]; then keyring_arg=(--keyring="$keyring"); fi

cache_dir=${AGENT_SANDBOX_CACHE_DIR:-/var/cache/agent-sandbox/debootstrap-$SUITE-$arch}
mkdir -p "$cache_dir"

work=$(mktemp -d "${TMPDIR:-/var/tmp}/agent-sandbox-base.XXXXXX")
child=
cleanup() {
  # debootstrap runs in its own process group (setsid) so an interrupted build stops all of
  # it (dpkg in the chroot included) before its mounts and the tree are removed.
  if [ -n "$child" ] && kill -0 "$child" 2>/dev/null; then
    kill -TERM -- "-$child" 2>/dev/null || true
    wait "$child" 2>/dev/null || true
  fi
  as_rm_tree "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
root=$work/rootfs
log=$work/debootstrap.log

includes=$(
  IFS=,
  printf '%s' "${PACKAGES[*]}"
)
as_log "building base image (about a minute, first time only)..."
as_log "debootstrap $SUITE ($VARIANT + ${PACKAGES[*]}) from $mirror"
start=$SECONDS
# In the background + wait, so INT/TERM run the cleanup trap at once instead of after
# debootstrap finishes.
setsid debootstrap --variant="$VARIANT" --arch="$arch" --include="$includes" --components=main \
  --cache-dir="$cache_dir" "${keyring_arg[@]}" "$SUITE" "$root" "$mirror" >"$log" 2>&1 </dev/null &
child=$!
status=0
wait "$child" || status=$?
child=
if [ "$status" -ne 0 ]; then
  as_tail_log "$log"
  [ -f "$root/debootstrap/debootstrap.log" ] && as_tail_log "$root/debootstrap/debootstrap.log"
  as_die "debootstrap failed with exit $status (mirror $mirror)"
fi
as_log "debootstrap done in $((SECONDS - start)) s; trimming and importing"

# Trim what a container never needs: package indexes and .debs (apt cannot reach a mirror
# from a --network=none session anyway), docs except copyright notices, man/info pages,
# translations, logs, and host-specific files podman provides at run time.
(
  cd "$root"
  rm -rf var/lib/apt/lists/* var/cache/apt/*.bin var/cache/apt/archives/*.deb \
    var/cache/debconf/*-old var/lib/dpkg/*-old \
    usr/share/man/* usr/share/info/* usr/share/locale/* usr/share/lintian \
    var/log/* debootstrap etc/hostname etc/resolv.conf
  find usr/share/doc -mindepth 1 ! -type d ! -name copyright -delete
  find usr/share/doc -mindepth 1 -depth -type d -empty -delete
  # device nodes made by debootstrap: runc mounts its own /dev
  find dev -mindepth 1 -delete
)

if ! tar --numeric-owner --xattrs -C "$root" -cf - . |
  podman import --quiet \
    --change 'ENV=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV=LANG=C.UTF-8' \
    --change 'CMD=["/bin/bash"]' \
    --change "LABEL=$AS_LABEL=$inputs" \
    --change "LABEL=io.agent-sandbox.debian-suite=$SUITE" \
    --message "agent-sandbox base: debootstrap $VARIANT $SUITE + ${PACKAGES[*]} (inputs $inputs)" \
    - "$IMAGE" >/dev/null; then
  as_die "podman import of $IMAGE failed"
fi
size=$(podman image inspect --format '{{.Size}}' "$IMAGE" 2>/dev/null || echo 0)
as_log "built $IMAGE ($((size / 1000000)) MB) in $((SECONDS - start)) s"

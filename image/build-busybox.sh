#!/usr/bin/env bash
# Build localhost/agent-sandbox-busybox:latest: a tiny image for fast proofs (denial and
# ceiling tests), made offline from the host's busybox-static (/bin/busybox, Debian package
# busybox-static) with `podman import`. No registry, no network, no podman build.
#
# Contents: /bin/busybox plus one symlink per applet in /bin, /etc/passwd and /etc/group
# with root and agent (uid/gid 1000, home /sandbox/home), /tmp (1777), /root,
# /sandbox/home and /sandbox/workspaces (owned 1000:1000). PATH=/bin:/sbin, CMD /bin/sh.
#
# Cached: the image carries a label with the sha256 of this script, lib.sh and the busybox
# binary; when the label matches, nothing is done. AGENT_SANDBOX_REBUILD=1 forces a rebuild.
#
# Timings on the dev machine: first build 0.6 s, cached 0.05 s; a `podman run --rm` of it
# with the sandbox flags takes 0.15 s. Image size 2.1 MB.
set -euo pipefail

AS_PROG=build-busybox
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

IMAGE=${AGENT_SANDBOX_BUSYBOX_IMAGE:-localhost/agent-sandbox-busybox:latest}
BUSYBOX=${AGENT_SANDBOX_BUSYBOX:-/bin/busybox}

as_need podman flock sha256sum tar
as_need_root
[ -x "$BUSYBOX" ] || as_die "$BUSYBOX not found: install the Debian package busybox-static"
# A dynamically linked busybox would need the host's libc inside the image.
# (grep without -q: an early exit would SIGPIPE the writer and fail the pipeline.)
if ! "$BUSYBOX" --list | grep -x sh >/dev/null; then
  as_die "$BUSYBOX has no sh applet; install busybox-static"
fi
if command -v file >/dev/null 2>&1 && ! file -L "$BUSYBOX" | grep 'statically linked' >/dev/null; then
  as_die "$BUSYBOX is not statically linked; install busybox-static (not busybox)"
fi

inputs=$(as_hash "$here/build-busybox.sh" "$here/lib.sh" "$BUSYBOX" -- "$IMAGE")
if [ "${AGENT_SANDBOX_REBUILD:-0}" != 1 ] && [ "$(as_image_label "$IMAGE")" = "$inputs" ]; then
  as_cached "$IMAGE is up to date (cached)"
  exit 0
fi

as_lock busybox
# Another build may have finished while we waited for the lock.
if [ "${AGENT_SANDBOX_REBUILD:-0}" != 1 ] && [ "$(as_image_label "$IMAGE")" = "$inputs" ]; then
  as_cached "$IMAGE is up to date (cached)"
  exit 0
fi

as_log "building $IMAGE..."
work=$(mktemp -d "${TMPDIR:-/var/tmp}/agent-sandbox-busybox.XXXXXX")
trap 'as_rm_tree "$work"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

root=$work/rootfs
mkdir -p "$root"/{bin,sbin,etc,root,tmp,proc,sys,dev,sandbox/home,sandbox/workspaces}
install -m 0755 "$BUSYBOX" "$root/bin/busybox"
# The equivalent of `busybox --install -s` without chroot: one relative symlink per applet.
while read -r applet; do
  if [ -z "$applet" ] || [ "$applet" = busybox ]; then continue; fi
  ln -sf busybox "$root/bin/$applet"
done < <("$BUSYBOX" --list)

cat >"$root/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/sh
agent:x:1000:1000:agent:/sandbox/home:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
EOF
cat >"$root/etc/group" <<'EOF'
root:x:0:
agent:x:1000:
nogroup:x:65534:
EOF
chmod 0644 "$root/etc/passwd" "$root/etc/group"
chmod 0700 "$root/root"
chmod 1777 "$root/tmp"
chown 1000:1000 "$root/sandbox/home" "$root/sandbox/workspaces"

if ! tar --numeric-owner -C "$root" -cf - . |
  podman import --quiet \
    --change 'ENV=PATH=/bin:/sbin' \
    --change 'CMD=["/bin/sh"]' \
    --change "LABEL=$AS_LABEL=$inputs" \
    --message "agent-sandbox busybox image (inputs $inputs)" \
    - "$IMAGE" >/dev/null; then
  as_die "podman import of $IMAGE failed"
fi
as_prune_stale
version=$("$BUSYBOX" 2>&1 | sed -n '1s/^\(BusyBox v[^ ]*\).*/\1/p' || true)
as_log "built $IMAGE (${version:-busybox})"

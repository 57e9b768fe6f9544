#!/usr/bin/env bash
# Build the VM tier's guest: a Debian 12 root with systemd (PID 1), cgroup v2, podman, crun and
# runc, and a user `dev` (uid 1000, subuids, linger), as an ext4 disk image plus the kernel and
# initrd to boot it with. Made with `debootstrap --variant=minbase` from the mirror apt is
# configured with on this host, and `mkfs.ext4 -d` (no loop mount, no root-only mount needed).
#
# Cached: $AGENT_SANDBOX_VM_CACHE (default /var/cache/agent-sandbox-vm)/root-<sha256>/ holds
# disk.img, vmlinuz and initrd.img; the key is the sha256 of this script (it holds the package
# list), the files it puts into the root (vm/guest/root/), the mirror reader and the suite.
# When that directory exists nothing is done. Downloaded .debs stay in <cache>/debs.
# AGENT_SANDBOX_VM_REBUILD=1 forces a rebuild. Prints the root directory on stdout.
#
# Timings (dev machine, 2 CPUs): debootstrap about 150 s with an empty .deb cache, the disk
# about 15 s; cached 0.05 s. Result: about 1.1 GB of files in an 8 GB sparse image.
# shellcheck source-path=SCRIPTDIR/..
set -euo pipefail

AS_PROG=vm-root
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=image/lib.sh
. "$here/../image/lib.sh"
# shellcheck source=image/apt-mirror.sh
. "$here/../image/apt-mirror.sh"

SUITE=bookworm
# Free space for container storage and the tests' scratch files; the image file is sparse.
DISK_SIZE=8G

PACKAGES=(
  # Boot: the distribution kernel (its initrd has virtio_blk) and systemd as PID 1.
  linux-image-amd64 systemd systemd-sysv dbus dbus-user-session libpam-systemd
  # Containers the way a Debian 12 user gets them; netavark, aardvark-dns, catatonit and conmon
  # named explicitly, or configuring podman fails on the virtual container-network-stack.
  podman crun runc uidmap slirp4netns netavark aardvark-dns catatonit conmon fuse-overlayfs
  # What the suite and the tools call: git, ip, ps, setpriv/findmnt, mkfs, ssh for dispatch.
  git iproute2 openssh-server openssh-client procps util-linux e2fsprogs ca-certificates jq
  # Project quotas (a later issue); the suite's python client test.
  quota python3
)

as_need debootstrap mkfs.ext4 sha256sum flock
as_need_root

cache=${AGENT_SANDBOX_VM_CACHE:-/var/cache/agent-sandbox-vm}
arch=$(dpkg --print-architecture 2>/dev/null || uname -m)
mapfile -t root_files < <(find "$here/guest/root" -type f | LC_ALL=C sort)
key=$(as_hash "$here/build-root.sh" "$here/../image/apt-mirror.sh" "${root_files[@]}" -- \
  "$SUITE" "$arch" "$DISK_SIZE" "${PACKAGES[*]}" "${root_files[*]#"$here/"}")
out=$cache/root-$key

ready() { [ "${AGENT_SANDBOX_VM_REBUILD:-0}" != 1 ] && [ -s "$out/disk.img" ] && [ -s "$out/vmlinuz" ] && [ -s "$out/initrd.img" ]; }
if ready; then
  as_cached "guest root is up to date (cached: $out)"
  printf '%s\n' "$out"
  exit 0
fi
mkdir -p "$cache"
AGENT_SANDBOX_LOCK_DIR=$cache as_lock vm-root
if ready; then
  printf '%s\n' "$out"
  exit 0
fi

if ! mirror_line=$(as_apt_mirror "$SUITE" | head -n 1) || [ -z "$mirror_line" ]; then
  as_die "no apt source for '$SUITE' found under /etc/apt (set AGENT_SANDBOX_APT_MIRROR=URI)"
fi
mirror=${mirror_line%%$'\t'*}
keyring=${mirror_line#*$'\t'}
keyring_arg=()
if [ -n "$keyring" ] && [ -f "$keyring" ]; then keyring_arg=(--keyring="$keyring"); fi

work=$(mktemp -d "$cache/build.XXXXXX")
child=
cleanup() {
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
mkdir -p "$cache/debs"

# progress NAME PID : one line every 20 s while a long step runs, so CI never looks stuck.
progress() {
  local name=$1 pid=$2 start=$SECONDS
  while kill -0 "$pid" 2>/dev/null; do
    sleep 20
    kill -0 "$pid" 2>/dev/null && as_log "$name: still running ($((SECONDS - start)) s)"
  done
}

as_log "debootstrap $SUITE minbase + ${#PACKAGES[@]} packages from $mirror (2-3 minutes, first time only)"
start=$SECONDS
includes=$(IFS=,; printf '%s' "${PACKAGES[*]}")
setsid debootstrap --variant=minbase --arch="$arch" --include="$includes" --components=main \
  --cache-dir="$cache/debs" "${keyring_arg[@]}" "$SUITE" "$root" "$mirror" >"$work/debootstrap.log" 2>&1 </dev/null &
child=$!
progress debootstrap "$child" &
ticker=$!
status=0
wait "$child" || status=$?
child=
kill "$ticker" 2>/dev/null || true
if [ "$status" -ne 0 ]; then
  as_tail_log "$work/debootstrap.log"
  [ -f "$root/debootstrap/debootstrap.log" ] && as_tail_log "$root/debootstrap/debootstrap.log"
  as_die "debootstrap failed with exit $status (mirror $mirror)"
fi
as_log "debootstrap done in $((SECONDS - start)) s; configuring the guest"

# The files under guest/root/ are the guest's own configuration (units, fstab, containers
# config), copied as they are; the rest needs the guest's own tools.
cp -r --no-preserve=ownership "$here/guest/root/." "$root/"
chroot "$root" /bin/sh -eu <<'EOS'
echo asvm >/etc/hostname
printf '127.0.0.1 localhost\n127.0.1.1 asvm\n::1 localhost\n' >/etc/hosts
# A fixed machine id: the journal and the user manager see one machine on every boot.
echo 6173766d2d6775657374000000000000 >/etc/machine-id
useradd --create-home --uid 1000 --user-group --shell /bin/bash dev
# useradd adds subordinate ranges from login.defs; state them so the guest never depends on it.
grep -q '^dev:' /etc/subuid || echo 'dev:100000:65536' >>/etc/subuid
grep -q '^dev:' /etc/subgid || echo 'dev:100000:65536' >>/etc/subgid
# Linger: dev's user manager (user@1000.service) starts at boot without a login.
mkdir -p /var/lib/systemd/linger && touch /var/lib/systemd/linger/dev
systemctl enable agent-sandbox-vm.service >/dev/null 2>&1
systemctl set-default multi-user.target >/dev/null 2>&1
# Nothing periodic may start in the middle of a timed proof.
# podman's boot-time services (auto-update, restart) run podman before the suite does.
for u in apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer e2scrub_reap.service \
  fstrim.timer man-db.timer dpkg-db-backup.timer systemd-tmpfiles-clean.timer \
  podman-auto-update.timer podman-auto-update.service podman-restart.service; do
  systemctl mask "$u" >/dev/null 2>&1 || true
done
passwd --lock root >/dev/null
EOS
# Same trim as the container base: .debs and indexes are not needed in a guest without a network.
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb \
  "$root"/usr/share/man/* "$root"/usr/share/doc/* "$root"/usr/share/locale/* "$root/debootstrap"

as_log "making the disk image (mkfs.ext4 -d)"
mkdir -p "$work/out"
cp "$(find "$root/boot" -maxdepth 1 -name 'vmlinuz-*' | sort | tail -n 1)" "$work/out/vmlinuz"
cp "$(find "$root/boot" -maxdepth 1 -name 'initrd.img-*' | sort | tail -n 1)" "$work/out/initrd.img"
truncate -s "$DISK_SIZE" "$work/out/disk.img"
mkfs.ext4 -q -L asvm-root -d "$root" "$work/out/disk.img"
rm -rf "$out"
mv "$work/out" "$out"
# Older roots are dead weight (about 1 GB each).
find "$cache" -maxdepth 1 -name 'root-*' ! -path "$out" -exec rm -rf {} +
as_log "guest root ready in $((SECONDS - start)) s: $out"
printf '%s\n' "$out"

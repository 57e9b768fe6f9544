#!/usr/bin/env bash
# Make uid 1000's rootless podman storage for the VM tier's guest, on the host, as rootless
# podman itself makes it: podman runs inside a user namespace with the guest user's mapping
# (uid 0 -> 1000, 1..65536 -> 100000.., dev's /etc/subuid range in the guest) and is told it is
# already the rootless child (_CONTAINERS_USERNS_CONFIGURED), so every file lands with the
# owner rootless podman in the guest gives it. No user is needed on the host: root writes the
# namespace's maps itself (newuidmap would ask the host's /etc/subuid). Each image's keep-id copy
# is made here too (below), as the guest's podman would make it at its first rootless session.
#
# usage: user-store.sh IMAGES_TAR STORE_DIR   env: AGENT_SANDBOX_VM_USER_DRIVER
# shellcheck source-path=SCRIPTDIR/..
set -euo pipefail

AS_PROG=vm
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=image/lib.sh
. "$here/../image/lib.sh"

archive=${1:?usage: user-store.sh IMAGES_TAR STORE_DIR}
store=${2:?usage: user-store.sh IMAGES_TAR STORE_DIR}
driver=${AGENT_SANDBOX_VM_USER_DRIVER:-overlay}
# dev's subordinate ids in the guest (vm/build-root.sh writes the same to its /etc/subuid).
sub_start=100000
sub_count=65536
map="0 1000 1
1 $sub_start $sub_count
"

# Short: rootless podman refuses a runroot longer than 50 characters.
scratch=$(mktemp -d /tmp/asvm-user.XXXXXX)
mkdir -p "$scratch/home" "$scratch/run" "$store"
chmod 0711 "$scratch"
chown 1000:1000 "$scratch/home" "$scratch/run" "$store"
ns=
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
  [ -z "$ns" ] || kill "$ns" 2>/dev/null || true
  rm -rf --one-file-system -- "$scratch"
}
trap cleanup EXIT

unshare --user --mount --propagation private -- sleep 600 &
ns=$!
for _ in $(seq 1 50); do
  [ "$(readlink "/proc/$ns/ns/user")" != "$(readlink /proc/self/ns/user)" ] && break
  sleep 0.1
done
# One write(2) each: the kernel takes a map only whole.
printf '%s' "$map" | dd of="/proc/$ns/uid_map" bs=4096 status=none
printf '%s' "$map" | dd of="/proc/$ns/gid_map" bs=4096 status=none

# podman as the guest's rootless podman runs: dev (USER, the name /etc/subuid is read for), uid
# 1000, already inside its namespace.
user_podman() {
  nsenter --target "$ns" --user --mount -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
    HOME="$scratch/home" XDG_RUNTIME_DIR="$scratch/run" USER=dev \
    _CONTAINERS_USERNS_CONFIGURED=init _CONTAINERS_ROOTLESS_UID=1000 _CONTAINERS_ROOTLESS_GID=1000 \
    podman --root "$store" --runroot "$scratch/run/containers" --tmpdir "$scratch/run/libpod" \
    --storage-driver "$driver" "$@"
}
user_podman load --quiet --input "$archive" >/dev/null ||
  as_die "podman load into uid 1000's store ($driver) failed"

# Every rootless session runs with --userns=keep-id (sandbox-run), and podman's first container
# of an image under that mapping makes an ID-mapped copy of the image (a chown'd copy of all of
# it: 963 MB for the agents image, measured at 264 s in the guest under CPU emulation, seconds
# here). Made here, one container created and removed per image, under the mapping the guest's
# podman computes for dev: its /etc/subuid range, bound over this host's in this namespace only.
# The copy stays registered with its image, and the guest's podman finds and reuses it.
printf 'dev:%s:%s\n' "$sub_start" "$sub_count" >"$scratch/subid"
chmod 0644 "$scratch/subid"
# shellcheck disable=SC2016 # $1 is the inner shell's
nsenter --target "$ns" --user --mount -- sh -c 'mount --bind "$1" /etc/subuid && mount --bind "$1" /etc/subgid' sh "$scratch/subid" ||
  as_die "could not show dev's subordinate ids to podman in the namespace"
mapfile -t ids < <(user_podman images --quiet --no-trunc)
for id in "${ids[@]}"; do
  if ! user_podman create --quiet --userns=keep-id --network=none --name asvm-keep-id-copy "$id" true >/dev/null ||
    ! user_podman rm asvm-keep-id-copy >/dev/null; then
    as_die "podman create --userns=keep-id of $id in uid 1000's store failed"
  fi
done

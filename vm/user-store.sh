#!/usr/bin/env bash
# Make uid 1000's rootless podman storage for the VM tier's guest, on the host, as rootless
# podman itself makes it: podman runs inside a user namespace with the guest user's mapping
# (uid 0 -> 1000, 1..65536 -> 100000.., dev's /etc/subuid range in the guest) and is told it is
# already the rootless child (_CONTAINERS_USERNS_CONFIGURED), so every file lands with the
# owner rootless podman in the guest gives it. No user is needed on the host: root writes the
# namespace's maps itself (newuidmap would ask the host's /etc/subuid).
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
map=$'0 1000 1\n1 100000 65536\n'

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

nsenter --target "$ns" --user --mount -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
  HOME="$scratch/home" XDG_RUNTIME_DIR="$scratch/run" \
  _CONTAINERS_USERNS_CONFIGURED=init _CONTAINERS_ROOTLESS_UID=1000 _CONTAINERS_ROOTLESS_GID=1000 \
  podman --root "$store" --runroot "$scratch/run/containers" --tmpdir "$scratch/run/libpod" \
  --storage-driver "$driver" load --quiet --input "$archive" >/dev/null ||
  as_die "podman load into uid 1000's store ($driver) failed"

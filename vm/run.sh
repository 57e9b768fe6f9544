#!/usr/bin/env bash
# The VM tier: boot a Debian 12 guest with systemd and cgroup v2 under qemu (TCG) and run the
# test files named in vm/suite.txt inside it with the tap runner, as root and as uid 1000 in
# that user's systemd user manager; read the TAP back and print per-user totals.
# Exits 0 only when every listed file ran, nothing failed and assertions passed as each user.
#
#   bash vm/run.sh              the suite (pnpm test:vm)
#   bash vm/run.sh --exec FILE  boot, run FILE as root in the guest instead, print its output
#
# See vm/README.md for timings, the cache, and how to debug with the serial log.
# Env: AGENT_SANDBOX_VM_TIMEOUT (seconds qemu may run, default 3300), AGENT_SANDBOX_VM_CACHE,
# AGENT_SANDBOX_VM_LOGS (where the last run's logs stay), AGENT_SANDBOX_VM_IMAGES and
# AGENT_SANDBOX_VM_AGENT_IMAGES (the podman images carried in, space-separated: see payload.sh),
# AGENT_SANDBOX_VM_MEMORY (MiB, default 4096).
# shellcheck source-path=SCRIPTDIR/..
set -euo pipefail

AS_PROG=vm
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd -- "$here/.." && pwd)
# shellcheck source=image/lib.sh
. "$here/../image/lib.sh"

exec_file=
case ${1:-} in
  --exec) exec_file=${2:?--exec needs a FILE}; [ -f "$exec_file" ] || as_die "--exec: $exec_file is not a file" ;;
  '') ;;
  *) as_die "usage: bash vm/run.sh [--exec FILE]" ;;
esac

timeout_s=${AGENT_SANDBOX_VM_TIMEOUT:-3300}
cache=${AGENT_SANDBOX_VM_CACHE:-/var/cache/agent-sandbox-vm}
logs=${AGENT_SANDBOX_VM_LOGS:-$cache/last-run}
read -r -a images <<<"${AGENT_SANDBOX_VM_IMAGES:-localhost/agent-sandbox:latest localhost/agent-sandbox-busybox:latest}"
export AGENT_SANDBOX_VM_IMAGES="${images[*]}"

command -v qemu-system-x86_64 >/dev/null 2>&1 || as_die "qemu-system-x86_64 is missing (apt-get install qemu-system-x86, or bash scripts/setup.sh)"
as_need debugfs mkfs.ext4 podman node tar
as_need_root
for d in "$repo"/tools/*/ "$repo"/lib/*/; do
  [ -d "$d/dist" ] || as_die "$d has no dist/: build the checkout first (pnpm run build)"
done
[ -x "$repo/node_modules/.bin/tap" ] || as_die "no node_modules/.bin/tap: pnpm install --frozen-lockfile first"

total_start=$SECONDS
root_dir=$(AGENT_SANDBOX_VM_CACHE=$cache bash "$here/build-root.sh")

work=$(mktemp -d "${TMPDIR:-/var/tmp}/agent-sandbox-vm.XXXXXX")
chmod 0711 "$work"
qemu_pid=
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
  if [ -n "$qemu_pid" ] && kill -0 "$qemu_pid" 2>/dev/null; then kill -KILL "$qemu_pid" 2>/dev/null || true; fi
  rm -rf --one-file-system -- "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# --- the payload disk: this run's checkout, node, image stores, lists; the guest writes out/ --
as_log "assembling the payload disk (checkout, node, image stores of ${images[*]} ${AGENT_SANDBOX_VM_AGENT_IMAGES-localhost/agent-sandbox-agents:latest})"
step=$SECONDS
bash "$here/payload.sh" "$work/payload" "$exec_file"
cp -r "$work/payload/suite" "$work/suite"
# Room for what the guest writes there besides the results: both users' containers run from
# these stores. uid 1000's keep-id copies of the images are made on the host (user-store.sh);
# were the guest ever to make its own (another mapping), the agents image's alone is 963 MB,
# and a full disk fails root's sessions too. The file is sparse: room costs the host nothing.
size_mb=$(($(du -sm "$work/payload" | cut -f1) * 5 / 4 + 512 + 2048))
truncate -s "${size_mb}M" "$work/payload.img"
mkfs.ext4 -q -L asvm-payload -d "$work/payload" "$work/payload.img"
rm -rf "$work/payload"
as_log "payload disk ready (${size_mb} MB) in $((SECONDS - step)) s"

# --- boot ------------------------------------------------------------------------------------
serial=$work/serial.log
: >"$serial"
as_log "booting the guest (qemu TCG, 2 CPUs, timeout ${timeout_s} s; serial log: $logs/serial.log)"
boot=$SECONDS
qemu-system-x86_64 -accel tcg,thread=multi -cpu "${AGENT_SANDBOX_VM_CPU:-max}" -m "${AGENT_SANDBOX_VM_MEMORY:-4096}" -smp 2 \
  -kernel "$root_dir/vmlinuz" -initrd "$root_dir/initrd.img" \
  -append "console=ttyS0 root=/dev/vda rw panic=1 quiet" \
  -drive "file=$root_dir/disk.img,format=raw,if=virtio,snapshot=on" \
  -drive "file=$work/payload.img,format=raw,if=virtio" \
  -nic none -display none -monitor none -serial "file:$serial" -no-reboot \
  >"$work/qemu.log" 2>&1 &
qemu_pid=$!
shown=0
timed_out=0
quiet_since=$SECONDS
while kill -0 "$qemu_pid" 2>/dev/null; do
  sleep 2
  # The guest's progress lines ("asvm: ..." anywhere in a console line), each printed once.
  lines=$(grep -ao 'asvm: .*' "$serial" | tr -d '\r' || true)
  count=$(printf '%s' "$lines" | grep -c '' || true)
  if [ "$count" -gt "$shown" ]; then
    printf '%s\n' "$lines" | tail -n "+$((shown + 1))" | sed "s/^asvm: /vm: [$((SECONDS - boot)) s] guest: /" >&2
    shown=$count
    quiet_since=$SECONDS
  elif [ $((SECONDS - quiet_since)) -ge 60 ]; then
    as_log "[$((SECONDS - boot)) s] guest still running (a test file reports when it ends)"
    quiet_since=$SECONDS
  fi
  if [ $((SECONDS - boot)) -ge "$timeout_s" ]; then
    as_log "timeout: the guest ran ${timeout_s} s; killing qemu"
    kill -KILL "$qemu_pid" 2>/dev/null || true
    timed_out=1
  fi
done
qemu_status=0
wait "$qemu_pid" || qemu_status=$?
qemu_pid=
as_log "guest powered off after $((SECONDS - boot)) s (qemu exit $qemu_status)"

# --- results -----------------------------------------------------------------------------------
rm -rf "$logs"
mkdir -p "$logs"
cp "$serial" "$work/qemu.log" "$logs/"
# A guest killed at the timeout never unmounted the disk: what it wrote since the last journal
# commit (ext4: every 5 s) is only in the journal, which debugfs does not read. Replay it first.
e2fsck -p -E journal_only "$work/payload.img" >"$work/e2fsck.log" 2>&1 || true
debugfs -R "rdump /out $logs" "$work/payload.img" >/dev/null 2>"$work/debugfs.log" ||
  as_die "debugfs could not read the results back: $(cat "$work/debugfs.log")"
as_log "logs of this run: $logs (serial.log, out/: TAP, stderr, facts, journal)"
[ "$timed_out" = 0 ] || { as_tail_log "$logs/serial.log"; as_die "the guest did not finish within ${timeout_s} s"; }
[ -s "$logs/out/facts.txt" ] || { as_tail_log "$logs/serial.log"; as_die "the guest never ran the payload (see $logs/serial.log)"; }
sed 's/^/vm: guest /' "$logs/out/facts.txt" >&2

if [ -n "$exec_file" ]; then
  cat "$logs/out/exec.log" 2>/dev/null || true
  status=$(cat "$logs/out/exec.status" 2>/dev/null || echo 1)
  as_log "--exec script exited $status; whole run $((SECONDS - total_start)) s"
  exit "$status"
fi

status=0
node "$here/suite.mjs" totals "$logs/out" "$work/suite" || status=$?
as_log "whole run $((SECONDS - total_start)) s"
exit "$status"

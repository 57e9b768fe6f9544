#!/usr/bin/env bash
# Runs inside the VM tier's guest, as root, at boot (agent-sandbox-vm.service, after
# multi-user.target); the guest powers off when it returns. Reads everything from the payload
# disk that vm/run.sh made for this run and writes the results back to it (/mnt/payload/out):
#   facts.txt              what this guest is (kernel, systemd, podman, crun, cgroups)
#   root.tap, user.tap     the tap runner's TAP output of the listed files, as root and as dev
#   *.status, *.stderr     the runners' exit statuses and their stderr
#   leak-*.log, .status    scripts/leak-check.sh after the suite, as root and as dev
#   api-route.log          the API route's relay connections and name queries (uid 1000's real agents)
#   exec.log, exec.status  a developer's `vm/run.sh --exec FILE` instead of the suite
#   journal.txt            the whole boot's journal, for debugging
# Lines starting with "asvm:" go to the serial console: the host prints them as progress.
set -uo pipefail

P=/mnt/payload
out=$P/out
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
say() { printf 'asvm: %s\n' "$*"; }
finish() { journalctl -b --no-pager >"$out/journal.txt" 2>&1 || true; sync; }
trap finish EXIT

# The host's node binary (the suite's node) on every user's PATH.
ln -sf "$P/bin/node" /usr/local/bin/node

# as_dev CMD... : CMD as uid 1000 inside dev's own systemd user manager (user@1000.service):
# its delegated cgroup, its XDG_RUNTIME_DIR and session bus, as a user's own services get them.
as_dev() {
  systemd-run --user --machine=dev@ --wait --pipe --quiet --collect \
    --working-directory="$P/checkout-user" -- "$@"
}

facts() {
  echo "kernel: $(uname -r)"
  echo "systemd: $(systemctl --version | head -n 1)"
  echo "podman: $(podman --version)"
  echo "crun: $(crun --version | head -n 1)"
  echo "runc: $(runc --version | head -n 1)"
  echo "conmon: $(conmon --version | head -n 1)"
  echo "cgroup fs: $(stat -fc %T /sys/fs/cgroup)"
  echo "cgroup controllers (root): $(cat /sys/fs/cgroup/cgroup.controllers)"
  echo "cgroup controllers (user@1000.service): $(cat /sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/cgroup.controllers 2>&1)"
  echo "podman rootful: $(podman info --format '{{.Host.CgroupManager}} {{.Host.CgroupsVersion}} {{.Host.OCIRuntime.Name}} {{.Store.GraphDriverName}}' 2>&1)"
  echo "podman rootless: $(as_dev podman info --format '{{.Host.CgroupManager}} {{.Host.CgroupsVersion}} {{.Host.OCIRuntime.Name}} {{.Store.GraphDriverName}}' 2>&1)"
  echo "dmesg_restrict: $(cat /proc/sys/kernel/dmesg_restrict)"
}

# run_suite NAME RUNNER... : the tap runner over the NAME list, TAP to out/NAME.tap; each
# file and each of its tests is echoed to the console as it ends. Under CPU emulation a file
# takes 10-20 times as long as on the host, so tap's per-file timeout (600 s in package.json)
# is raised; the host's timeout still bounds the whole guest. AGENT_SANDBOX_TIER=vm tells a
# test it runs in the guest (the escape suite leaves there the rows the host tier proves). The
# lists name the test files as JS (vm/payload.sh made them): TAP_TYPE_STRIP_ONLY=1 keeps tap's
# TypeScript plugin from loading ts-node into each test process (on node 20 it adds nothing else).
run_suite() {
  local name=$1 start=$SECONDS status file
  shift
  mapfile -t files <"$P/suite/$name.list"
  say "$name: ${#files[@]} test files"
  "$@" env TAP_TYPE_STRIP_ONLY=1 AGENT_SANDBOX_TIER=vm \
    node_modules/.bin/tap --reporter=tap --no-color --jobs=1 --timeout=1800 "${files[@]}" \
    2>"$out/$name.stderr" | tee "$out/$name.tap" |
    while IFS= read -r line; do
      # Each file as it starts and ends, each of its top-level tests as it ends.
      case $line in
        "# Subtest: "*) file=${line#\# Subtest: }; say "$name: $file" ;;
        "ok "* | "not ok "*) say "$name: $line" ;;
        "    ok "* | "    not ok "*) say "$name:   ${line#    }" ;;
      esac
    done
  status=${PIPESTATUS[0]}
  echo "$status" >"$out/$name.status"
  say "$name: tap exited $status after $((SECONDS - start)) s"
}

# The image stores vm/payload.sh made on the host, where each user's podman looks for them.
mount_stores() {
  local user_store=/home/dev/.local/share/containers/storage
  mkdir -p /var/lib/containers/storage
  mount --bind "$P/storage/root" /var/lib/containers/storage
  runuser -u dev -- mkdir -p "$user_store"
  mount --bind "$P/storage/user" "$user_store"
}

say "guest up after $(cut -d' ' -f1 /proc/uptime) s"
mount_stores
facts >"$out/facts.txt" 2>&1

# A developer's script instead of the suite (vm/run.sh --exec FILE): nothing loaded for it.
if [ -f "$P/guest/exec.sh" ]; then
  say "running the --exec script as root"
  bash "$P/guest/exec.sh" >"$out/exec.log" 2>&1
  echo $? >"$out/exec.status"
  exit 0
fi

# The API route for uid 1000 (lib/testkit/src/api-route-host.ts): a rootless session reaches
# its API only through its broker, by name, at an address one hop away, and the namespace that
# puts one there is root's to make. Root opens it once: the API addresses in a namespace of
# their own, a relay from them to a socket in a directory only dev can write (where dev's test
# runs its model server), and a name server for api.openai.com and api.anthropic.com, which
# resolv.conf names (an /etc/hosts entry would be copied into every container by podman).
# Closed before the leak checks, which count network namespaces.
api_route_pid=
api_route_up() {
  local state=/run/agent-sandbox-api-route
  node "$P/checkout-root/lib/testkit/dist/api-route-cli.js" "$state" 1000 >"$out/api-route.log" 2>&1 &
  api_route_pid=$!
  for _ in $(seq 1 120); do
    [ -s "$state/route.json" ] && break
    kill -0 "$api_route_pid" 2>/dev/null || break
    sleep 1
  done
  if [ ! -s "$state/route.json" ]; then
    say "the API route did not open: $(tail -n 3 "$out/api-route.log" | tr '\n' ' ')"
    return
  fi
  rm -f /etc/resolv.conf
  printf 'nameserver 127.0.0.1\n' >/etc/resolv.conf
  say "API route open for uid 1000: $(tr -d ' \n' <"$state/route.json")"
}
api_route_down() {
  [ -n "$api_route_pid" ] || return 0
  kill -TERM "$api_route_pid" 2>/dev/null
  wait "$api_route_pid" 2>/dev/null
  say "API route closed"
}
[ ! -s "$P/suite/user.list" ] || api_route_up

# Root's list and uid 1000's at the same time: each runner waits on its processes most of the
# time; two streams keep the guest's two CPUs busy, one leaves one idle.
# (Waited for by pid: the API route runs in the background until it is closed.)
suites=()
if [ -s "$P/suite/root.list" ]; then (cd "$P/checkout-root" && run_suite root) & suites+=($!); fi
if [ -s "$P/suite/user.list" ]; then run_suite user as_dev & suites+=($!); fi
[ "${#suites[@]}" -eq 0 ] || wait "${suites[@]}"
api_route_down

# Nothing left behind, by each user's own view: containers, slices, owner records, sentinels.
leak_check() {
  local name=$1
  shift
  "$@" bash "$P/checkout-$name/scripts/leak-check.sh" >"$out/leak-$name.log" 2>&1
  echo $? >"$out/leak-$name.status"
  say "$name: $(tail -n 1 "$out/leak-$name.log")"
}
[ ! -s "$P/suite/root.list" ] || leak_check root
[ ! -s "$P/suite/user.list" ] || leak_check user as_dev
say "done after $(cut -d' ' -f1 /proc/uptime) s"

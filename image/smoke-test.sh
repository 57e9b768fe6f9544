#!/usr/bin/env bash
# Smoke-test the built images against a real podman, with the flags sessions use:
#   uid 1000, HOME, node/git present, tini is PID 1, no capabilities, no_new_privs, the
#   container-side tools start from their snapshots, exit status passed through, fail-closed
#   credentials (exit 85), busybox image starts.
# Run after build-all.sh. Containers are named imgtest-<pid>-* and run with --rm.
set -euo pipefail

AS_PROG=smoke-test
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

AGENT=${AGENT_SANDBOX_IMAGE:-localhost/agent-sandbox:latest}
BUSYBOX=${AGENT_SANDBOX_BUSYBOX_IMAGE:-localhost/agent-sandbox-busybox:latest}
RUN=(podman --runtime runc run --rm --cap-drop=ALL --security-opt=no-new-privileges
  --ulimit nofile=4096:4096 --ulimit nproc=4096:4096 --network=none --user 1000:1000)
n=0
name() { n=$((n + 1)); printf 'imgtest-%s-%s' "$$" "$n"; }

secrets=$(mktemp -d)
trap 'rm -rf -- "$secrets"' EXIT
chmod 0755 "$secrets"

failures=0
check() { # check DESCRIPTION EXPECTED ACTUAL
  if [ "$2" = "$3" ]; then
    as_log "ok: $1"
  else
    as_log "FAIL: $1: expected [$2], got [$3]"
    failures=$((failures + 1))
  fi
}

for img in "$AGENT" "$BUSYBOX"; do
  podman image exists "$img" || as_die "$img is absent: run image/build-all.sh"
done

# shellcheck disable=SC2016 # $HOME is expanded inside the container
out=$("${RUN[@]}" --name "$(name)" "$AGENT" sh -c '
  id -u; id -g; echo "$HOME"; pwd
  node -p "process.versions.node.split(\".\")[0]"
  git --version >/dev/null && echo git
  tr "\0" "\n" </proc/1/cmdline | head -n 3 | paste -sd" "
  grep -E "^(CapEff|NoNewPrivs)" /proc/self/status | tr -s "\t" " "')
check "agent image: uid, gid, HOME, cwd, node major, git, PID 1, caps, no_new_privs" \
  "1000|1000|/sandbox/home|/sandbox/home|18|git|/usr/bin/tini -- /usr/local/bin/agent-entrypoint|CapEff: 0000000000000000|NoNewPrivs: 1" \
  "$(printf '%s\n' "$out" | paste -sd'|')"

# The container-side tools start from the V8 startup snapshots made at build (run-snapshot), and
# say nothing on stderr doing it (node 18 warns about builtins it cannot snapshot: the relay's).
out=$("${RUN[@]}" --name "$(name)" --entrypoint sh "$AGENT" -c '
  readlink /usr/local/bin/cred-stage; readlink /usr/local/bin/egress-relay
  cred-stage runtimes 2>&1 >/dev/null | wc -c
  egress-relay --socket /run/none.sock -- true 2>&1 | wc -c')
check "agent image: cred-stage and egress-relay start from their snapshots, quietly" \
  "../lib/agent-sandbox/run-snapshot|../lib/agent-sandbox/run-snapshot|0|0" \
  "$(printf '%s\n' "$out" | paste -sd'|')"

status=0
"${RUN[@]}" --name "$(name)" "$AGENT" sh -c 'exit 42' || status=$?
check "agent image: exit status passed through" 42 "$status"

status=0
"${RUN[@]}" --name "$(name)" -v "$secrets:/sandbox-secrets:ro" "$AGENT" true || status=$?
check "agent image: empty /sandbox-secrets runs the command" 0 "$status"

printf '{}\n' >"$secrets/token.json"
chmod 0644 "$secrets/token.json"
status=0
err=$("${RUN[@]}" --name "$(name)" -v "$secrets:/sandbox-secrets:ro" "$AGENT" echo SHOULD-NOT-RUN 2>&1) || status=$?
if "${RUN[@]}" --name "$(name)" --entrypoint sh "$AGENT" -c 'command -v cred-stage' >/dev/null; then
  as_log "skip: fail-closed check (this image has cred-stage)"
else
  check "agent image: staged secret without cred-stage fails closed" 85 "$status"
  case $err in
    *SHOULD-NOT-RUN*) check "agent image: command not run when failing closed" no yes ;;
    *"cred-stage is not installed"*) as_log "ok: the error names the cause" ;;
    *) check "agent image: fail-closed message names cred-stage" "cred-stage is not installed" "$err" ;;
  esac
fi

# shellcheck disable=SC2016
out=$("${RUN[@]}" --name "$(name)" "$BUSYBOX" sh -c 'id -u; echo "$HOME"; test -d /sandbox/workspaces && echo ws')
check "busybox image: uid, HOME, workspaces dir" "1000|/sandbox/home|ws" "$(printf '%s\n' "$out" | paste -sd'|')"

[ "$failures" -eq 0 ] || as_die "$failures check(s) failed"
as_log "all checks passed"

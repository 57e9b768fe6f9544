#!/usr/bin/env bash
# The main job, in one command: a real agent CLI (Codex CLI, then Claude Code) runs one whole
# session contained in a podman container through `agent-sandbox run`, on the built-in agents
# image, against a scripted model server that only the container can reach: the server listens
# on 127.0.0.1 inside a network namespace made for the session, and the container joins that
# namespace (`--network ns:/run/netns/<name>`), so nothing else is reachable from inside.
#
# The agent is given a tiny project whose tests fail (scripts/demo/project): it reads the code,
# edits it, runs the project's tests with node inside the container, and commits. The demo then
# shows, from the host: the edit, the commit, the launcher's ledger verdict and peaks, that the
# server saw the staged (canary) credential as the bearer token, and that the host credential
# file is byte-identical. Nothing of the user's own (~/.codex, ~/.claude) is read or touched:
# the credential is a canary in a temporary HOME.
#
# Usage: bash scripts/demo.sh [--runtime codex|claude|both] [--ledger FILE]
# Progress on stderr; the summary on stdout. Needs root (rootful podman, `ip netns`), the build
# (pnpm run build) and the agents image (bash image/build-agents.sh); scripts/setup.sh does both.
# Everything it makes (namespace, server, temp dirs, container) is removed on every exit path.
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd -- "$here/.." && pwd)
image=localhost/agent-sandbox-agents:latest
launcher=$repo/tools/agent-sandbox/bin/agent-sandbox
server_js=$repo/test/model-server/model-server.mjs
prompt='The tests of this project fail. Fix the bug, run the tests, and commit the fix.'

say() { printf 'demo: %s\n' "$*" >&2; }
die() { printf 'demo: %s\n' "$*" >&2; exit 1; }

runtimes=(codex claude)
ledger=
while [ $# -gt 0 ]; do
  case $1 in
    --runtime)
      [ $# -ge 2 ] || die "--runtime needs a value: codex, claude or both"
      case $2 in
        codex | claude) runtimes=("$2") ;;
        both) runtimes=(codex claude) ;;
        *) die "--runtime: expected codex, claude or both, got '$2'" ;;
      esac
      shift 2 ;;
    --ledger)
      [ $# -ge 2 ] || die "--ledger needs a file"
      case $2 in /*) ledger=$2 ;; *) die "--ledger: expected an absolute path, got '$2'" ;; esac
      shift 2 ;;
    -h | --help) sed -n '2,19p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done

[ "$(id -u)" = 0 ] || die "run as root: the session uses rootful podman (rootless ignores limits on cgroup v1 here) and a network namespace (ip netns)"
for cmd in podman ip node git sha256sum; do
  command -v "$cmd" >/dev/null || die "$cmd is missing: run bash scripts/setup.sh"
done
[ -f "$repo/tools/agent-sandbox/dist/cli.js" ] || die "the tools are not built: run pnpm run build (or bash scripts/setup.sh)"
podman image exists "$image" || die "$image is missing: run bash image/build-agents.sh (or bash scripts/setup.sh)"

# ---- everything made below is removed by cleanup, on every exit path ----
tmp=
netns=
server_pid=
session_ids=()
cleanup() {
  local id
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  if [ -n "$netns" ]; then ip netns del "$netns" 2>/dev/null || true; fi
  for id in "${session_ids[@]}"; do
    podman --runtime runc rm --force --ignore --time 0 "agent-sandbox-$id" >/dev/null 2>&1 || true
  done
  if [ -n "$tmp" ]; then rm -rf --one-file-system -- "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

tmp=$(mktemp -d "${TMPDIR:-/tmp}/agent-sandbox-demo.XXXXXX")
chmod 0755 "$tmp" # the agent (uid 1000) must reach <root>/workspaces and <root>/homes below it
root=$tmp/root
host_home=$tmp/host-home
mkdir -p "$root/workspaces" "$root/homes" "$host_home"
[ -n "$ledger" ] || ledger=$tmp/ledger.jsonl
canary="sk-demo-canary-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"

# ---- the model server, reachable only on the session's own loopback ----
netns="asdemo-$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')"
say "network namespace $netns: loopback only; the scripted model server listens on 127.0.0.1:8080 in it"
ip netns add "$netns"
ip netns exec "$netns" ip link set lo up
token_sha=$(printf '%s' "$canary" | sha256sum | cut -d' ' -f1)
: >"$tmp/requests.jsonl"
ip netns exec "$netns" node "$server_js" --script "$here/demo/steps.json" --port 8080 \
  --record "$tmp/requests.jsonl" --token-sha256 "$token_sha" 2>"$tmp/server.log" &
server_pid=$!
for _ in $(seq 1 50); do
  grep -q listening "$tmp/server.log" 2>/dev/null && break
  kill -0 "$server_pid" 2>/dev/null || die "the model server exited: $(cat "$tmp/server.log")"
  sleep 0.1
done
grep -q listening "$tmp/server.log" || die "the model server did not start within 5 s"

summary=()
failed=0
run_one() {
  local runtime=$1 id ws home cred sha_before args=() rc start
  id="demo-$runtime-$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')"
  session_ids+=("$id")
  ws=$root/workspaces/$id
  home=$root/homes/$id

  say "[$runtime] workspace $ws: the demo project as a git repo, owned by the agent uid 1000"
  cp -R "$here/demo/project" "$ws"
  git -C "$ws" init -q -b main
  git -C "$ws" add -A
  git -C "$ws" -c user.name=Demo -c user.email=demo@sandbox.invalid commit -qm 'initial: sum subtracts'
  chown -R 1000:1000 "$ws"
  mkdir -p "$home"
  case $runtime in
    codex)
      mkdir -p "$host_home/.codex" "$home/.codex"
      cred=$host_home/.codex/auth.json
      printf '{"auth_mode":"apikey","OPENAI_API_KEY":"%s"}\n' "$canary" >"$cred"
      cp "$here/demo/codex-config.toml" "$home/.codex/config.toml"
      args=(exec --dangerously-bypass-approvals-and-sandbox --skip-git-repo-check --ephemeral "$prompt")
      ;;
    claude)
      mkdir -p "$host_home/.claude"
      cred=$host_home/.claude/.credentials.json
      printf '{"claudeAiOauth":{"accessToken":"%s","refreshToken":"demo","expiresAt":%s,"scopes":["user:inference"],"subscriptionType":"max"}}\n' \
        "$canary" "$(( ($(date +%s) + 86400) * 1000 ))" >"$cred"
      args=(-p "$prompt" --dangerously-skip-permissions --output-format json)
      ;;
  esac
  chmod 0600 "$cred"
  chown -R 1000:1000 "$home"
  sha_before=$(sha256sum "$cred" | cut -d' ' -f1)
  say "[$runtime] credential: a canary in a temporary HOME ($cred), staged by cred-stage, never in argv or env"

  say "[$runtime] agent-sandbox run --runtime $runtime --workspace $id --image $image --network ns:/run/netns/$netns -- $(printf "%q " "${args[@]}")"
  start=$(date +%s%N)
  set +e
  env -i HOME="$host_home" PATH=/usr/bin:/bin LANG=C.UTF-8 ANTHROPIC_BASE_URL=http://127.0.0.1:8080 \
    "$launcher" run --runtime "$runtime" --workspace "$id" --root "$root" --ledger "$ledger" \
    --image "$image" --network "ns:/run/netns/$netns" -- "${args[@]}" </dev/null >"$tmp/$id.out" 2>"$tmp/$id.err"
  rc=$?
  set -e
  say "[$runtime] the session ended with exit $rc after $(( ($(date +%s%N) - start) / 1000000 )) ms"
  if podman container exists "agent-sandbox-$id"; then
    say "[$runtime] the container agent-sandbox-$id still exists after the session"; failed=1
  else
    say "[$runtime] its container agent-sandbox-$id is gone (destroyed as a unit)"
  fi
  if cat "$tmp/$id.out" "$tmp/$id.err" "$ledger" 2>/dev/null | grep -qF "$canary"; then
    say "[$runtime] the canary credential appeared in output or the ledger"; failed=1
  fi
  if [ "$rc" != 0 ]; then
    tail -n 20 "$tmp/$id.err" >&2
    failed=1
  fi

  local edit commit verdict identical
  # The committed change, one line: "src/sum.mjs: <removed> -> <added>".
  edit=$(git -c "safe.directory=$ws" -C "$ws" diff -U0 HEAD~1 2>/dev/null | awk '
    /^\+\+\+ b\// { file = substr($0, 7) }
    /^-[^-]/ { sub(/^-[ \t]*/, ""); old = old $0 }
    /^\+[^+]/ { sub(/^\+[ \t]*/, ""); new = new $0 }
    END { if (file != "") printf "%s: %s -> %s", file, old, new }' || true)
  commit=$(git -c "safe.directory=$ws" -C "$ws" log -1 --format='%h %s (%an)' 2>/dev/null || true)
  # shellcheck disable=SC2016 # a JavaScript template literal, not shell
  verdict=$(node -e '
    const fs = require("fs");
    const [ledger, id, requests] = process.argv.slice(1);
    const read = (f) => (fs.existsSync(f) ? fs.readFileSync(f, "utf8") : "").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l));
    const line = read(ledger).filter((l) => l.sessionId === id).pop();
    const reqs = read(requests).filter((r) => (r.api === "responses" || r.api === "messages") && !r.side);
    if (!line) { console.log("no ledger line"); process.exit(0); }
    const p = line.peak || {};
    const mib = p.memoryBytes == null ? "?" : (p.memoryBytes / 2 ** 20).toFixed(0) + " MiB";
    console.log(`${line.outcome}, ${line.reason}, exit ${line.exitCode}; peak ${mib}, ${p.pids} pids, ${p.cpuSeconds} CPU s; ` +
      `staged token seen by the server on ${reqs.filter((r) => r.tokenMatched).length}/${reqs.length} model requests`);
  ' "$ledger" "$id" "$tmp/requests.jsonl")
  : >"$tmp/requests.jsonl" # the next runtime's requests start from empty
  if [ "$(sha256sum "$cred" | cut -d' ' -f1)" = "$sha_before" ]; then identical=yes; else identical=NO; failed=1; fi
  [ -n "$commit" ] && [ "${commit#* }" != "initial: sum subtracts (Demo)" ] || failed=1
  summary+=(
    "$runtime:"
    "  edit:    ${edit:-none}"
    "  commit:  ${commit:-none}"
    "  ledger:  $verdict"
    "  host credential file byte-identical: $identical"
  )
}

for runtime in "${runtimes[@]}"; do run_one "$runtime"; done

printf '%s\n' "agent-sandbox demo: ${#runtimes[@]} contained session(s) on $image, model server on the session's own loopback" "${summary[@]}"
[ "$ledger" = "$tmp/ledger.jsonl" ] || printf '%s\n' "ledger: $ledger"
if [ "$failed" != 0 ]; then
  say "something did not go as scripted (see above)"
  exit 1
fi
say "done; the namespace, the server, the session directories and the containers are removed"

#!/usr/bin/env bash
# The main job, in one command: a real agent CLI (Codex CLI, then Claude Code) runs one whole
# session contained in a podman container through `agent-sandbox run`, on the built-in agents
# image, with the default egress: the container has no network (--network none) and its only
# way out is the session's own broker, which lets it reach its runtime's API hosts and nothing
# else. The agent calls https://api.openai.com/v1 or https://api.anthropic.com by those names.
# Here they are answered by a scripted model server in a fake internet (a network namespace on
# TEST-NET addresses, scripts/demo/fake-api.mjs) under a certificate of a CA made for this run,
# which the session is told to trust with --ca-file. The broker resolves the names with the
# system resolver: the launcher runs in a mount namespace of its own (unshare --mount) where a
# temporary hosts file is bind-mounted over /etc/hosts. The host's /etc/hosts is never written.
#
# The agent is given a tiny project whose tests fail (scripts/demo/project): it reads the code,
# edits it, runs the project's tests with node inside the container, and commits. The demo then
# shows, from the host: the edit, the commit, the launcher's ledger verdict and peaks, what the
# session reached and what was refused (the ledger's egress summary), that the server saw the
# staged (canary) credential as the bearer token, and that the host credential file is
# byte-identical. Nothing of the user's own (~/.codex, ~/.claude) is read or touched:
# the credential is a canary in a temporary HOME.
#
# Usage: bash scripts/demo.sh [--runtime codex|claude|both] [--ledger FILE]
# Progress on stderr; the summary on stdout. Needs root (rootful podman, `ip netns`, unshare),
# openssl, the build (pnpm run build) and the agents image (bash image/build-agents.sh);
# scripts/setup.sh does both. Everything it makes (fake internet, server, temp dirs, container)
# is removed on every exit path.
set -euo pipefail

here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd -- "$here/.." && pwd)
image=localhost/agent-sandbox-agents:latest
launcher=$repo/tools/agent-sandbox/bin/agent-sandbox
fake_api=$here/demo/fake-api.mjs
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
    -h | --help) sed -n '2,25p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done

[ "$(id -u)" = 0 ] || die "run as root: the session uses rootful podman (rootless ignores limits on cgroup v1 here), the fake internet a network namespace (ip netns) and the launcher a mount namespace (unshare)"
for cmd in podman ip node git sha256sum openssl unshare; do
  command -v "$cmd" >/dev/null || die "$cmd is missing: run bash scripts/setup.sh"
done
for built in tools/agent-sandbox/dist/cli.js lib/testkit/dist/index.js; do
  [ -f "$repo/$built" ] || die "the tools are not built ($built is missing): run pnpm run build (or bash scripts/setup.sh)"
done
podman image exists "$image" || die "$image is missing: run bash image/build-agents.sh (or bash scripts/setup.sh)"

# ---- everything made below is removed by cleanup, on every exit path ----
tmp=
fake_fd=
session_ids=()
cleanup() {
  local id
  # Closing its stdin stops the fake internet (it also stops if this shell is killed outright).
  # (bash cannot wait for a process substitution reliably: its last line says when it is done.)
  if [ -n "$fake_fd" ]; then
    exec {fake_fd}>&-
    for _ in $(seq 1 150); do grep -q 'fake-api: stopped' "$tmp/fake.log" 2>/dev/null && break; sleep 0.1; done
  fi
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
mkdir -p "$root/workspaces" "$root/homes" "$host_home" "$tmp/fake"
[ -n "$ledger" ] || ledger=$tmp/ledger.jsonl
canary="sk-demo-canary-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"

# ---- the fake internet: the scripted model server as api.openai.com and api.anthropic.com ----
token_sha=$(printf '%s' "$canary" | sha256sum | cut -d' ' -f1)
exec {fake_fd}> >(exec node "$fake_api" --dir "$tmp/fake" --script "$here/demo/steps.json" --token-sha256 "$token_sha" >"$tmp/fake.json" 2>"$tmp/fake.log")
for _ in $(seq 1 150); do
  [ -s "$tmp/fake.json" ] && break
  grep -q 'fake-api: stopped' "$tmp/fake.log" 2>/dev/null && die "the fake internet did not start: $(cat "$tmp/fake.log")"
  sleep 0.1
done
[ -s "$tmp/fake.json" ] || die "the fake internet did not start within 15 s: $(cat "$tmp/fake.log")"
field() { node -e 'process.stdout.write(String(JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"))[process.argv[2]]))' "$tmp/fake.json" "$1"; }
ca_file=$(field caFile)
hosts_file=$(field hostsFile)
requests=$(field record)
say "fake internet $(field netns): the scripted model server answers as api.openai.com and api.anthropic.com on $(field v4) and [$(field v6)] port 443 (TLS, a CA made for this run: $ca_file)"
say "the launcher runs with its own /etc/hosts (unshare --mount; a bind mount of $hosts_file), so its broker finds those names there; the host's /etc/hosts is untouched"
# The launcher in a mount namespace of its own, with the hosts file over /etc/hosts; exec keeps
# the pid, so the launcher is the process the shell waits for.
# shellcheck disable=SC2016 # $1 and $@ belong to the inner shell
private_hosts=(unshare --mount --propagation private -- /bin/sh -c 'mount --bind -- "$1" /etc/hosts && shift && exec "$@"' private-hosts "$hosts_file")

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

  say "[$runtime] agent-sandbox run --runtime $runtime --workspace $id --image $image --ca-file $ca_file -- $(printf "%q " "${args[@]}")"
  start=$(date +%s%N)
  set +e
  # No --network: the default egress, the session's own broker and the runtime's allowlist.
  # Claude Code is not given ANTHROPIC_BASE_URL: its default is the real API's.
  env -i HOME="$host_home" PATH=/usr/bin:/bin LANG=C.UTF-8 \
    "${private_hosts[@]}" "$launcher" run --runtime "$runtime" --workspace "$id" --root "$root" --ledger "$ledger" \
    --image "$image" --ca-file "$ca_file" -- "${args[@]}" </dev/null >"$tmp/$id.out" 2>"$tmp/$id.err"
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
    const e = line.egress || {};
    const s = e.summary;
    const kb = (n) => (n / 1024).toFixed(0) + " KB";
    const reached = s ? s.reached.map((r) => `${r.host}:${r.port} (${r.connections} connection${r.connections === 1 ? "" : "s"}, ${kb(r.bytesUp)} up, ${kb(r.bytesDown)} down)`).join(", ") || "nothing" : "no summary";
    const refused = s ? s.refused.map((r) => `${r.host}:${r.port} ${r.rule} x${r.count}`).join(", ") || "none" : "no summary";
    console.log(`${e.mode}, allowlist ${(e.allow || []).join(" ")}; reached ${reached}; refused ${refused}`);
  ' "$ledger" "$id" "$requests")
  egress=$(printf '%s\n' "$verdict" | sed -n 2p)
  verdict=$(printf '%s\n' "$verdict" | sed -n 1p)
  : >"$requests" # the next runtime's requests start from empty
  if [ "$(sha256sum "$cred" | cut -d' ' -f1)" = "$sha_before" ]; then identical=yes; else identical=NO; failed=1; fi
  [ -n "$commit" ] && [ "${commit#* }" != "initial: sum subtracts (Demo)" ] || failed=1
  summary+=(
    "$runtime:"
    "  edit:    ${edit:-none}"
    "  commit:  ${commit:-none}"
    "  ledger:  $verdict"
    "  egress:  $egress"
    "  host credential file byte-identical: $identical"
  )
}

for runtime in "${runtimes[@]}"; do run_one "$runtime"; done

printf '%s\n' "agent-sandbox demo: ${#runtimes[@]} contained session(s) on $image, each reaching its API by name through its own egress broker" "${summary[@]}"
[ "$ledger" = "$tmp/ledger.jsonl" ] || printf '%s\n' "ledger: $ledger"
if [ "$failed" != 0 ]; then
  say "something did not go as scripted (see above)"
  exit 1
fi
say "done; the fake internet, the server, the session directories and the containers are removed"

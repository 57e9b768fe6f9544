#!/bin/sh
# /usr/local/lib/agent-sandbox/run-snapshot: how the image starts its container-side tools.
# /usr/local/bin/cred-stage and /usr/local/bin/egress-relay link here. Each tool is an esbuild
# bundle, /usr/local/lib/agent-sandbox/<tool>.js, with a V8 startup snapshot of it beside it,
# <tool>.blob, made at image build by this image's node (image/Containerfile). Debian's node 18
# has no startup snapshot of its own, so a plain start compiles node's bootstrap and then the
# bundle; started from the blob it does neither (docs/performance.md, "The container side").
#
# A blob loads only on a CPU that offers the same features as the one it was made on: V8 hashes
# the CPU features it found into the blob's tag (CET shadow stacks among them, which no flag
# turns off), and node refuses a blob whose tag differs. An image built on one machine runs on
# others (a copy in a guest, a pod on another node), so the build records what the builder's
# CPU said it was (this script run as run-snapshot, into built-on-cpu), and a start compares it
# with this machine's: the same, the blob; different, or either unreadable, the plain bundle,
# which runs the same code about 90 ms slower. Comparing costs no process: two read loops.
#
# The bundle's path stands where a script's path would (process.argv[1]), so the tool reads its
# arguments as a script does, started either way. A tool that fails, either way, fails the start:
# cred-stage failing fails the session closed (the entrypoint's failure path).
#
# --no-warnings: node 18 warns "built-in module node:net is not yet supported in user snapshots"
# whenever code started from a blob loads such a module, even after the start (the relay loads
# net and child_process then, on purpose); that line would land on the agent's terminal. These
# two tools have no other warning worth a user's line. It is node's flag, not the agent's: the
# relay's command does not inherit it.
name=${0##*/}
lib=/usr/local/lib/agent-sandbox

# This machine's CPU as the first processor's lines in /proc/cpuinfo say it: vendor, family,
# model, stepping and the feature flags, one line each, into $cpu. Empty when unreadable.
cpu=''
cpu_lines() {
  while IFS= read -r line; do
    case $line in
      '') break ;;
      vendor_id*|'cpu family'*|model*|stepping*|flags*) cpu="$cpu$line
" ;;
    esac
  done </proc/cpuinfo
} 2>/dev/null

if [ "$name" = run-snapshot ]; then
  cpu_lines
  printf '%s' "$cpu"
  exit 0
fi

built=''
if [ -r "$lib/built-on-cpu" ]; then
  while IFS= read -r line; do
    built="$built$line
"
  done <"$lib/built-on-cpu"
fi
cpu_lines
if [ -n "$cpu" ] && [ "$cpu" = "$built" ]; then
  exec /usr/bin/node --no-warnings --snapshot-blob "$lib/$name.blob" -- "$lib/$name.js" "$@"
fi
exec /usr/bin/node --no-warnings -- "$lib/$name.js" "$@"

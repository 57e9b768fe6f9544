#!/bin/sh
# /usr/local/lib/agent-sandbox/run-snapshot: how the image starts its container-side tools.
# /usr/local/bin/cred-stage and /usr/local/bin/egress-relay link here. Each tool is an esbuild
# bundle, /usr/local/lib/agent-sandbox/<tool>.js, with a V8 startup snapshot of it beside it,
# <tool>.blob, made at image build by this image's node (image/Containerfile). Debian's node 18
# has no startup snapshot of its own, so a plain start compiles node's bootstrap and then the
# bundle; started from the blob it does neither (docs/performance.md, "The container side").
#
# The bundle's path stands where a script's path would (process.argv[1]), so the tool reads its
# arguments as a script does. A blob node cannot load fails the start: no fallback, so cred-stage
# failing here fails the session closed (the entrypoint's failure path), as any failure of it does.
#
# --no-warnings: node 18 warns "built-in module node:net is not yet supported in user snapshots"
# whenever code started from a blob loads such a module, even after the start (the relay loads
# net and child_process then, on purpose); that line would land on the agent's terminal. These
# two tools have no other warning worth a user's line. It is node's flag, not the agent's: the
# relay's command does not inherit it.
name=${0##*/}
lib=/usr/local/lib/agent-sandbox
exec /usr/bin/node --no-warnings --snapshot-blob "$lib/$name.blob" -- "$lib/$name.js" "$@"

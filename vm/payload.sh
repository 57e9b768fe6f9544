#!/usr/bin/env bash
# Assemble one run's payload directory for the VM tier (vm/run.sh makes a disk of it):
#   guest/               vm/guest/run-in-guest.sh (+ the --exec FILE, copied in as the guest's exec script)
#   suite/               root.list, user.list (from vm/suite.txt)
#   bin/node             the host's node binary (node 20 runs in the guest as it is)
#   checkout-root/       the built checkout (dist/, node_modules), owned by root, its test
#                        files also as JS (below)
#   checkout-user/       the same, owned by uid 1000 (tap writes .tap/ into the tree it runs from)
#   storage/root/        root's podman storage with the images, made here with the host's podman
#   storage/user/        uid 1000's podman storage with the same images, made the way rootless
#                        podman makes it
#   out/                 where the guest writes its results (out/user is uid 1000's)
# Loading the images in the guest costs minutes under TCG (measured: 111-204 s for 263 MB);
# the same podman version (4.3.1 on both) makes each store natively in seconds.
#
# usage: payload.sh DIR [EXEC_FILE]   env: AGENT_SANDBOX_VM_IMAGES (space-separated, both
# stores), AGENT_SANDBOX_VM_AGENT_IMAGES (the same, kept apart so a run without real agents can
# leave them out: the agents image, 963 MB, for the real-agent sessions of both users),
# AGENT_SANDBOX_VM_SUITE (another list in suite.txt's form)
# shellcheck source-path=SCRIPTDIR/..
set -euo pipefail

AS_PROG=vm
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd -- "$here/.." && pwd)
# shellcheck source=image/lib.sh
. "$here/../image/lib.sh"

pay=${1:?usage: payload.sh DIR [EXEC_FILE]}
exec_file=${2:-}
read -r -a images <<<"${AGENT_SANDBOX_VM_IMAGES:-localhost/agent-sandbox:latest localhost/agent-sandbox-busybox:latest}"
read -r -a agent_images <<<"${AGENT_SANDBOX_VM_AGENT_IMAGES-localhost/agent-sandbox-agents:latest}"

mkdir -p "$pay/bin" "$pay/guest" "$pay/suite" "$pay/out/user" "$pay/storage"
node "$here/suite.mjs" lists "${AGENT_SANDBOX_VM_SUITE:-$here/suite.txt}" "$repo" "$pay/suite"
cp "$here/guest/run-in-guest.sh" "$pay/guest/"
[ -z "$exec_file" ] || cp "$exec_file" "$pay/guest/exec.sh"
cp "$(command -v node)" "$pay/bin/node"

# The checkout as built. pnpm's node_modules symlinks are relative and stay valid in a copy.
mkdir -p "$pay/checkout-root"
# The agents' npm tree (658 MB) is left out: the guest builds no image, and build-agents.sh
# checks an image carried in against the lockfile alone.
tar -C "$repo" --exclude=./.git --exclude=./.tap --exclude=./image/build --exclude=./image/agents/node_modules --exclude=./tmp -cf - . |
  tar -C "$pay/checkout-root" -xf -
# The test tree as JS beside its TypeScript, so the guest runs the tests without ts-node: under
# CPU emulation ts-node (and the TypeScript compiler it loads) cost each test process about a
# minute before the first test. esbuild turns the ~200 files into JS here in well under a second;
# the tests import each other with .js names already, and import.meta.url stays each file's own.
# The types were checked on the host (pnpm check).
(cd "$pay/checkout-root" &&
  find test tools/*/test lib/*/test -name node_modules -prune -o -name '*.ts' ! -name '*.d.ts' -print0 |
  xargs -0 "$repo/node_modules/.bin/esbuild" --outdir=. --outbase=. --format=esm --platform=node --target=node20 --log-level=warning) ||
  as_die "esbuild could not turn the test tree into JS (pnpm install first)"
cp -a "$pay/checkout-root" "$pay/checkout-user"
chown -R 1000:1000 "$pay/checkout-user" "$pay/out/user"

# The images, saved once, loaded into each store.
scratch=$(mktemp -d "${TMPDIR:-/var/tmp}/agent-sandbox-vm-store.XXXXXX")
trap 'rm -rf --one-file-system -- "$scratch"' EXIT
# uid 1000's podman (user-store.sh) must reach its store and the archive through these.
chmod 0711 "$pay" "$pay/storage" "$scratch"
# One archive for both stores: layers the images share are saved, and stored, once.
podman save --quiet --multi-image-archive --format docker-archive -o "$scratch/images.tar" "${images[@]}" "${agent_images[@]}" ||
  as_die "podman save of ${images[*]} ${agent_images[*]} failed: build them first (bash image/build-all.sh, bash image/build-agents.sh)"
chmod 0644 "$scratch/images.tar"

# store_clean DIR : drop what ties a store to the podman that made it: libpod's database
# (it records the graph root it was made under), the network backend choice and the quota
# device node of the host's filesystem. The guest's podman makes its own at first use.
store_clean() {
  rm -rf "$1/libpod" "$1/tmp" "$1/defaultNetworkBackend" "$1/overlay/backingFsBlockDev"
}

podman --root "$pay/storage/root" --runroot "$scratch/run-root" --tmpdir "$scratch/tmp-root" \
  load --quiet --input "$scratch/images.tar" >/dev/null || as_die "podman load into root's store failed"
store_clean "$pay/storage/root"

bash "$here/user-store.sh" "$scratch/images.tar" "$pay/storage/user"
store_clean "$pay/storage/user"

#!/usr/bin/env bash
# Installs everything agent-sandbox needs on a fresh Debian 12 machine, as root:
# Debian packages, pnpm (from the npm registry), the workspace's dependencies,
# the build, the offline container images, and every tool on PATH (symlinks under
# PREFIX, default /usr/local/bin: scripts/install-bins.sh). Safe to run again: each
# step is skipped or fast when already done.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'setup: %s\n' "$*" >&2; }

# podman's recommended packages come along on purpose (catatonit builds the local pause image
# that `podman kube play` needs; buildah, netavark): the machines these tools were measured on
# have them.
packages=(podman runc uidmap slirp4netns fuse-overlayfs catatonit shellcheck debootstrap busybox-static
  openssh-server openssh-client iproute2 util-linux procps git python3 jq ca-certificates openssl acl)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    say "missing Debian packages: ${missing[*]} (run as root, or: sudo apt-get install ${missing[*]})"
    exit 1
  fi
  say "installing Debian packages: ${missing[*]}"
  apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >&2
fi

# The VM tier (vm/run.sh) boots its guest with qemu under TCG; without its recommends (a GUI
# and firmware the tier never uses), which is how it was measured here.
if ! dpkg-query -W -f='${Status}' qemu-system-x86 2>/dev/null | grep -q 'install ok installed'; then
  if [ "$(id -u)" -ne 0 ]; then
    say "missing Debian package for the VM tier: qemu-system-x86 (sudo apt-get install --no-install-recommends qemu-system-x86)"
    exit 1
  fi
  say "installing qemu-system-x86 (the VM tier)"
  [ "${#missing[@]}" -gt 0 ] || apt-get update -q >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends qemu-system-x86 >&2
fi

want_pnpm=9.15.9
if [ "$(pnpm --version 2>/dev/null || true)" != "$want_pnpm" ]; then
  say "installing pnpm $want_pnpm from the npm registry"
  npm install -g "pnpm@$want_pnpm" >&2
fi

say "installing workspace dependencies (lockfile pinned)"
pnpm install --frozen-lockfile >&2
say "building"
pnpm run build >&2
say "building container images (offline; the first build takes a few minutes)"
bash image/build-all.sh
say "building the agent image (real Codex CLI and Claude Code, pinned in image/agents)"
bash image/build-agents.sh
say "putting the tools on PATH (symlinks under ${PREFIX:-/usr/local/bin})"
bash scripts/install-bins.sh
say "done: try \`agent-sandbox doctor\`, then \`agent-sandbox workspace new fix-1 --repo /path/to/your/repo\`"

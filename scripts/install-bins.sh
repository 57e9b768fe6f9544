#!/usr/bin/env bash
# Puts every tool on PATH: one symlink per executable in tools/*/bin (the launcher, the other
# tools, and the human-only hatches cdx-unsafe, cld-unsafe, ca-unsafe) under PREFIX, default
# /usr/local/bin. The shims find their own files through the link (realpath), so nothing is
# copied and a rebuild needs no reinstall. Safe to run again: a link that is already right is
# left alone, a link to another place (an older clone) is replaced, and a file that is not a
# link is never overwritten (exit 1, naming it).
#
# Usage: [PREFIX=DIR] bash scripts/install-bins.sh
set -euo pipefail

repo=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")/.." && pwd)
prefix=${PREFIX:-/usr/local/bin}
say() { printf 'install-bins: %s\n' "$*" >&2; }

case $prefix in
  /*) ;;
  *) say "PREFIX must be an absolute directory, got '$prefix'"; exit 1 ;;
esac
mkdir -p -- "$prefix"

linked=0
kept=0
for bin in "$repo"/tools/*/bin/*; do
  name=$(basename -- "$bin")
  if [ ! -f "$bin" ] || [ ! -x "$bin" ]; then continue; fi
  link=$prefix/$name
  if [ -L "$link" ] && [ "$(readlink -- "$link")" = "$bin" ]; then
    kept=$((kept + 1))
    continue
  fi
  if [ -e "$link" ] && [ ! -L "$link" ]; then
    say "$link exists and is not a symlink; not replacing it (remove it, or pick another PREFIX)"
    exit 1
  fi
  ln -sfn -- "$bin" "$link"
  say "linked $link -> $bin"
  linked=$((linked + 1))
done
say "$((linked + kept)) tools on PATH in $prefix ($linked linked now, $kept already there)"
case ":$PATH:" in
  *":$prefix:"*) ;;
  *) say "note: $prefix is not on your PATH" ;;
esac

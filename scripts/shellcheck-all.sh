#!/usr/bin/env bash
# Runs shellcheck on every shell file in the repo (by extension or by shebang).
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files -co --exclude-standard | while read -r f; do
  [ -f "$f" ] || continue
  case "$f" in
    *.sh) echo "$f" ;;
    *node_modules*|*.ts|*.js|*.mjs|*.json|*.md) ;;
    *) head -c 64 "$f" 2>/dev/null | grep -qE '^#!.*\b(ba|da)?sh\b' && echo "$f" ;;
  esac
done)
if [ "${#files[@]}" -eq 0 ]; then echo "shellcheck: no shell files" >&2; exit 0; fi
shellcheck -x "${files[@]}"
echo "shellcheck: ${#files[@]} files clean" >&2

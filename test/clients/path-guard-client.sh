#!/usr/bin/env bash
# A shell caller: create a workspace safely, then use the resolved path.
# Usage: path-guard-client.sh PATH-GUARD-BIN ROOT SESSION-ID
set -euo pipefail
guard=$1 root=$2 id=$3
status=0
answer=$(printf '{"path":"workspaces/%s","root":"%s","create":true}' "$id" "$root" | "$guard") || status=$?
if [ "$status" -ne 0 ]; then
  echo "refused ($status): $answer" >&2
  exit "$status"
fi
resolved=$(printf '%s' "$answer" | jq -r .resolved)
touch "$resolved/.created-by-shell-client"
echo "$resolved"

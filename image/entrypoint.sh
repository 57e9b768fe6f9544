#!/bin/sh
# agent-entrypoint: the container's command, started by tini (PID 1) as
#   /usr/bin/tini -- /usr/local/bin/agent-entrypoint [CMD...]
#
# Containers run with --cap-drop=ALL, no-new-privileges and --user 1000:1000, so this already
# runs as the agent user and cannot switch users; it does not try.
#
# 1. Credentials. The host stages credential files read-only under /sandbox-secrets
#    (`cred-stage plan`). If anything is staged there, `cred-stage install` copies it to where
#    the agent CLI expects it. If something is staged but cred-stage is not in the image, the
#    session fails closed: exit 85 ("credential unresolvable"), never start the agent without
#    the credentials it was planned with. cred-stage's stdout goes to stderr: stdout belongs
#    to the agent.
# 2. exec "$@" (the agent), or a shell when no command was given. The contained command's
#    exit status is never rewritten: it is exec'd, not run as a child.
#
# A quiet terminal: when AGENT_SANDBOX_ENTRYPOINT_LOG names a file (the launcher sets it, to a
# file in the session home, unless it runs with --verbose), cred-stage's output and this
# script's own lines go to that file instead of stderr; the launcher reads it into the ledger
# after the session and removes it, so the user's terminal shows only the agent. A failure
# still goes to stderr (what cred-stage said, then why) and fails closed. Unset (an older
# launcher, a Pod), everything goes to stderr as before. The variable is not passed on to the
# agent.
#
# POSIX sh (dash in the Debian image): `set -o pipefail` is not POSIX, so no pipelines here.
set -eu

prog=agent-entrypoint
secrets=/sandbox-secrets

log=${AGENT_SANDBOX_ENTRYPOINT_LOG:-}
unset AGENT_SANDBOX_ENTRYPOINT_LOG
# A log that cannot be made (no home, a read-only one, a link planted there) means stderr.
if [ -n "$log" ]; then
  rm -f -- "$log" 2>/dev/null || true
  if ! (set -C && : >"$log") 2>/dev/null; then
    log=
  fi
fi

# secrets_staged: true when $secrets holds any entry at all, an empty runtime directory included
# (then cred-stage install refuses the missing file with 85 rather than the agent starting
# without its credential). A path that exists but cannot be listed, or is not a directory,
# counts as staged: fail closed.
secrets_staged() {
  if [ -d "$secrets" ]; then
    found=$(find "$secrets" -mindepth 1 -print 2>/dev/null) || return 0
    [ -n "$found" ]
  else
    [ -e "$secrets" ] || [ -L "$secrets" ]
  fi
}

if secrets_staged; then
  if ! command -v cred-stage >/dev/null 2>&1; then
    echo "$prog: credentials are staged in $secrets but cred-stage is not installed in this image (expected /usr/local/bin/cred-stage); refusing to start (exit 85)" >&2
    exit 85
  fi
  status=0
  if [ -n "$log" ]; then
    cred-stage install >>"$log" 2>&1 || status=$?
  else
    cred-stage install >&2 || status=$?
  fi
  if [ "$status" -ne 0 ]; then
    if [ -n "$log" ]; then cat -- "$log" >&2 || true; fi
    echo "$prog: cred-stage install failed with exit $status; refusing to start" >&2
    exit "$status"
  fi
fi

if [ "$#" -eq 0 ]; then
  if [ -x /bin/bash ]; then
    set -- /bin/bash
  else
    set -- /bin/sh
  fi
fi
exec "$@"

# shellcheck shell=bash
# as_apt_mirror SUITE : print "URI<TAB>KEYRING" for the first enabled deb source of SUITE itself
# (not -updates/-security) found in apt's configuration; KEYRING is its Signed-By path or empty.
# Sourced by the scripts that run debootstrap (image/build-base.sh, vm/build-root.sh), so the
# mirror is read from the host at run time and never written into the repo.
# AGENT_SANDBOX_APT_MIRROR=URI overrides it; AGENT_SANDBOX_APT_ETC names another /etc/apt.
as_apt_mirror() {
  local f suite=$1 etc=${AGENT_SANDBOX_APT_ETC:-/etc/apt}
  if [ -n "${AGENT_SANDBOX_APT_MIRROR:-}" ]; then
    printf '%s\t\n' "$AGENT_SANDBOX_APT_MIRROR"
    return 0
  fi
  # deb822 (.sources): stanzas separated by blank lines, "Field: value", continuation lines
  # start with whitespace, "#" lines are comments.
  for f in "$etc"/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk -v suite="$suite" '
      function flush(   n, i, t, s, ok) {
        if (f["uris"] != "" && tolower(f["enabled"]) != "no") {
          ok = 0; n = split(f["types"], t, " ")
          for (i = 1; i <= n; i++) if (t[i] == "deb") ok = 1
          if (ok) {
            ok = 0; n = split(f["suites"], s, " ")
            for (i = 1; i <= n; i++) if (s[i] == suite) ok = 1
          }
          if (ok) {
            split(f["uris"], u, " ")
            kr = f["signed-by"]; if (kr !~ /^\//) kr = ""
            printf "%s\t%s\n", u[1], kr; found = 1; exit
          }
        }
        delete f; last = ""
      }
      /^[ \t]*#/ { next }
      /^[ \t]*$/ { flush(); next }
      /^[ \t]/ { if (last != "") f[last] = f[last] " " $0; next }
      {
        i = index($0, ":"); if (i == 0) next
        last = tolower(substr($0, 1, i - 1)); v = substr($0, i + 1)
        gsub(/^[ \t]+|[ \t]+$/, "", v); f[last] = v
      }
      END { if (!found) flush() }
    ' "$f" | head -n 1 | grep . && return 0
  done
  # One-line style: deb [opts] URI SUITE COMPONENTS...
  for f in "$etc"/sources.list "$etc"/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    awk -v suite="$suite" '
      $1 != "deb" { next }
      {
        i = 2; kr = ""
        if ($i ~ /^\[/) {
          for (; i <= NF; i++) {
            o = $i; gsub(/[\[\]]/, "", o)
            if (o ~ /^signed-by=\//) { kr = o; sub(/^signed-by=/, "", kr) }
            if ($i ~ /\]$/) { i++; break }
          }
        }
        if ($(i + 1) == suite) { printf "%s\t%s\n", $i, kr; exit }
      }
    ' "$f" | grep . && return 0
  done
  return 1
}

#!/bin/sh
# Before a background command: args ID CWD MAX CONTENT.
# EXECD_SH_BG_PRECHECK (fcgi/execd_scripts.h: arguments, output, exit codes).
# now: epoch ms, as run.sh's.
now() { x=$(date +%s%3N 2>/dev/null); case $x in ''|*[!0-9]*) x=$(date +%s)000;; esac; echo "$x"; }
D=/tmp/.sb-cmd; f="$D/$1"
# shellcheck disable=SC2174 # /tmp exists, the mode is for D itself
mkdir -p -m 1777 "$D" || exit 70; umask 077
[ -d "$2" ] || exit 76
n=0; for p in "$D"/*.pid; do [ -e "$p" ] || continue; [ -e "${p%.pid}.rc" ] && continue
  [ -e "${p%.pid}.done" ] && continue
  q=$(cat "$p" 2>/dev/null); [ -n "$q" ] && [ -d "/proc/$q" ] && n=$((n+1)); done
[ "$n" -lt "$3" ] || exit 75
printf '%s' "$4" >"$f.cmd"; now >"$f.start"; : >"$f.bg"

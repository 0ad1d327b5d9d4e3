#!/bin/sh
# shellcheck disable=SC2174 # /tmp exists, the mode is for C itself
# Before a session run: args ID CMDID CWD CONTENT.
# EXECD_SH_SESSION_PRE (fcgi/execd_scripts.h: arguments, output, exit codes).
d=/tmp/.sb-session/$1; [ -d "$d" ] || exit 44
[ -z "$3" ] || [ -d "$3" ] || exit 76
C=/tmp/.sb-cmd; mkdir -p -m 1777 "$C" 2>/dev/null; umask 077
printf '%s' "$4" >"$C/$2.cmd" || exit 1
printf '%s\n' "$2" >"$d/cmd"

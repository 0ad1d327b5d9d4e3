#!/bin/sh
# Read a file for a replace: args PATH MAX.
# EXECD_SH_REPLACE_READ (fcgi/execd_scripts.h: arguments, output, exit codes).
[ -e "$1" ] || exit 44
[ -d "$1" ] && exit 45
[ -f "$1" ] || exit 49
s=$(stat -c '%s %Y' -- "$1") || exit 1
[ "${s%% *}" -le "$2" ] || exit 50
printf '%s\n' "$s"; exec cat -- "$1"

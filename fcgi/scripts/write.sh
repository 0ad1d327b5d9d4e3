#!/bin/sh
# Write a file: args PATH MODE OWNER, the bytes on stdin.
# EXECD_SH_WRITE (fcgi/execd_scripts.h: arguments, output, exit codes).
d=$(dirname -- "$1"); mkdir -p -- "$d" || exit 1
[ -d "$1" ] && { echo "$1: is a directory" >&2; exit 45; }
cat >"$1" || exit 1
[ -z "$2" ] || chmod "$2" -- "$1" || exit 1
[ -z "$3" ] || chown "$3" -- "$1" || exit 1

#!/bin/sh
# Write a replace back: args PATH SIZE MTIME, the new bytes on stdin.
# EXECD_SH_REPLACE_WRITE (fcgi/execd_scripts.h: arguments, output, exit codes).
[ -e "$1" ] || exit 44
[ "$(stat -c '%s %Y' -- "$1")" = "$2 $3" ] || exit 47
exec cat >"$1"

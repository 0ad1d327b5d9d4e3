#!/bin/sh
# Create a bash session: args ID CWD EXPLICIT MAX (/tmp/.sb-session/<id>).
# EXECD_SH_SESSION_CREATE (fcgi/execd_scripts.h: arguments, output, exit codes).
D=/tmp/.sb-session; d=$D/$1
mkdir -p "$D" && chmod 700 "$D" || exit 1
[ -e "$d" ] && exit 47
# shellcheck disable=SC2012 # a count of entries whose names the broker made
n=$(ls -A "$D" | wc -l); [ "$n" -lt "$4" ] || exit 75
c=$2; if [ ! -d "$c" ]; then [ "$3" = 1 ] && exit 76; c=/; fi
mkdir -m 700 "$d" || exit 1
printf '%s\n' "$c" >"$d/cwd" && : >"$d/env"

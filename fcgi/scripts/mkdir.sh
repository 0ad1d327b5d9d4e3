#!/bin/sh
# Make a directory and its parents: args PATH MODE OWNER.
# EXECD_SH_MKDIR (fcgi/execd_scripts.h: arguments, output, exit codes).
[ -e "$1" ] && [ ! -d "$1" ] && { echo "$1: not a directory" >&2; exit 46; }
mkdir -p -- "$1" || exit 1
[ -z "$2" ] || chmod "$2" -- "$1" || exit 1
[ -z "$3" ] || chown "$3" -- "$1" || exit 1

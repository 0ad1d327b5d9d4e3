#!/bin/sh
# List a directory: args PATH DEPTH MAX.
# EXECD_SH_LIST (fcgi/execd_scripts.h: arguments, output, exit codes).
[ -L "$1" ] && exit 48
[ -e "$1" ] || exit 44
[ -d "$1" ] || exit 46
cd -- "$1" || exit 1
[ "$2" -gt 0 ] || exit 0
find . -mindepth 1 -maxdepth "$2" ! -path '*
*' -exec stat -c '%f|%s|%Y|%W|%U|%G|%a|%n' -- {} + \
  2>/dev/null | head -n "$3"

#!/bin/sh
# Search: args ROOT PATTERN MAX.
# EXECD_SH_SEARCH (fcgi/execd_scripts.h: arguments, output, exit codes).
[ -e "$1" ] || exit 44
[ -d "$1" ] || exit 46
cd -- "$1" || exit 1
p=$2; m=$3
case $p in
*/*) p=./${p#/}; q=$p; case $p in ./\*\*/*) q=./${p#./\*\*/};; esac
  set -- \( -path "$p" -o -path "$q" \);;
*) set -- -name "$p";;
esac
# find from inside ROOT, so that no character of ROOT is taken for a
# pattern; `! -path` with a newline drops what a line cannot carry.
find . ! -type d ! -path '*
*' "$@" -exec stat -c '%f|%s|%Y|%W|%U|%G|%a|%n' -- {} + 2>/dev/null |
  head -n "$m"

#!/bin/sh
# Delete a bash session: arg ID.
# EXECD_SH_SESSION_DELETE (fcgi/execd_scripts.h: arguments, output, exit codes).
d=/tmp/.sb-session/$1; [ -d "$d" ] || exit 44
i=$(cat "$d/cmd" 2>/dev/null); f=/tmp/.sb-cmd/$i
if [ -n "$i" ] && [ -s "$f.pid" ] && [ ! -e "$f.rc" ] && [ ! -e "$f.done" ]; then
  kill -s KILL -- "-$(cat "$f.pid")" 2>/dev/null; fi
rm -rf -- "$d"

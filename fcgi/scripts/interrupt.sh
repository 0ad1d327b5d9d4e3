#!/bin/sh
# Kill a command's process group: args ID KNOWN.
# EXECD_SH_INTERRUPT (fcgi/execd_scripts.h: arguments, output, exit codes).
f=/tmp/.sb-cmd/$1
[ -e "$f.start" ] || [ -e "$f.done" ] || [ "$2" = 1 ] || exit 44
i=0; while [ ! -s "$f.pid" ] && [ ! -e "$f.rc" ] && [ ! -e "$f.done" ] && [ $i -lt 50 ]; do
  sleep 0.1; i=$((i+1)); done
[ -e "$f.rc" ] || [ -e "$f.done" ] && exit 0
[ -s "$f.pid" ] || exit 44
kill -s KILL -- "-$(cat "$f.pid")" 2>/dev/null
exit 0

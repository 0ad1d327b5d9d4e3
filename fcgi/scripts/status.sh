#!/bin/sh
# Status of a command: arg ID.
# EXECD_SH_STATUS (fcgi/execd_scripts.h: arguments, output, exit codes).
f=/tmp/.sb-cmd/$1
# an ended command of sandbox-agent: its one file says it all
[ -e "$f.done" ] && exec cat "$f.done"
[ -e "$f.start" ] || exit 44
s=$(cat "$f.start" 2>/dev/null); p=$(cat "$f.pid" 2>/dev/null)
rc=$(cat "$f.rc" 2>/dev/null); e=$(cat "$f.end" 2>/dev/null)
alive=0; [ -n "$p" ] && [ -d "/proc/$p" ] && alive=1
if [ -z "$rc" ] && [ $alive = 0 ] && [ -n "$p" ]; then sleep 0.2
  rc=$(cat "$f.rc" 2>/dev/null); e=$(cat "$f.end" 2>/dev/null); fi
bg=0; [ -e "$f.bg" ] && bg=1
printf 'start=%s\npid=%s\nrc=%s\nend=%s\nalive=%s\nbg=%s\n' "$s" "$p" "$rc" "$e" $alive $bg
cat "$f.cmd" 2>/dev/null

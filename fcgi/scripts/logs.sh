#!/bin/sh
# Output of a background command: args ID CURSOR.
# EXECD_SH_LOGS (fcgi/execd_scripts.h: arguments, output, exit codes).
f=/tmp/.sb-cmd/$1
[ -e "$f.start" ] || [ -e "$f.done" ] || exit 44
[ -e "$f.bg" ] || exit 45
d=0; [ -e "$f.rc" ] && d=1
sz=$(stat -c %s "$f.out" 2>/dev/null || echo 0)
n=$(head -c "$sz" "$f.out" 2>/dev/null | wc -l)
echo "$d $n $sz"
head -c "$sz" "$f.out" 2>/dev/null | tail -n +"$(($2 + 1))"

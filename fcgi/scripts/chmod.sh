#!/bin/sh
# chmod/chown: args PATH MODE OWNER [PATH MODE OWNER]...
# EXECD_SH_CHMOD (fcgi/execd_scripts.h: arguments, output, exit codes).
i=0
while [ $# -ge 3 ]; do
  if [ ! -e "$1" ]; then echo $i; echo "$1: no such file" >&2; exit 44; fi
  [ -z "$2" ] || chmod "$2" -- "$1" || { echo $i; exit 1; }
  [ -z "$3" ] || chown "$3" -- "$1" || { echo $i; exit 1; }
  i=$((i+1)); shift 3
done

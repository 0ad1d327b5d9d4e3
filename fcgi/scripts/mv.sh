#!/bin/sh
# Rename: args SRC DEST [SRC DEST]...
# EXECD_SH_MV (fcgi/execd_scripts.h: arguments, output, exit codes).
i=0
while [ $# -ge 2 ]; do
  if [ ! -e "$1" ] && [ ! -L "$1" ]; then echo $i; echo "$1: no such file" >&2; exit 44; fi
  if [ -e "$2" ] || [ -L "$2" ]; then echo $i; echo "$2: exists" >&2; exit 47; fi
  # either failing is the item's failure
  # shellcheck disable=SC2015
  mkdir -p -- "$(dirname -- "$2")" && mv -- "$1" "$2" || { echo $i; exit 1; }
  i=$((i+1)); shift 2
done

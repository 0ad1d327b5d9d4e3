#!/bin/sh
# Remove files PATH... (missing ones are fine).
# EXECD_SH_RM_FILES (fcgi/execd_scripts.h: arguments, output, exit codes).
for p; do if [ -d "$p" ] && [ ! -L "$p" ]; then echo "$p: is a directory" >&2; exit 45; fi
  rm -f -- "$p" || exit 1; done

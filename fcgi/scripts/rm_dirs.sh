#!/bin/sh
# Remove directories PATH..., recursively.
# EXECD_SH_RM_DIRS (fcgi/execd_scripts.h: arguments, output, exit codes).
for p; do if [ -e "$p" ] && [ ! -d "$p" ]; then echo "$p: not a directory" >&2; exit 46; fi
  rm -rf -- "$p" || exit 1; done

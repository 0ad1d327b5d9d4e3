#!/bin/sh
# Bytes of a file to stdout: args PATH START LEN.
# EXECD_SH_READ (fcgi/execd_scripts.h: arguments, output, exit codes).
if [ "$3" = -1 ]; then exec cat -- "$1"; fi
tail -c +"$(($2 + 1))" -- "$1" | head -c "$3"

#!/bin/sh
# Run the image's code-interpreter kernel-runner with the arguments given.
# EXECD_SH_CODE (fcgi/execd_scripts.h: arguments, output, exit codes).
r=/opt/code-interpreter/kernel-runner
[ -x "$r" ] || exit 77
exec "$r" "$@"

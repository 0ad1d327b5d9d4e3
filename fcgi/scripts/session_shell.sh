#!/bin/sh
# The command run.sh runs (kind argv) for a session run: args BODY DIR CWD
# COMMAND; runs `bash -c BODY` (sh without bash), BODY being session_body.sh.
# EXECD_SH_SESSION_SHELL (fcgi/execd_scripts.h: arguments, output, exit codes).
# shellcheck disable=SC2209 # the program's name, a string
s=sh; command -v bash >/dev/null 2>&1 && s=bash
b=$1; shift; exec "$s" -c "$b" sb-session "$@"

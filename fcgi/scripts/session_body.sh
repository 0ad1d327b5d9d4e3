#!/bin/sh
# A session run, in bash: args DIR CWD COMMAND.
# EXECD_SH_SESSION_BODY (fcgi/execd_scripts.h: arguments, output, exit codes).
__sb_d=$1 __sb_o=$2 __sb_c=$3
set --
# shellcheck disable=SC1091 # the session's own file, known at run time
[ -s "$__sb_d/env" ] && . "$__sb_d/env" 2>/dev/null
cd -- "$(cat "$__sb_d/cwd" 2>/dev/null)" 2>/dev/null || cd /
__sb_w=$PWD
if [ -n "$__sb_o" ]; then cd -- "$__sb_o" || exit 1; fi
__sb_s=$PWD
__sb_save() {
  [ "$PWD" = "$__sb_s" ] || __sb_w=$PWD
  [ -d "$__sb_d" ] || return 0
  printf '%s\n' "$__sb_w" >"$__sb_d/cwd.$$" && mv -f -- "$__sb_d/cwd.$$" "$__sb_d/cwd"
  export -p >"$__sb_d/env.$$" && mv -f -- "$__sb_d/env.$$" "$__sb_d/env"
}
# The names are the shell's own: the command runs in this shell (eval), so
# that cd and export stay; they are not exported, so they are not saved.
# Sourcing errors (a variable made readonly) are not the run's.
# shellcheck disable=SC2154 # __sb_r is set inside the trap
trap '__sb_r=$?; __sb_save; exit $__sb_r' EXIT
unset __sb_o
eval "$__sb_c"

#!/bin/sh
# The command runner: args ID TIMEOUT CWD KIND BG START CMD...; keeps the
# command's state in /tmp/.sb-cmd/<id>.{cmd,start,pid,rc,end} (EXECD_CMD_DIR).
# EXECD_SH_RUN (fcgi/execd_scripts.h: arguments, output, exit codes).
# As few processes as it can: each fork+exec in a sandbox costs a
# millisecond or more, and this runs for every command.
# now: epoch ms; busybox's date has no %N (whole seconds then).
now() { x=$(date +%s%3N 2>/dev/null); case $x in ''|*[!0-9]*) x=$(date +%s)000;; esac; echo "$x"; }
D=/tmp/.sb-cmd; f="$D/$1"; to=$2; cwd=$3; kind=$4; bg=$5; start=$6; shift 6
# SC2174: /tmp exists, the mode is for D itself.
# shellcheck disable=SC2174
[ -d "$D" ] || mkdir -p -m 1777 "$D" 2>/dev/null; umask 077
[ -e "$f.cmd" ] || printf '%s' "$*" >"$f.cmd"
[ -e "$f.start" ] || echo "$start" >"$f.start"
[ "$bg" = 1 ] && exec >>"$f.out" 2>&1 </dev/null
if ! cd -- "$cwd" 2>/dev/null; then
  echo "cwd $cwd: no such directory" >&2; echo 1 >"$f.rc"; now >"$f.end"; exit 1
fi
# shellcheck disable=SC2209 # the program's name, a string
sh=sh; command -v bash >/dev/null 2>&1 && sh=bash
[ "$kind" = sh ] && set -- "$sh" -c "$1"
[ "$to" = 0 ] || set -- timeout -s KILL "$to" "$@"
# Its own session, so that interrupt and timeout kill the whole group: a
# background job is no group leader, so setsid neither forks nor needs -w
# (which busybox lacks), and $! is the new session's id; our stdin is
# passed on explicitly (an asynchronous list's is /dev/null); "--": an
# argv[0] that starts with "-" is the program, not an option of setsid.
exec 3<&0
# Hung up (the sandbox-agent's hangup_kill: the broker went away
# mid-stream), the session goes too, and its status (137) is the runner's:
# nothing else can reach it where orphans go to PID 1 (docs/AGENT.md).
trap 'kill -s KILL -- "-$!" 2>/dev/null; wait $! 2>/dev/null; exit $?' HUP
setsid -- "$@" <&3 3<&- &
echo $! >"$f.pid"
wait $!
rc=$?
echo $rc >"$f.rc"; now >"$f.end"
exit $rc

#!/bin/sh
# Lines of a file to stdout: args PATH OFFSET LIMIT.
# EXECD_SH_LINES (fcgi/execd_scripts.h: arguments, output, exit codes).
# awk, not tail | head: the lines are joined by "\n" with nothing after
# the last, as execd answers (a file's final newline is not a line of its
# own); the file is opened by the shell so that no path is taken for an awk
# assignment (a=b).
exec awk -v s="$2" -v n="$3" 'n > 0 && NR >= s + n { exit } NR >= s { printf "%s%s", (NR > s ? "\n" : ""), $0 }' < "$1"

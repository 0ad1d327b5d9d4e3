#!/bin/sh
# stat of PATH...: one line per path, or "-" for a missing one.
# EXECD_SH_INFO (fcgi/execd_scripts.h: arguments, output, exit codes).
# busybox's stat has no %W (it prints the letter): 0 then, as GNU stat
# prints for an unknown birth time.
w=%W; case $(stat -c %W / 2>/dev/null) in ''|*[!0-9]*) w=0;; esac
for p; do stat -c "%f|%s|%Y|$w|%U|%G|%a" -- "$p" 2>/dev/null || echo -; done

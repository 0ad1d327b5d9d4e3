#!/bin/sh
# The sandbox's resource use, no args: key=value lines.
# EXECD_SH_METRICS (fcgi/execd_scripts.h: arguments, output, exit codes).
# cgroup v2 (one tree) or v1 (a tree per controller, the sandbox's own
# mounted at each by Docker); v1's cpuacct.usage is in ns.
cg=/sys/fs/cgroup; v=1; [ -f $cg/cgroup.controllers ] && v=2
r() { cat "$@" 2>/dev/null | head -n 1; }
u() { if [ $v = 2 ]; then sed -n 's/^usage_usec //p' $cg/cpu.stat 2>/dev/null;
      else n=$(r $cg/cpuacct/cpuacct.usage $cg/cpu,cpuacct/cpuacct.usage);
        [ -n "$n" ] && echo $((n / 1000)); fi; }
# microseconds: date's %6N, or /proc/uptime's 10 ms (busybox)
t() { x=$(date +%s%6N 2>/dev/null); case $x in ''|*[!0-9]*)
      x=$(sed 's/ .*//; s/[.]//' /proc/uptime)0000;; esac; echo "$x"; }
a=$(u); t0=$(t); sleep 0.2; b=$(u); t1=$(t)
printf 'u0=%s\nu1=%s\nt0=%s\nt1=%s\n' "$a" "$b" "$t0" "$t1"
if [ $v = 2 ]; then cpumax=$(r $cg/cpu.max); mm=$(r $cg/memory.max); mc=$(r $cg/memory.current)
  in=$(sed -n 's/^inactive_file //p' $cg/memory.stat 2>/dev/null)
else q=$(r $cg/cpu/cpu.cfs_quota_us $cg/cpu,cpuacct/cpu.cfs_quota_us)
  p=$(r $cg/cpu/cpu.cfs_period_us $cg/cpu,cpuacct/cpu.cfs_period_us)
  cpumax="max $p"; [ -n "$q" ] && [ "$q" != -1 ] && cpumax="$q $p"
  mm=$(r $cg/memory/memory.limit_in_bytes); mc=$(r $cg/memory/memory.usage_in_bytes)
  in=$(sed -n 's/^total_inactive_file //p' $cg/memory/memory.stat 2>/dev/null); fi
printf 'cgroup=%s\ncpumax=%s\nmemmax=%s\nmemcur=%s\ninactive=%s\n' $v "$cpumax" "$mm" "$mc" "$in"
printf 'nproc=%s\n' "$(nproc 2>/dev/null)"
printf 'memtotal=%s\n' "$(sed -n 's/^MemTotal: *\([0-9]*\) kB/\1/p' /proc/meminfo)"
printf 'memavail=%s\n' "$(sed -n 's/^MemAvailable: *\([0-9]*\) kB/\1/p' /proc/meminfo)"

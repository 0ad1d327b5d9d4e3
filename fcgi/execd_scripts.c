/* execd_scripts: see execd_scripts.h. Kept as plain shell, one line per
 * line of the program, so that they read (and later move to .sh files)
 * as they are. */
#include "execd_scripts.h"

/* now: epoch ms; busybox's date has no %N (whole seconds then) */
#define SH_NOW "now() { x=$(date +%s%3N 2>/dev/null); case $x in ''|*[!0-9]*) x=$(date +%s)000;; esac; echo \"$x\"; }\n"

const char EXECD_SH_RUN[] =
        /* as few processes as it can: each fork+exec in a sandbox costs a
         * millisecond or more, and this runs for every command */
        SH_NOW
        "D=" EXECD_CMD_DIR "; f=\"$D/$1\"; to=$2; cwd=$3; kind=$4; bg=$5; start=$6; shift 6\n"
        "[ -d \"$D\" ] || mkdir -p -m 1777 \"$D\" 2>/dev/null; umask 077\n"
        "[ -e \"$f.cmd\" ] || printf '%s' \"$*\" >\"$f.cmd\"\n"
        "[ -e \"$f.start\" ] || echo \"$start\" >\"$f.start\"\n"
        "[ \"$bg\" = 1 ] && exec >>\"$f.out\" 2>&1 </dev/null\n"
        "if ! cd -- \"$cwd\" 2>/dev/null; then\n"
        "  echo \"cwd $cwd: no such directory\" >&2; echo 1 >\"$f.rc\"; now >\"$f.end\"; exit 1\n"
        "fi\n"
        "sh=sh; command -v bash >/dev/null 2>&1 && sh=bash\n"
        "[ \"$kind\" = sh ] && set -- \"$sh\" -c \"$1\"\n"
        "[ \"$to\" = 0 ] || set -- timeout -s KILL \"$to\" \"$@\"\n"
        /* its own session, so that interrupt and timeout kill the whole
         * group: a background job is no group leader, so setsid neither
         * forks nor needs -w (which busybox lacks), and $! is the new
         * session's id; our stdin is passed on explicitly (an asynchronous
         * list's is /dev/null); "--": an argv[0] that starts with "-"
         * is the program, not an option of setsid */
        "exec 3<&0\n"
        /* hung up (the sandbox-agent's hangup_kill: the broker went away
         * mid-stream), the session goes too, and its status (137) is the
         * runner's: nothing else can reach it where orphans go to PID 1
         * (docs/AGENT.md) */
        "trap 'kill -s KILL -- \"-$!\" 2>/dev/null; wait $! 2>/dev/null; exit $?' HUP\n"
        "setsid -- \"$@\" <&3 3<&- &\n"
        "echo $! >\"$f.pid\"\n"
        "wait $!\n"
        "rc=$?\n"
        "echo $rc >\"$f.rc\"; now >\"$f.end\"\n"
        "exit $rc\n";

const char EXECD_SH_BG_PRECHECK[] =
        SH_NOW
        "D=" EXECD_CMD_DIR "; f=\"$D/$1\"\n"
        "mkdir -p -m 1777 \"$D\" || exit 70; umask 077\n"
        "[ -d \"$2\" ] || exit 76\n"
        "n=0; for p in \"$D\"/*.pid; do [ -e \"$p\" ] || continue; [ -e \"${p%.pid}.rc\" ] && continue\n"
        "  [ -e \"${p%.pid}.done\" ] && continue\n"
        "  q=$(cat \"$p\" 2>/dev/null); [ -n \"$q\" ] && [ -d \"/proc/$q\" ] && n=$((n+1)); done\n"
        "[ \"$n\" -lt \"$3\" ] || exit 75\n"
        "printf '%s' \"$4\" >\"$f.cmd\"; now >\"$f.start\"; : >\"$f.bg\"\n";

const char EXECD_SH_STATUS[] =
        "f=" EXECD_CMD_DIR "/$1\n"
        /* an ended command of sandbox-agent: its one file says it all */
        "[ -e \"$f.done\" ] && exec cat \"$f.done\"\n"
        "[ -e \"$f.start\" ] || exit 44\n"
        "s=$(cat \"$f.start\" 2>/dev/null); p=$(cat \"$f.pid\" 2>/dev/null)\n"
        "rc=$(cat \"$f.rc\" 2>/dev/null); e=$(cat \"$f.end\" 2>/dev/null)\n"
        "alive=0; [ -n \"$p\" ] && [ -d \"/proc/$p\" ] && alive=1\n"
        "if [ -z \"$rc\" ] && [ $alive = 0 ] && [ -n \"$p\" ]; then sleep 0.2\n"
        "  rc=$(cat \"$f.rc\" 2>/dev/null); e=$(cat \"$f.end\" 2>/dev/null); fi\n"
        "bg=0; [ -e \"$f.bg\" ] && bg=1\n"
        "printf 'start=%s\\npid=%s\\nrc=%s\\nend=%s\\nalive=%s\\nbg=%s\\n' \"$s\" \"$p\" \"$rc\" \"$e\" $alive $bg\n"
        "cat \"$f.cmd\" 2>/dev/null\n";

const char EXECD_SH_LOGS[] =
        "f=" EXECD_CMD_DIR "/$1\n"
        "[ -e \"$f.start\" ] || [ -e \"$f.done\" ] || exit 44\n"
        "[ -e \"$f.bg\" ] || exit 45\n"
        "d=0; [ -e \"$f.rc\" ] && d=1\n"
        "sz=$(stat -c %s \"$f.out\" 2>/dev/null || echo 0)\n"
        "n=$(head -c \"$sz\" \"$f.out\" 2>/dev/null | wc -l)\n"
        "echo \"$d $n $sz\"\n"
        "head -c \"$sz\" \"$f.out\" 2>/dev/null | tail -n +\"$(($2 + 1))\"\n";

const char EXECD_SH_INTERRUPT[] =
        "f=" EXECD_CMD_DIR "/$1\n"
        "[ -e \"$f.start\" ] || [ -e \"$f.done\" ] || [ \"$2\" = 1 ] || exit 44\n"
        "i=0; while [ ! -s \"$f.pid\" ] && [ ! -e \"$f.rc\" ] && [ ! -e \"$f.done\" ] && [ $i -lt 50 ]; do\n"
        "  sleep 0.1; i=$((i+1)); done\n"
        "[ -e \"$f.rc\" ] || [ -e \"$f.done\" ] && exit 0\n"
        "[ -s \"$f.pid\" ] || exit 44\n"
        "kill -s KILL -- \"-$(cat \"$f.pid\")\" 2>/dev/null\n"
        "exit 0\n";

const char EXECD_SH_WRITE[] =
        "d=$(dirname -- \"$1\"); mkdir -p -- \"$d\" || exit 1\n"
        "[ -d \"$1\" ] && { echo \"$1: is a directory\" >&2; exit 45; }\n"
        "cat >\"$1\" || exit 1\n"
        "[ -z \"$2\" ] || chmod \"$2\" -- \"$1\" || exit 1\n"
        "[ -z \"$3\" ] || chown \"$3\" -- \"$1\" || exit 1\n";

/* busybox's stat has no %W (it prints the letter): 0 then, as GNU stat
 * prints for an unknown birth time. */
const char EXECD_SH_INFO[] =
        "w=%W; case $(stat -c %W / 2>/dev/null) in ''|*[!0-9]*) w=0;; esac\n"
        "for p; do stat -c \"%f|%s|%Y|$w|%U|%G|%a\" -- \"$p\" 2>/dev/null || echo -; done\n";

const char EXECD_SH_RM_FILES[] =
        "for p; do if [ -d \"$p\" ] && [ ! -L \"$p\" ]; then echo \"$p: is a directory\" >&2; exit 45; fi\n"
        "  rm -f -- \"$p\" || exit 1; done\n";

const char EXECD_SH_RM_DIRS[] =
        "for p; do if [ -e \"$p\" ] && [ ! -d \"$p\" ]; then echo \"$p: not a directory\" >&2; exit 46; fi\n"
        "  rm -rf -- \"$p\" || exit 1; done\n";

const char EXECD_SH_MKDIR[] =
        "[ -e \"$1\" ] && [ ! -d \"$1\" ] && { echo \"$1: not a directory\" >&2; exit 46; }\n"
        "mkdir -p -- \"$1\" || exit 1\n"
        "[ -z \"$2\" ] || chmod \"$2\" -- \"$1\" || exit 1\n"
        "[ -z \"$3\" ] || chown \"$3\" -- \"$1\" || exit 1\n";

const char EXECD_SH_CAN_READ[] = "exec <\"$1\"\n";

const char EXECD_SH_READ[] =
        "if [ \"$3\" = -1 ]; then exec cat -- \"$1\"; fi\n"
        "tail -c +\"$(($2 + 1))\" -- \"$1\" | head -c \"$3\"\n";

/* awk, not tail | head: the lines are joined by "\n" with nothing after the
 * last, as execd answers (a file's final newline is not a line of its own);
 * the file is opened by the shell so that no path is taken for an awk
 * assignment (a=b). */
const char EXECD_SH_LINES[] =
        "exec awk -v s=\"$2\" -v n=\"$3\" '"
        "n > 0 && NR >= s + n { exit } "
        "NR >= s { printf \"%s%s\", (NR > s ? \"\\n\" : \"\"), $0 }' < \"$1\"\n";

const char EXECD_SH_METRICS[] =
        /* cgroup v2 (one tree) or v1 (a tree per controller, the sandbox's
         * own mounted at each by Docker); v1's cpuacct.usage is in ns */
        "cg=/sys/fs/cgroup; v=1; [ -f $cg/cgroup.controllers ] && v=2\n"
        "r() { cat \"$@\" 2>/dev/null | head -n 1; }\n"
        "u() { if [ $v = 2 ]; then sed -n 's/^usage_usec //p' $cg/cpu.stat 2>/dev/null;\n"
        "      else n=$(r $cg/cpuacct/cpuacct.usage $cg/cpu,cpuacct/cpuacct.usage);\n"
        "        [ -n \"$n\" ] && echo $((n / 1000)); fi; }\n"
        /* microseconds: date's %6N, or /proc/uptime's 10 ms (busybox) */
        "t() { x=$(date +%s%6N 2>/dev/null); case $x in ''|*[!0-9]*)\n"
        "      x=$(sed 's/ .*//; s/[.]//' /proc/uptime)0000;; esac; echo \"$x\"; }\n"
        "a=$(u); t0=$(t); sleep 0.2; b=$(u); t1=$(t)\n"
        "printf 'u0=%s\\nu1=%s\\nt0=%s\\nt1=%s\\n' \"$a\" \"$b\" \"$t0\" \"$t1\"\n"
        "if [ $v = 2 ]; then cpumax=$(r $cg/cpu.max); mm=$(r $cg/memory.max); mc=$(r $cg/memory.current)\n"
        "  in=$(sed -n 's/^inactive_file //p' $cg/memory.stat 2>/dev/null)\n"
        "else q=$(r $cg/cpu/cpu.cfs_quota_us $cg/cpu,cpuacct/cpu.cfs_quota_us)\n"
        "  p=$(r $cg/cpu/cpu.cfs_period_us $cg/cpu,cpuacct/cpu.cfs_period_us)\n"
        "  cpumax=\"max $p\"; [ -n \"$q\" ] && [ \"$q\" != -1 ] && cpumax=\"$q $p\"\n"
        "  mm=$(r $cg/memory/memory.limit_in_bytes); mc=$(r $cg/memory/memory.usage_in_bytes)\n"
        "  in=$(sed -n 's/^total_inactive_file //p' $cg/memory/memory.stat 2>/dev/null); fi\n"
        "printf 'cgroup=%s\\ncpumax=%s\\nmemmax=%s\\nmemcur=%s\\ninactive=%s\\n' $v \"$cpumax\" \"$mm\" \"$mc\" \"$in\"\n"
        "printf 'nproc=%s\\n' \"$(nproc 2>/dev/null)\"\n"
        "printf 'memtotal=%s\\n' \"$(sed -n 's/^MemTotal: *\\([0-9]*\\) kB/\\1/p' /proc/meminfo)\"\n"
        "printf 'memavail=%s\\n' \"$(sed -n 's/^MemAvailable: *\\([0-9]*\\) kB/\\1/p' /proc/meminfo)\"\n";

/* ---- files (h_execd_fs.c) ---- */

const char EXECD_SH_MV[] =
        "i=0\n"
        "while [ $# -ge 2 ]; do\n"
        "  if [ ! -e \"$1\" ] && [ ! -L \"$1\" ]; then echo $i; echo \"$1: no such file\" >&2; exit 44; fi\n"
        "  if [ -e \"$2\" ] || [ -L \"$2\" ]; then echo $i; echo \"$2: exists\" >&2; exit 47; fi\n"
        "  mkdir -p -- \"$(dirname -- \"$2\")\" && mv -- \"$1\" \"$2\" || { echo $i; exit 1; }\n"
        "  i=$((i+1)); shift 2\n"
        "done\n";

const char EXECD_SH_CHMOD[] =
        "i=0\n"
        "while [ $# -ge 3 ]; do\n"
        "  if [ ! -e \"$1\" ]; then echo $i; echo \"$1: no such file\" >&2; exit 44; fi\n"
        "  [ -z \"$2\" ] || chmod \"$2\" -- \"$1\" || { echo $i; exit 1; }\n"
        "  [ -z \"$3\" ] || chown \"$3\" -- \"$1\" || { echo $i; exit 1; }\n"
        "  i=$((i+1)); shift 3\n"
        "done\n";

/* find from inside ROOT, so that no character of ROOT is taken for a
 * pattern; `! -path` with a newline drops what a line cannot carry. */
const char EXECD_SH_SEARCH[] =
        "[ -e \"$1\" ] || exit 44\n"
        "[ -d \"$1\" ] || exit 46\n"
        "cd -- \"$1\" || exit 1\n"
        "p=$2; m=$3\n"
        "case $p in\n"
        "*/*) p=./${p#/}; q=$p; case $p in ./\\*\\*/*) q=./${p#./\\*\\*/};; esac\n"
        "  set -- \\( -path \"$p\" -o -path \"$q\" \\);;\n"
        "*) set -- -name \"$p\";;\n"
        "esac\n"
        "find . ! -type d ! -path '*\n*' \"$@\" -exec stat -c '%f|%s|%Y|%W|%U|%G|%a|%n' -- {} + 2>/dev/null |\n"
        "  head -n \"$m\"\n";

const char EXECD_SH_LIST[] =
        "[ -L \"$1\" ] && exit 48\n"
        "[ -e \"$1\" ] || exit 44\n"
        "[ -d \"$1\" ] || exit 46\n"
        "cd -- \"$1\" || exit 1\n"
        "[ \"$2\" -gt 0 ] || exit 0\n"
        "find . -mindepth 1 -maxdepth \"$2\" ! -path '*\n*' -exec stat -c '%f|%s|%Y|%W|%U|%G|%a|%n' -- {} + \\\n"
        "  2>/dev/null | head -n \"$3\"\n";

const char EXECD_SH_REPLACE_READ[] =
        "[ -e \"$1\" ] || exit 44\n"
        "[ -d \"$1\" ] && exit 45\n"
        "[ -f \"$1\" ] || exit 49\n"
        "s=$(stat -c '%s %Y' -- \"$1\") || exit 1\n"
        "[ \"${s%% *}\" -le \"$2\" ] || exit 50\n"
        "printf '%s\\n' \"$s\"; exec cat -- \"$1\"\n";

const char EXECD_SH_REPLACE_WRITE[] =
        "[ -e \"$1\" ] || exit 44\n"
        "[ \"$(stat -c '%s %Y' -- \"$1\")\" = \"$2 $3\" ] || exit 47\n"
        "exec cat >\"$1\"\n";

/* ---- bash sessions (h_execd_session.c) ---- */

const char EXECD_SH_SESSION_CREATE[] =
        "D=" EXECD_SESSION_DIR "; d=$D/$1\n"
        "mkdir -p \"$D\" && chmod 700 \"$D\" || exit 1\n"
        "[ -e \"$d\" ] && exit 47\n"
        "n=$(ls -A \"$D\" | wc -l); [ \"$n\" -lt \"$4\" ] || exit 75\n"
        "c=$2; if [ ! -d \"$c\" ]; then [ \"$3\" = 1 ] && exit 76; c=/; fi\n"
        "mkdir -m 700 \"$d\" || exit 1\n"
        "printf '%s\\n' \"$c\" >\"$d/cwd\" && : >\"$d/env\"\n";

const char EXECD_SH_SESSION_PRE[] =
        "d=" EXECD_SESSION_DIR "/$1; [ -d \"$d\" ] || exit 44\n"
        "[ -z \"$3\" ] || [ -d \"$3\" ] || exit 76\n"
        "C=" EXECD_CMD_DIR "; mkdir -p -m 1777 \"$C\" 2>/dev/null; umask 077\n"
        "printf '%s' \"$4\" >\"$C/$2.cmd\" || exit 1\n"
        "printf '%s\\n' \"$2\" >\"$d/cmd\"\n";

const char EXECD_SH_SESSION_SHELL[] =
        "s=sh; command -v bash >/dev/null 2>&1 && s=bash\n"
        "b=$1; shift; exec \"$s\" -c \"$b\" sb-session \"$@\"\n";

/* The names are the shell's own: the command runs in this shell (eval),
 * so that cd and export stay; they are not exported, so they are not
 * saved. Sourcing errors (a variable made readonly) are not the run's. */
const char EXECD_SH_SESSION_BODY[] =
        "__sb_d=$1 __sb_o=$2 __sb_c=$3\n"
        "set --\n"
        "[ -s \"$__sb_d/env\" ] && . \"$__sb_d/env\" 2>/dev/null\n"
        "cd -- \"$(cat \"$__sb_d/cwd\" 2>/dev/null)\" 2>/dev/null || cd /\n"
        "__sb_w=$PWD\n"
        "if [ -n \"$__sb_o\" ]; then cd -- \"$__sb_o\" || exit 1; fi\n"
        "__sb_s=$PWD\n"
        "__sb_save() {\n"
        "  [ \"$PWD\" = \"$__sb_s\" ] || __sb_w=$PWD\n"
        "  [ -d \"$__sb_d\" ] || return 0\n"
        "  printf '%s\\n' \"$__sb_w\" >\"$__sb_d/cwd.$$\" && mv -f -- \"$__sb_d/cwd.$$\" \"$__sb_d/cwd\"\n"
        "  export -p >\"$__sb_d/env.$$\" && mv -f -- \"$__sb_d/env.$$\" \"$__sb_d/env\"\n"
        "}\n"
        "trap '__sb_r=$?; __sb_save; exit $__sb_r' EXIT\n"
        "unset __sb_o\n"
        "eval \"$__sb_c\"\n";

const char EXECD_SH_SESSION_DELETE[] =
        "d=" EXECD_SESSION_DIR "/$1; [ -d \"$d\" ] || exit 44\n"
        "i=$(cat \"$d/cmd\" 2>/dev/null); f=" EXECD_CMD_DIR "/$i\n"
        "if [ -n \"$i\" ] && [ -s \"$f.pid\" ] && [ ! -e \"$f.rc\" ] && [ ! -e \"$f.done\" ]; then\n"
        "  kill -s KILL -- \"-$(cat \"$f.pid\")\" 2>/dev/null; fi\n"
        "rm -rf -- \"$d\"\n";

const char EXECD_SH_CODE[] =
        "r=" EXECD_CODE_RUNNER "\n"
        "[ -x \"$r\" ] || exit 77\n"
        "exec \"$r\" \"$@\"\n";

/* execd_scripts: the shell programs the execd handlers run inside a
 * sandbox (as `sh -c SCRIPT sh ARGS...`: arguments are "$1"..., never
 * parsed by a shell), one place for all of them.
 *
 * The broker has no daemon in the sandbox, so what execd does in its own
 * process, these do with coreutils: keep a command's state in files
 * (EXECD_CMD_DIR), stat, read and write files. Each needs only sh and
 * coreutils (or busybox), which every supported image has.
 *
 * Each is a NUL-terminated string of static storage. They are meant to
 * become .sh files embedded at build time like lib/store/lua/ (see
 * docs/EXECD.md); the names here stay the same then. */
#pragma once

#define EXECD_CMD_DIR "/tmp/.sb-cmd" /* command state inside the sandbox */

/* Exit codes the scripts use for answers (not failures). */
#define EXECD_X_NOT_FOUND 44      /* no such command, file or directory */
#define EXECD_X_NOT_BACKGROUND 45 /* LOGS: a foreground command */
#define EXECD_X_IS_DIR 45         /* WRITE, RM_FILES: a directory */
#define EXECD_X_NOT_DIR 46        /* RM_DIRS, MKDIR: not a directory */
#define EXECD_X_TOO_MANY 75       /* BG_PRECHECK: too many live commands */
#define EXECD_X_NO_CWD 76         /* BG_PRECHECK: no such cwd */

/* The command runner (h_execd_command.c): args ID TIMEOUT CWD KIND BG CMD...
 * KIND "sh" runs CMD as shell text (bash if there is one), "argv" runs
 * CMD... as argv; TIMEOUT in seconds ("0": none) is `timeout -s KILL`;
 * BG "1" appends the output to <id>.out. Keeps the command's state in
 * EXECD_CMD_DIR/<id>.{cmd,start,pid,rc,end}; the command runs in its own
 * session so that interrupt and timeout kill the whole group. Exits with
 * the command's code. */
extern const char EXECD_SH_RUN[];

/* Before a background command: args ID CWD MAX CONTENT. Records CONTENT
 * and the start time, marks the command background. Exit EXECD_X_NO_CWD:
 * no such cwd; EXECD_X_TOO_MANY: MAX commands already live. */
extern const char EXECD_SH_BG_PRECHECK[];

/* Status of a command: arg ID. Prints start=, pid=, rc=, end=, alive=,
 * bg= lines, then the command text. Exit EXECD_X_NOT_FOUND: unknown id. */
extern const char EXECD_SH_STATUS[];

/* Output of a background command: args ID CURSOR. Prints "DONE LINES
 * SIZE", then the output from line CURSOR on (only what was there when it
 * looked). Exit EXECD_X_NOT_FOUND: unknown; EXECD_X_NOT_BACKGROUND: a
 * foreground command (its output was streamed). */
extern const char EXECD_SH_LOGS[];

/* Kill a command's process group: args ID KNOWN. KNOWN=1 (a foreground
 * command of this process) waits up to 5 s for its pid file. Exit 0 also
 * when it had ended; EXECD_X_NOT_FOUND: unknown. */
extern const char EXECD_SH_INTERRUPT[];

/* Write a file (h_execd_files.c): args PATH MODE OWNER (mode and owner
 * may be ""), the bytes on stdin; parent directories are made. Exit
 * EXECD_X_IS_DIR: PATH is a directory. */
extern const char EXECD_SH_WRITE[];

/* stat of PATH...: one line per path, "hexmode|size|mtime|btime|user|
 * group|perm", or "-" for a path that does not exist. */
extern const char EXECD_SH_INFO[];

/* Remove files PATH... (missing ones are fine). Exit EXECD_X_IS_DIR: one
 * is a directory. */
extern const char EXECD_SH_RM_FILES[];

/* Remove directories PATH..., recursively. Exit EXECD_X_NOT_DIR: one is
 * not a directory. */
extern const char EXECD_SH_RM_DIRS[];

/* Make a directory and its parents: args PATH MODE OWNER (mode and owner
 * may be ""). Exit EXECD_X_NOT_DIR: PATH exists and is not a directory. */
extern const char EXECD_SH_MKDIR[];

/* Bytes of a file to stdout: args PATH START LEN (START 0-based; LEN -1:
 * to the end). */
extern const char EXECD_SH_READ[];

/* Lines of a file to stdout: args PATH OFFSET LIMIT (OFFSET 1-based;
 * LIMIT 0: to the end), joined by "\n" with none after the last (the
 * file's line ends are "\n"; a "\r" before one is kept). Exit 0, or the
 * shell's non-zero code when PATH cannot be opened (the reason on stderr). */
extern const char EXECD_SH_LINES[];

/* The sandbox's resource use (h_execd_misc.c), no args: key=value lines
 * u0/u1 (cgroup v2 cpu usage_usec 200 ms apart), t0/t1 (their times, us),
 * cpumax, nproc, memmax, memcur, inactive, memtotal, memavail (kB). */
extern const char EXECD_SH_METRICS[];

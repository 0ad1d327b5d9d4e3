/* execd_scripts: the shell programs the execd handlers run inside a
 * sandbox (as `sh -c SCRIPT sh ARGS...`: arguments are "$1"..., never
 * parsed by a shell), one place for all of them.
 *
 * Each is a file of fcgi/scripts/ (EXECD_SH_RUN is run.sh, EXECD_SH_RM_DIRS
 * rm_dirs.sh, ...), a real shell file that `sh -n` and shellcheck accept
 * (scripts/check-shell, run by `make unit`), embedded at build by
 * scripts/embed-sh as a NUL-terminated string of static storage without its
 * comment lines (build/execd_scripts.c, as lib/store/lua/ is).
 *
 * They run through the provider's exec, which is the sandbox-agent's
 * fork/exec where the sandbox has it (docs/AGENT.md) and `docker exec` or
 * the backend's own exec elsewhere: what execd does in its own process,
 * these do with coreutils: keep a command's state in files (EXECD_CMD_DIR,
 * where the agent also writes an ended foreground command's <id>.done),
 * stat, read and write files. Each needs only sh and coreutils (or
 * busybox), which every supported image has. The directories below are
 * spelled out in the programs too (tests/unit/test_execd_scripts.c checks
 * that they agree). */
#pragma once

#define EXECD_CMD_DIR "/tmp/.sb-cmd"         /* command state inside the sandbox */
#define EXECD_SESSION_DIR "/tmp/.sb-session" /* bash sessions: <id>/{cwd,env,cmd} */

/* Exit codes the scripts use for answers (not failures). */
#define EXECD_X_NOT_FOUND 44      /* no such command, file or directory */
#define EXECD_X_NOT_BACKGROUND 45 /* LOGS: a foreground command */
#define EXECD_X_IS_DIR 45         /* WRITE, RM_FILES: a directory */
#define EXECD_X_NOT_DIR 46        /* RM_DIRS, MKDIR, SEARCH, LIST: not a directory */
#define EXECD_X_EXISTS 47         /* MV: the destination exists; REPLACE_WRITE: changed */
#define EXECD_X_SYMLINK 48        /* LIST: the path is a symbolic link */
#define EXECD_X_NOT_FILE 49       /* REPLACE_READ: not a regular file */
#define EXECD_X_TOO_BIG 50        /* REPLACE_READ: larger than the cap */
#define EXECD_X_TOO_MANY 75       /* BG_PRECHECK, SESSION_CREATE: too many */
#define EXECD_X_NO_CWD 76         /* BG_PRECHECK, SESSION_*: no such cwd */

/* The command runner (h_execd_command.c): args ID TIMEOUT CWD KIND BG START
 * CMD... KIND "sh" runs CMD as shell text (bash if there is one), "argv"
 * runs CMD... as argv; TIMEOUT in seconds ("0": none) is `timeout -s KILL`;
 * BG "1" appends the output to <id>.out; START is the epoch ms the broker
 * took the command. Keeps the command's state in
 * EXECD_CMD_DIR/<id>.{cmd,start,pid,rc,end}; the command runs in its own
 * session (pid = its process group) so that interrupt and timeout kill the
 * whole group. Exits with the command's code. */
extern const char EXECD_SH_RUN[];

/* Before a background command: args ID CWD MAX CONTENT. Records CONTENT
 * and the start time, marks the command background. Exit EXECD_X_NO_CWD:
 * no such cwd; EXECD_X_TOO_MANY: MAX commands already live. */
extern const char EXECD_SH_BG_PRECHECK[];

/* Status of a command: arg ID. Prints start=, pid=, rc=, end=, alive=,
 * bg= lines, then the command text (an ended foreground command of
 * sandbox-agent: its <id>.done, which holds just that, docs/AGENT.md).
 * Exit EXECD_X_NOT_FOUND: unknown id. */
extern const char EXECD_SH_STATUS[];

/* Output of a background command: args ID CURSOR. Prints "DONE LINES
 * SIZE", then the output from line CURSOR on (only what was there when it
 * looked). Exit EXECD_X_NOT_FOUND: unknown; EXECD_X_NOT_BACKGROUND: a
 * foreground command (its output was streamed). */
extern const char EXECD_SH_LOGS[];

/* Kill a command's process group: args ID KNOWN. KNOWN=1 (a foreground
 * command of this process) waits up to 5 s for its pid file. Exit 0 also
 * when it had ended (<id>.rc, or the agent's <id>.done); EXECD_X_NOT_FOUND:
 * unknown. */
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

/* Can PATH be opened for reading (by the user it runs as)? Exit 0, or the
 * shell's non-zero code with the reason on stderr. */
extern const char EXECD_SH_CAN_READ[];

/* Lines of a file to stdout: args PATH OFFSET LIMIT (OFFSET 1-based;
 * LIMIT 0: to the end), joined by "\n" with none after the last (the
 * file's line ends are "\n"; a "\r" before one is kept). Exit 0, or the
 * shell's non-zero code when PATH cannot be opened (the reason on stderr). */
extern const char EXECD_SH_LINES[];

/* The sandbox's resource use (h_execd_misc.c), no args: key=value lines
 * u0/u1 (cgroup v2 cpu usage_usec 200 ms apart), t0/t1 (their times, us),
 * cpumax, nproc, memmax, memcur, inactive, memtotal, memavail (kB). */
extern const char EXECD_SH_METRICS[];

/* ---- files (h_execd_fs.c) ----
 * The programs taking several items print, when one fails, its index
 * (from 0) on a line of stdout before exiting, so that the answer can
 * name the path it is about. */

/* Rename: args SRC DEST [SRC DEST]...; the destination's parent
 * directories are made (as execd does). Exit EXECD_X_NOT_FOUND: no SRC;
 * EXECD_X_EXISTS: DEST exists (never replaced). */
extern const char EXECD_SH_MV[];

/* chmod/chown: args PATH MODE OWNER [PATH MODE OWNER]... (MODE and OWNER,
 * "owner[:group]" or ":group", may be ""). Exit EXECD_X_NOT_FOUND: no PATH. */
extern const char EXECD_SH_CHMOD[];

/* Search: args ROOT PATTERN MAX. Every entry under ROOT that is not a
 * directory (symbolic links are not followed) whose name matches the glob
 * PATTERN, or, when PATTERN has a "/", whose path below ROOT does (then
 * "*" also matches "/", and a leading "**" + "/" also matches nothing);
 * at most MAX lines "hexmode|size|mtime|btime|user|group|perm|./PATH"
 * (PATH relative to ROOT; paths with a newline are skipped), in find's
 * order. Exit EXECD_X_NOT_FOUND: no ROOT; EXECD_X_NOT_DIR: not a directory. */
extern const char EXECD_SH_SEARCH[];

/* List a directory: args PATH DEPTH MAX. The entries down to DEPTH levels
 * below PATH (not PATH itself; links not followed), at most MAX lines in
 * EXECD_SH_SEARCH's format. Exit EXECD_X_SYMLINK: PATH is a symbolic link;
 * EXECD_X_NOT_FOUND, EXECD_X_NOT_DIR. */
extern const char EXECD_SH_LIST[];

/* Read a file for a replace: args PATH MAX. Prints "SIZE MTIME" and a
 * newline, then the bytes. Exit EXECD_X_NOT_FOUND, EXECD_X_IS_DIR,
 * EXECD_X_NOT_FILE (not a regular file), EXECD_X_TOO_BIG (over MAX bytes). */
extern const char EXECD_SH_REPLACE_READ[];

/* Write a replace back: args PATH SIZE MTIME, the new bytes on stdin,
 * written into the same file (its inode, mode and owner are kept). Exit
 * EXECD_X_EXISTS: PATH's "SIZE MTIME" is no longer what it was read as
 * (changed meanwhile: nothing written); EXECD_X_NOT_FOUND: gone. */
extern const char EXECD_SH_REPLACE_WRITE[];

/* ---- bash sessions (h_execd_session.c) ----
 * A session is a directory EXECD_SESSION_DIR/<id> (0700, root): cwd (the
 * working directory), env (`export -p` of the last run), cmd (the id of
 * its last command, whose state is in EXECD_CMD_DIR as any command's). */

/* Create: args ID CWD EXPLICIT MAX. CWD must be a directory when EXPLICIT
 * is "1", else "/" stands in for a missing one. Exit EXECD_X_NO_CWD,
 * EXECD_X_TOO_MANY (MAX sessions exist), EXECD_X_EXISTS (the id is taken). */
extern const char EXECD_SH_SESSION_CREATE[];

/* Before a run: args ID CMDID CWD CONTENT (CWD may be ""). Records
 * CONTENT as command CMDID's text (status) and CMDID as the session's
 * command. Exit EXECD_X_NOT_FOUND: no session; EXECD_X_NO_CWD. */
extern const char EXECD_SH_SESSION_PRE[];

/* The command EXECD_SH_RUN runs (kind argv) for a session run: args
 * BODY DIR CWD COMMAND; runs `bash -c BODY` (sh without bash), which is
 * EXECD_SH_SESSION_BODY. */
extern const char EXECD_SH_SESSION_SHELL[];

/* A run, in bash: args DIR CWD COMMAND. Restores the exported variables
 * (DIR/env) and the working directory (DIR/cwd), then cd CWD when it is
 * not "" (for this run only), evals COMMAND in this shell, and on exit
 * (also `exit N`) saves `export -p` and the directory the command moved
 * to, if it moved. Exits with COMMAND's status. */
extern const char EXECD_SH_SESSION_BODY[];

/* Delete: arg ID. Kills the session's command if it still runs, removes
 * the session. Exit EXECD_X_NOT_FOUND: no session. */
extern const char EXECD_SH_SESSION_DELETE[];

/* ---- the code interpreter (h_execd_code.c) ----
 * The image's kernel-runner (snapshots/code-interpreter/kernel-runner.py,
 * which documents its commands, output and exit codes) does the work; this
 * runs it with the arguments given, or exits EXECD_X_NO_INTERPRETER when
 * the image has none (not a code-interpreter image). */
#define EXECD_CODE_RUNNER "/opt/code-interpreter/kernel-runner"
#define EXECD_X_NO_INTERPRETER 77
#define EXECD_X_LANGUAGE 65 /* kernel-runner: a language the image lacks */
#define EXECD_X_MISMATCH 66 /* kernel-runner: the context is of another language */
extern const char EXECD_SH_CODE[];

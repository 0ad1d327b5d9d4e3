/* sandbox-agent: what the PID 1 loop and the request handlers share
 * (docs/AGENT.md). The agent is a static musl binary and links nothing of
 * lib/; every file here includes only libc and this folder. */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

/* Every size a client controls is capped (docs/AGENT.md, "Trust"). */
#define AGENT_HEADER_MAX (256 * 1024) /* request line + headers */
#define AGENT_ERROR_MAX (4 * 1024)   /* one-line error bodies */
#define AGENT_IO_CHUNK (64 * 1024)   /* one read of output, stdin or file data */
#define AGENT_HANDLERS_MAX 256       /* concurrent connections (handler children) */
#define AGENT_HEADER_TIMEOUT_S 10    /* to receive the request head */
#define AGENT_STALL_TIMEOUT_MS 60000 /* a client making no progress is gone */
#define AGENT_DRAIN_GRACE_MS 100     /* output collected after a command's exit */
#define AGENT_HANGUP_SWEEP_MS 2000   /* hangup_kill: to kill what a command left behind */
#define AGENT_HANGUP_GRACE_MS 500    /* hangup_kill: from SIGHUP to SIGKILL of the command's group */
#define AGENT_TUNNEL_IDLE_MS (10 * 60 * 1000) /* a tunnel with no byte either way ends */
#define AGENT_DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

enum entry_state {
        ENTRY_NONE,
        ENTRY_RUNNING,
        ENTRY_EXITED,
};

/* What PID 1 knows and a handler reports (GET /health). A handler child gets
 * the copy fork() makes at accept time. */
struct agent_state {
        pid_t agent_pid; /* the serving process (1 in a container), not the handler */
        enum entry_state entry;
        pid_t entry_pid;
        int entry_code; /* exit code, or 128+signal; valid when ENTRY_EXITED */
        int entry_fd;   /* write end of PID 1's pipe: a handler that started a late
                         * entrypoint (POST /entrypoint) writes its pid there */
};

/* Once, in the agent's first process: every signal's disposition the
 * default, then SIGPIPE, SIGTTIN and SIGTTOU ignored, the only ones the
 * agent changes (it handles the others through a signalfd), so that
 * agent_child_reset has those three to put back. */
void agent_signals_init(void);

/* The child side of every fork that execs something (entrypoint, commands):
 * empty signal mask, default dispositions, and every fd from 3 up closed
 * except keep_fd (-1: none). Never fails; what cannot be reset stays. */
void agent_child_reset(int keep_fd);

/* The same, keeping two fds (-1: none): a handler child keeps its
 * connection and the entrypoint pipe (agent_state.entry_fd). */
void agent_child_reset2(int keep_a, int keep_b);

/* Serve one accepted connection in a handler child: read the request, run
 * the route, answer. Owns conn_fd. Returns when the answer is complete (the
 * caller then _exit()s). */
void agent_handle(int conn_fd, const struct agent_state *state);

/* Kill (SIGKILL) every child of this process, with its process group,
 * and reap it; again for the children that adopts (a subreaper's), until
 * there are none or budget_ms have passed. The children come from
 * /proc/self/task/<tid>/children, else from the parent field of every
 * /proc/<pid>/stat. For a handler only: PID 1's children are everything. */
void agent_kill_children(int budget_ms);

/* Exit code of a wait status as a shell reports it: the code, or 128+signal. */
int agent_wait_code(int status);

/* Monotonic clock in milliseconds. */
long long agent_now_ms(void);

/* One line to stderr (the container's log), "\n" added, cut at 511 bytes;
 * one write(2), so lines of several processes never interleave. */
__attribute__((format(printf, 1, 2))) void agent_log(const char *fmt, ...);

/* agent_client: the broker's side of sandbox-agent (docs/AGENT.md), the
 * process that runs as PID 1 of a Docker sandbox and serves commands, file
 * reads and writes on a unix socket "agent.sock" in a directory the broker
 * made for the sandbox (dir below).
 *
 * One request per connection (HTTP/1.1, Connection: close). The socket is
 * opened without following links and checked to be a socket before the
 * connect (a sandbox's root can plant anything there); every answer goes
 * through agent_proto.c, bounded, and every wait has a deadline. No
 * globals: callable from any number of threads. No signal is raised
 * (MSG_NOSIGNAL). The fd is closed before every function returns.
 *
 * Errors (the provider conventions, provider.h), a one-line reason in
 * ret_err (PROVIDER_ERR_MAX bytes, may be NULL):
 *   -ENOENT        no directory or no socket (no agent) / no such file
 *   -ECONNREFUSED  the agent is unreachable: refused, not a socket, a
 *                  planted link, closed before answering ("sandbox agent
 *                  unreachable: ...")
 *   -ETIMEDOUT     no answer in time
 *   -EIO           a malformed answer ("sandbox agent: malformed answer
 *                  ..."), or an error status the call has no errno for
 *   -EFBIG         a size cap was hit
 *   -EINVAL        a malformed request (empty argv, a request head over
 *                  AGENT_REQUEST_HEAD_MAX)
 *   -ENOMEM
 * A negative return of a caller's callback aborts the call and is
 * returned as is. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "providers/agent/agent_proto.h" /* struct agent_health */
#include "providers/provider.h"

#define AGENT_SOCKET_NAME "agent.sock"
#define AGENT_REQUEST_HEAD_MAX (256 * 1024) /* request line + headers we send */
#define AGENT_CONNECT_TIMEOUT_MS 3000 /* connect, and the whole request of a call without one */
#define AGENT_HEAD_TIMEOUT_MS 10000   /* the answer's head, once the request is sent */
#define AGENT_EXEC_GRACE_MS 5000      /* an exec's answer past its timeout_ms */
#define AGENT_EXEC_MAX_MS (24 * 3600 * 1000) /* an exec without a timeout */
#define AGENT_HEALTH_MAX 4096                /* the /health body */

/* Connect to dir/agent.sock: dir opened O_PATH|O_DIRECTORY|O_NOFOLLOW, the
 * socket file opened O_PATH|O_NOFOLLOW relative to it and fstat'ed
 * (S_ISSOCK, else refused: a link, a file, a directory), the connect made
 * through /proc/self/fd/N so that the name is not looked up again.
 * Returns a connected non-blocking fd (O_CLOEXEC; the caller closes it),
 * -ENOENT (no dir, no socket), -ECONNREFUSED (not a socket, nobody
 * listening), -ETIMEDOUT (the listener's backlog stayed full for
 * AGENT_CONNECT_TIMEOUT_MS), or another negative errno. */
int agent_connect(const char *dir, char *ret_err);

/* Run spec as the provider's exec does (provider.h): POST /exec with argv,
 * env, cwd, user, timeout_ms and detach in the query and stdin as the body;
 * stdout and stderr buffered into ret, each capped at spec->max_output (the
 * rest drained and dropped, out_truncated/err_truncated set). detach: the
 * command is only started (exit_code -1). timeout_ms <= 0: no timeout for
 * the command (the wait is still capped at AGENT_EXEC_MAX_MS).
 * The wait for the answer's head is AGENT_HEAD_TIMEOUT_MS (-ETIMEDOUT);
 * an answer that outlives timeout_ms + AGENT_EXEC_GRACE_MS gives 0 with
 * ret->timed_out set, exit_code -1 and the output so far (as the Docker
 * backend does). ret is zeroed first and filled on 0; free it with
 * exec_result_free either way. An agent's error status (a user that does
 * not exist: 400) is -EIO with its message; with detach and
 * spec->entrypoint, the agent's 409 (the sandbox has its entrypoint) is
 * -EALREADY. */
int agent_exec(const char *dir, const struct exec_spec *spec, struct exec_result *ret, char *ret_err);

/* As agent_exec, with the output handed to cb->on_output as it arrives (in
 * order; pieces of any size) instead of buffered, and cb->on_tick (may be
 * NULL) called about once a second the whole time; max_output and detach
 * are not used. ret gets exit_code and timed_out, no output. */
int agent_exec_stream(const char *dir, const struct exec_spec *spec,
                      const struct exec_stream_cb *cb, struct exec_result *ret, char *ret_err);

/* GET /file: read path from offset (>= 0), len bytes (-1: to the end),
 * into *ret_data (malloc'd, NUL-terminated, owned by the caller; *ret_len
 * bytes). More than max_len bytes to read: -EFBIG (at most max_len + 1 are
 * asked for). -ENOENT no such file, -EISDIR a directory or not a regular
 * file, -EACCES permission. The whole call is bounded by timeout_ms. */
int agent_read_file(const char *dir, const char *path, int64_t offset, int64_t len, size_t max_len,
                    void **ret_data, size_t *ret_len, int timeout_ms, char *ret_err);

/* The same, the bytes handed to on_data in pieces as they come (no cap: a
 * download); a negative return of on_data aborts and is returned. Before
 * the first piece, when the agent said how many bytes follow (its
 * Content-Length), on_data(ud, NULL, that number) once. Bytes
 * already handed over stay handed over when the answer later turns out
 * cut short (-EIO): the caller discards them. */
int agent_read_file_cb(const char *dir, const char *path, int64_t offset, int64_t len,
                       int (*on_data)(void *ud, const char *p, size_t n), void *ud, int timeout_ms,
                       char *ret_err);

/* The same with file_read_cb (provider.h): where on_fd is set, it takes
 * the body from the socket itself once the head is read (a 2xx answer
 * with a Content-Length; never more than that length), after the same
 * size announcement. */
int agent_read_file_fd(const char *dir, const char *path, int64_t offset, int64_t len,
                       const struct file_read_cb *cb, int timeout_ms, char *ret_err);

/* PUT /file: write len bytes of data to path (parents made), created or
 * truncated, or appended to with append. mode < 0: the agent's default,
 * else octal permission bits (<= 07777); uid and gid both >= 0: the owner,
 * else unchanged. -EISDIR path is a directory, -ENOENT a parent cannot be
 * made, -EACCES permission, -EINVAL a bad mode. Bounded by timeout_ms. */
int agent_write_file(const char *dir, const char *path, const void *data, size_t len, int mode,
                     int64_t uid, int64_t gid, bool append, int timeout_ms, char *ret_err);

/* GET /health: the agent's view of the sandbox's entrypoint, into *ret.
 * Bounded by timeout_ms; -EIO when the answer is not the agent's. */
int agent_health(const char *dir, struct agent_health *ret, int timeout_ms, char *ret_err);

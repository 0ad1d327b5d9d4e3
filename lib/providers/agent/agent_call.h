/* agent_call: one HTTP call to sandbox-agent's socket, what the calls of
 * agent_client.c (exec, files, health) are made of: the request head
 * (agent_req_*: percent-encoded query, capped at AGENT_REQUEST_HEAD_MAX)
 * and the poll loop that sends it and feeds the answer to agent_proto under
 * deadlines (agent_call_run). Nothing outside lib/providers/agent/
 * includes it; the client's contract is agent_client.h. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "providers/agent/agent_client.h"
#include "providers/agent/agent_proto.h"
#include "providers/http_buf.h"

#define RECV_BUF 65536 /* one recv of an answer */
/* A file read's recv: as much as the agent's socket holds (its send buffer,
 * net.core.wmem_default, 208 KiB by default), so that a large file crosses
 * in fewer wakeups of the broker (and fewer writev of 64 KiB records). */
#define RECV_BUF_FILE (256 * 1024)

struct agent_req {
        struct http_buf b;
        bool has_query;
};

/* Start a request head: "METHOD path" (q zeroed first). 0, -ENOMEM, or
 * -E2BIG over AGENT_REQUEST_HEAD_MAX. */
int agent_req_start(struct agent_req *q, const char *method, const char *path);

/* name=value, the value percent-encoded: every byte but RFC 3986's
 * unreserved ones (a name repeats for arg and env). Errors as above. */
int agent_req_param(struct agent_req *q, const char *name, const char *value);
int agent_req_param_i64(struct agent_req *q, const char *name, int64_t v);

/* End the head: HTTP/1.1, Content-Length body_len, Connection: close. */
int agent_req_end(struct agent_req *q, size_t body_len);

/* A failed build as an error of the call (-EINVAL over the cap, -ENOMEM). */
int agent_req_error(int r, const char *what, char *ret_err);

struct agent_call {
        const char *what; /* for messages: "exec", "read", ... */
        struct agent_req req;
        const void *body;
        size_t body_len;
        int64_t deadline; /* the whole call, timeutil_mono_ms */
        /* exec: the deadline passing after the head is not an error
         * (deadline_hit set, 0 returned, the answer incomplete) */
        bool soft_deadline;
        bool deadline_hit;
        int (*on_tick)(void *ud);
        void *tick_ud;
        size_t recv_size; /* 0: RECV_BUF on the stack */
        /* optional: takes a passable body from the socket itself
         * (struct file_read_cb's on_fd) */
        ssize_t (*on_fd)(void *ud, int fd, size_t max);
        void *fd_ud;
        struct agent_proto proto;
};

static inline int64_t min64(int64_t a, int64_t b)
{
        return a < b ? a : b;
}

/* Send the request and parse the answer into c->proto. Returns 0 once the
 * answer is complete (any status; or c->deadline_hit with soft_deadline),
 * or a negative errno with ret_err set (or a callback's return). */
int agent_call_run(const char *dir, struct agent_call *c, char *ret_err);

/* A non-2xx answer as an errno; file calls know 400/403/404. */
int agent_call_status_error(const struct agent_call *c, bool file, char *ret_err);

void agent_call_release(struct agent_call *c);

/* A 2xx answer? */
bool agent_call_ok(const struct agent_call *c);

/* The deadline of a call that may take timeout_ms (<= 0:
 * AGENT_HEAD_TIMEOUT_MS), in timeutil_mono_ms. */
int64_t agent_deadline_after(int timeout_ms);

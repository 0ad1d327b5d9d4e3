/* request: one FastCGI request, everything it owns, and the only place that
 * writes responses (reply_json, reply_error). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <fcgiapp.h>
#include <json-c/json.h>

#include "core/api_error.h"
#include "queue/audit.h"
#include "store/auth.h"
#include "core/config.h"
#include "queue/kafka.h"
#include "core/log.h"
#include "providers/provider.h"
#include "store/redis_conn.h"
#include "codec/url.h"

/* Per-thread state: connections are reused across requests, nothing else is. */
struct worker {
        int id;
        const struct broker_config *cfg;
        struct redis_conn *redis;       /* owned by this thread */
        struct kafka_producer *kafka;   /* shared, thread-safe */
        struct provider *provider;      /* owned by this thread; NULL: no sandboxes */
        size_t max_body;                /* largest body this route group accepts */
        /* tenant_share.h's limits for this process: a tenant's share of its
         * threads and the cap of all but control calls; 0: not shared (every
         * group but execd and sandboxes). share_group names the group for
         * tenant_share_is_control, share_what its threads in a refusal
         * ("the data plane", "the sandboxes API"). */
        int tenant_share, share_cap;
        const char *share_group, *share_what;
};

struct request {
        FCGX_Request *fcgx;
        struct worker *w;
        const char *method;
        char path[512];
        char path_arg[URL_PATH_ARG_MAX];  /* the first {} segment of the route pattern */
        char path_arg2[URL_PATH_ARG_MAX]; /* the second, if the pattern has one */
        char path_arg3[URL_PATH_ARG_MAX]; /* the third, if the pattern has one */
        const char *query;
        const char *request_id; /* points into rid: valid after FCGX_Finish_r too */
        char rid[72];
        const char *route; /* the matched pattern of the route table, for metrics */
        char *body; /* owned */
        size_t body_len;
        int status; /* 0 until a response was written */
        struct auth_principal auth; /* who the request acts for (authn.c) */
        bool authed;                /* auth holds a valid API key's tenant */
        /* nginx's auth_request for a port endpoint (BROKER_AUTH_SUBREQUEST=1,
         * a FastCGI parameter only nginx sets): it knows 2xx, 401 and 403
         * only and drops bodies, so reply_raw answers an error as 401 or 403
         * and carries its real status and JSON body in X-Broker-Status and
         * X-Broker-Error for nginx to answer with (docs/INGRESS.md). */
        bool auth_subrequest;
        bool authz_is_key; /* ROUTE_ENDPOINT: Authorization carried the valid API key */
        /* redis_conn_loading_seen of the worker's connection when the
         * request began: a request that met a Redis still loading its
         * dataset answers any error as 503 with Retry-After (reply_error_hdr) */
        unsigned long redis_loading_mark;
        /* Work to do after the response is complete (e.g. make a sandbox
         * whose create was answered 202): run by the accept loop. */
        void (*after)(struct request *req);
        char after_arg[64];
        void *after_data; /* the after-hook's state, the request's (request_scratch) */
        int share_slot; /* tenant_share.h's slot this request holds; -1: none */
        /* request_body_read: bytes read, waiting so far, and whether the
         * connection's receive timeout was set (request_done clears it) */
        size_t body_got;
        int64_t body_waited_ms;
        bool body_timeo;
        /* request_scratch's blocks, freed by request_done */
        struct request_scratch *scratch;
};

/* Fill req from the FastCGI parameters. Returns 0, or -EINVAL when the
 * request line is unusable (a 400 has then been sent). */
int request_init(struct request *req, FCGX_Request *fcgx, struct worker *w);

/* Free what req owns (its tenant_share slot too) and finish its I/O;
 * tolerates a half-initialised request. Before FCGX_Finish_r, unless
 * request_finish_io was called before it. */
void request_done(struct request *req);

/* A zeroed block of size bytes that lives until request_done (after the
 * after-hook), or NULL after answering 500 when memory is short. For a
 * handler's large working arrays: never thread-local or static storage,
 * which every thread of the process would carry (and glibc would write)
 * from its start whether it ever serves that route or not, and never the
 * stack, which keeps its deepest use resident (docs/OPERATIONS.md,
 * "Memory"). */
void *request_scratch(struct request *req, size_t size);

/* Hold a thread of this process for req as a request of tenant
 * (tenant_share.h; a control call when tenant_share_is_control says so for
 * the worker's group and req's route), until request_done. 0: held, or the
 * process shares nothing, or req holds one already; -1 after answering 429
 * TOO_MANY_REQUESTS with "Retry-After: TENANT_SHARE_RETRY_S", for that
 * tenant alone (its share is held) or for every call but control calls
 * (all but the reserved threads are held). kv: the log fields of the
 * refusal (NULL: the request id). Before the body is read: a refused
 * request costs its thread a moment only. */
int request_share_take(struct request *req, const char *tenant, const struct log_kv *kv);

/* The same, answering nothing: 0 (a slot taken, or nothing shared), or
 * -EAGAIN when tenant holds its share or the cap is reached. For a request
 * that can do without the thread (an acquire that would wait). */
int request_share_try(struct request *req, const char *tenant);

/* Take off the connection what request_body_read set on it (its receive
 * timeout): a connection nginx keeps serves the next request without it.
 * Before FCGX_Finish_r; idempotent. */
void request_finish_io(struct request *req);

/* Read up to len more bytes of the body into buf. A body may keep its
 * reader waiting BODY_GRACE_MS plus its length (Content-Length, or what
 * has come when there is none) over BODY_MIN_BYTES_PER_S in all: only the
 * time spent waiting for bytes counts, not what the handler does between
 * reads. Returns the count read (less than len only at the body's end:
 * 0 there), or -ETIMEDOUT after answering 408 REQUEST_TIMEOUT when the
 * body has not come in time. Every reader of a body goes through here: a
 * body that trickles must never hold a thread for long. */
ssize_t request_body_read(struct request *req, void *buf, size_t len);

/* Read the body as a JSON object (Content-Type, size and depth checked).
 * Returns 0 with *ret owned by the caller, or -1 after replying 4xx. */
/* The body (Content-Type application/json or +json, at most max bytes) read
 * into req->body / req->body_len, unparsed. 0, or -1 after replying. */
int request_read_json_body(struct request *req, size_t max);
int request_json_body(struct request *req, struct json_object **ret);

/* Copy the value of query parameter `name` into buf (no percent-decoding:
 * the broker's query values are plain ids): url_query_param of the
 * request's query. Returns 0, -ENOENT, or -E2BIG. To iterate a query with
 * decoding: url_query_next (url.h). */
int request_query_param(const struct request *req, const char *name, char *buf, size_t size);

/* The FastCGI parameter name (a header: "HTTP_IDEMPOTENCY_KEY") into *ret
 * (NULL when absent), or -EEXIST when the request has it more than once:
 * nginx before 1.23 passes each of a repeated header as its own parameter,
 * and FCGX_GetParam would quietly take the first. */
int request_param_once(const struct request *req, const char *name, const char **ret);

/* Send status with body obj (borrowed). */
void reply_json(struct request *req, int status, struct json_object *obj);

/* Same with one extra header line (no CRLF), e.g. "Location: /v1/...". */
void reply_json_hdr(struct request *req, int status, const char *header, struct json_object *obj);

/* Send status with a non-JSON body of len bytes (e.g. the Prometheus text). */
void reply_text(struct request *req, int status, const char *content_type, const char *body,
                size_t len);

/* Send a status without a body (e.g. 204). */
void reply_empty(struct request *req, int status);

/* Send {"code","message"} for e; extra_header (may be NULL) is one complete
 * header line without CRLF, e.g. "Allow: POST". */
void reply_error_hdr(struct request *req, enum api_error e, const char *extra_header,
                     const char *fmt, ...) __attribute__((format(printf, 4, 5)));
#define reply_error(req, e, ...) reply_error_hdr(req, e, NULL, __VA_ARGS__)

/* Emit a lifecycle event (lib/queue/audit.h) of this request: tenant and request
 * id default to the request's own when ev leaves them NULL. */
void request_audit(struct request *req, struct audit_event ev);

/* Map a library errno to the fitting error reply (-EIO -> 503, else 500).
 * Whatever the error, a request whose Redis calls met a server still
 * loading its dataset answers 503 SERVICE_UNAVAILABLE with "Retry-After:
 * REQUEST_LOADING_RETRY_S" and a message saying so (docs/API.md,
 * "Errors"): reply_error_hdr, the exit of every error, sees to it. */
#define REQUEST_LOADING_RETRY_S 1
void reply_errno(struct request *req, int err, const char *what);

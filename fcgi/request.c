/* request: see request.h. */
#include "request.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "core/json_input.h"
#include "core/log.h"
#include "tenant_share.h"
#include "core/timeutil.h"

static const char *param(const struct request *req, const char *name)
{
        const char *v = FCGX_GetParam(name, req->fcgx->envp);
        return v ? v : "";
}

int request_init(struct request *req, FCGX_Request *fcgx, struct worker *w)
{
        const char *uri;
        size_t n;

        memset(req, 0, sizeof(*req));
        req->share_slot = -1;
        req->fcgx = fcgx;
        req->w = w;
        req->method = param(req, "REQUEST_METHOD");
        req->query = param(req, "QUERY_STRING");
        /* copied: the after-hook runs once FCGX_Finish_r freed the parameters */
        snprintf(req->rid, sizeof(req->rid), "%s", param(req, "REQUEST_ID"));
        req->request_id = req->rid;
        req->auth_subrequest = strcmp(param(req, "BROKER_AUTH_SUBREQUEST"), "1") == 0;
        req->redis_loading_mark = redis_conn_loading_seen(w->redis);
        /* DOCUMENT_URI is nginx's normalised path without the query. */
        uri = param(req, "DOCUMENT_URI");
        if (!*uri)
                uri = param(req, "REQUEST_URI");
        n = strcspn(uri, "?");
        if (n >= sizeof(req->path) || n == 0) {
                reply_error(req, API_INVALID_REQUEST, "request path is empty or too long");
                return -EINVAL;
        }
        memcpy(req->path, uri, n);
        req->path[n] = '\0';
        return 0;
}

/* libfcgi has no accessor for the connection: ipcFd is it (fcgiapp.h) */
static void body_timeo_set(struct request *req, int64_t ms)
{
        struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };

        if (req->fcgx->ipcFd >= 0 &&
            setsockopt(req->fcgx->ipcFd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == 0)
                req->body_timeo = ms > 0;
}

void request_finish_io(struct request *req)
{
        /* a connection nginx keeps (fastcgi_keep_conn) must not keep the
         * deadline; one FCGX_Finish_r closes next needs no reset (a system
         * call per request saved: nginx/broker.conf.in keeps none) */
        if (req->body_timeo && req->fcgx->keepConnection)
                body_timeo_set(req, 0);
        req->body_timeo = false;
}

struct request_scratch {
        struct request_scratch *next;
        max_align_t data[];
};

void *request_scratch(struct request *req, size_t size)
{
        struct request_scratch *s;

        if (size > SIZE_MAX - sizeof(*s) || !(s = calloc(1, sizeof(*s) + size))) {
                reply_error(req, API_INTERNAL, "out of memory");
                return NULL;
        }
        s->next = req->scratch;
        req->scratch = s;
        return s->data;
}

void request_done(struct request *req)
{
        free(req->body);
        req->body = NULL;
        while (req->scratch) {
                struct request_scratch *s = req->scratch;

                req->scratch = s->next;
                free(s);
        }
        tenant_share_put(req->share_slot);
        req->share_slot = -1;
        request_finish_io(req);
}

int request_share_try(struct request *req, const char *tenant)
{
        int held;

        if (!req->w->tenant_share || req->share_slot >= 0)
                return 0;
        return tenant_share_take(tenant, false, req->w->tenant_share, req->w->share_cap,
                                 &req->share_slot, &held) == 0
                       ? 0
                       : -EAGAIN;
}

int request_share_take(struct request *req, const char *tenant, const struct log_kv *kv)
{
        const struct worker *w = req->w;
        bool control = tenant_share_is_control(w->share_group, req->method, req->route);
        const char *what = w->share_what ? w->share_what : "this API";
        const struct log_kv *fields = kv ? kv : LOG_KV({ "REQUEST_ID", req->request_id });
        char retry[32];
        int held, r;

        if (!w->tenant_share || req->share_slot >= 0)
                return 0;
        r = tenant_share_take(tenant, control, w->tenant_share, w->share_cap, &req->share_slot,
                              &held);
        if (r == 0)
                return 0;
        snprintf(retry, sizeof(retry), "Retry-After: %d", TENANT_SHARE_RETRY_S);
        if (r == -EAGAIN && held >= w->tenant_share) {
                log_info(fields, "tenant %s holds %d threads of %s, its share: %s %s refused",
                         tenant, held, what, req->method, req->path);
                reply_error_hdr(req, API_TOO_MANY_REQUESTS, retry,
                                "this tenant's requests hold %d of %s's threads, its share; "
                                "retry when one of them has ended",
                                held, what);
                return -1;
        }
        if (r == -EAGAIN) {
                log_warn(fields,
                         "every thread of %s not kept for control calls is busy: %s %s refused",
                         what, req->method, req->path);
                reply_error_hdr(req, API_TOO_MANY_REQUESTS, retry,
                                "%s is busy (every thread but those kept for status and calls that "
                                "end things is taken); retry later",
                                what);
                return -1;
        }
        /* -EINVAL: a tenant name longer than any the broker stores */
        reply_error(req, API_INVALID_REQUEST, "the tenant name is too long");
        return -1;
}

/* How long a body may keep its reader waiting in all (request.h). */
static int64_t body_allowed_ms(const struct request *req)
{
        const char *cl = param(req, "CONTENT_LENGTH");
        unsigned long long len = strtoull(cl, NULL, 10);
        const struct broker_config *cfg = req->w->cfg;

        if (len < req->body_got)
                len = req->body_got;
        if (len > (unsigned long long)INT64_MAX / 1000)
                len = (unsigned long long)INT64_MAX / 1000;
        return cfg->body_grace_ms + (int64_t)(len * 1000 / (unsigned long long)cfg->body_min_bytes_per_s);
}

static ssize_t body_timeout(struct request *req)
{
        const struct broker_config *cfg = req->w->cfg;
        const char *cl = param(req, "CONTENT_LENGTH");

        log_info(LOG_KV({ "REQUEST_ID", req->request_id }),
                 "%s %s: body too slow: %zu of %s bytes after %lld ms of waiting", req->method,
                 req->path, req->body_got, *cl ? cl : "?", (long long)req->body_waited_ms);
        reply_error(req, API_REQUEST_TIMEOUT,
                    "the request body came too slowly: %zu of %s bytes in %lld s (a body must come at "
                    "%d bytes/s, with %d s of grace)",
                    req->body_got, *cl ? cl : "an unknown number of", (long long)req->body_waited_ms / 1000,
                    cfg->body_min_bytes_per_s, cfg->body_grace_ms / 1000);
        return -ETIMEDOUT;
}

ssize_t request_body_read(struct request *req, void *buf, size_t len)
{
        FCGX_Stream *in = req->fcgx->in;
        size_t got = 0;

        while (got < len) {
                /* Bytes libfcgi holds already are taken without a read. For
                 * the others, one byte is asked for: libfcgi then reads what
                 * the socket has (a record or two) and no more, so each wait
                 * is bounded by the receive timeout set to what is left. */
                size_t avail = (size_t)(in->stop - in->rdNext), want = avail ? avail : 1;
                int64_t t0 = 0;
                int n;

                if (want > len - got)
                        want = len - got;
                if (want > INT_MAX)
                        want = INT_MAX;
                if (!avail) {
                        int64_t left = body_allowed_ms(req) - req->body_waited_ms;

                        if (left <= 0)
                                return body_timeout(req);
                        body_timeo_set(req, left);
                        t0 = timeutil_mono_ms();
                }
                n = FCGX_GetStr((char *)buf + got, (int)want, in);
                if (!avail)
                        req->body_waited_ms += timeutil_mono_ms() - t0;
                if (n > 0) {
                        got += (size_t)n;
                        req->body_got += (size_t)n;
                }
                if ((size_t)(n > 0 ? n : 0) < want) {
                        int e = FCGX_GetError(in);

                        if (e == EAGAIN || e == EWOULDBLOCK)
                                return body_timeout(req);
                        break; /* the end of the body (or of the connection) */
                }
        }
        return (ssize_t)got;
}

/* application/json, or a structured-syntax "+json" type such as
 * application/merge-patch+json (RFC 7396, what metadata PATCH sends). */
static int content_type_is_json(const char *ct)
{
        size_t n;

        while (*ct == ' ')
                ct++;
        n = strcspn(ct, "; ");
        if (n < 16 || strncasecmp(ct, "application/", 12) != 0)
                return 0;
        return (n == 16 && strncasecmp(ct + 12, "json", 4) == 0) ||
               (n > 17 && strncasecmp(ct + n - 5, "+json", 5) == 0);
}

int request_read_json_body(struct request *req, size_t max)
{
        const char *cl = param(req, "CONTENT_LENGTH");
        size_t got = 0;
        char *end;
        unsigned long long len;

        if (!content_type_is_json(param(req, "CONTENT_TYPE"))) {
                reply_error(req, API_UNSUPPORTED_MEDIA_TYPE, "Content-Type must be application/json");
                return -1;
        }
        errno = 0;
        len = strtoull(cl, &end, 10);
        if (!*cl || *end || errno) {
                reply_error(req, API_INVALID_JSON, "a JSON body with a Content-Length is required");
                return -1;
        }
        if (len > max) {
                reply_error(req, API_PAYLOAD_TOO_LARGE, "request body exceeds %zu bytes", max);
                return -1;
        }
        req->body = malloc(len + 1);
        if (!req->body) {
                reply_error(req, API_INTERNAL, "out of memory");
                return -1;
        }
        while (got < len) {
                ssize_t n = request_body_read(req, req->body + got, len - got);
                if (n < 0)
                        return -1;
                if (n == 0)
                        break;
                got += (size_t)n;
        }
        req->body[got] = '\0';
        req->body_len = got;
        if (got != len) {
                reply_error(req, API_INVALID_JSON, "request body is shorter than its Content-Length");
                return -1;
        }
        return 0;
}

int request_json_body(struct request *req, struct json_object **ret)
{
        char err[256];

        *ret = NULL;
        if (request_read_json_body(req, req->w->max_body) < 0)
                return -1;
        if (json_input_parse_object(req->body, req->body_len, JSON_INPUT_MAX_DEPTH, ret, err, sizeof(err)) < 0) {
                reply_error(req, API_INVALID_JSON, "%s", err);
                return -1;
        }
        return 0;
}

int request_query_param(const struct request *req, const char *name, char *buf, size_t size)
{
        return url_query_param(req->query, name, buf, size);
}

int request_param_once(const struct request *req, const char *name, const char **ret)
{
        size_t n = strlen(name);
        int seen = 0;

        *ret = NULL;
        for (char **e = req->fcgx->envp; e && *e; e++)
                if (strncmp(*e, name, n) == 0 && (*e)[n] == '=') {
                        if (seen++)
                                return -EEXIST;
                        *ret = *e + n + 1;
                }
        return 0;
}

/* Did this request's Redis calls meet a server still loading its dataset
 * (after a restart)? Its error, whichever a handler chose (a failed
 * script is a 500 to most of them, a missing record a 404), is then that
 * Redis is not ready yet: 503 with Retry-After, the same on every route. */
static bool met_loading_redis(const struct request *req)
{
        return req->w && redis_conn_loading_seen(req->w->redis) != req->redis_loading_mark;
}

static void reply_raw(struct request *req, int status, const char *extra_header, const char *body)
{
        if (req->status) /* already answered: a bug, but never send twice */
                return;
        req->status = status;
        if (req->auth_subrequest && status >= 300) {
                int as = status == 401 ? 401 : 403;

                /* the body is one line of JSON (JSON_C_TO_STRING_PLAIN
                 * escapes every control character) */
                FCGX_FPrintF(req->fcgx->out, "Status: %d %s\r\nX-Broker-Status: %d\r\nX-Broker-Error: ",
                             as, api_status_reason(as), status);
                FCGX_PutS(body, req->fcgx->out);
                FCGX_PutS("\r\n", req->fcgx->out);
        } else {
                FCGX_FPrintF(req->fcgx->out, "Status: %d %s\r\n", status, api_status_reason(status));
        }
        FCGX_FPrintF(req->fcgx->out, "Content-Type: application/json\r\n");
        if (extra_header)
                FCGX_FPrintF(req->fcgx->out, "%s\r\n", extra_header);
        FCGX_FPrintF(req->fcgx->out, "Cache-Control: no-store\r\n\r\n");
        FCGX_PutS(body, req->fcgx->out);
}

void reply_text(struct request *req, int status, const char *content_type, const char *body,
                size_t len)
{
        if (req->status)
                return;
        req->status = status;
        FCGX_FPrintF(req->fcgx->out, "Status: %d %s\r\nContent-Type: %s\r\nCache-Control: no-store\r\n\r\n",
                     status, api_status_reason(status), content_type);
        FCGX_PutStr(body, (int)len, req->fcgx->out);
}

void reply_empty(struct request *req, int status)
{
        if (req->status)
                return;
        req->status = status;
        /* An empty 200/202 says so (Content-Length: 0): clients such as the
         * OpenSandbox TypeScript SDK otherwise try to parse a body. A 204
         * carries no Content-Length at all (RFC 9110, 8.6). */
        FCGX_FPrintF(req->fcgx->out, "Status: %d %s\r\nCache-Control: no-store\r\n%s\r\n", status,
                     api_status_reason(status), status == 204 ? "" : "Content-Length: 0\r\n");
}

void reply_json(struct request *req, int status, struct json_object *obj)
{
        reply_json_hdr(req, status, NULL, obj);
}

void reply_json_hdr(struct request *req, int status, const char *header, struct json_object *obj)
{
        reply_raw(req, status, header,
                  json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
}

void reply_error_hdr(struct request *req, enum api_error e, const char *extra_header,
                     const char *fmt, ...)
{
        struct json_object *o = json_object_new_object();
        char msg[512], retry[32];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        if (met_loading_redis(req)) {
                snprintf(retry, sizeof(retry), "Retry-After: %d", REQUEST_LOADING_RETRY_S);
                snprintf(msg, sizeof(msg), "Redis is loading its dataset (it restarted); retry in %d s",
                         REQUEST_LOADING_RETRY_S);
                e = API_UNAVAILABLE;
                extra_header = retry;
        }
        if (!o) {
                reply_raw(req, 500, NULL, "{\"code\":\"INTERNAL_ERROR\",\"message\":\"out of memory\"}");
                return;
        }
        json_object_object_add(o, "code", json_object_new_string(api_error_code(e)));
        json_object_object_add(o, "message", json_object_new_string(msg));
        reply_raw(req, api_error_status(e), extra_header,
                  json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
        json_put(o);
}

void reply_errno(struct request *req, int err, const char *what)
{
        const struct log_kv *kv = LOG_KV({ "REQUEST_ID", req->request_id });

        if (err == -EIO || err == -ETIMEDOUT) {
                log_warn(kv, "%s %s: %s: Redis unavailable%s", req->method, req->path, what,
                         met_loading_redis(req) ? " (loading its dataset)" : "");
                reply_error(req, API_UNAVAILABLE, "%s: Redis is unavailable, retry later", what);
                return;
        }
        log_err(kv, "%s %s: %s: %s", req->method, req->path, what, strerror(-err));
        reply_error(req, API_INTERNAL, "%s failed (request id %s)", what, req->request_id);
}

void request_audit(struct request *req, struct audit_event ev)
{
        if (!ev.tenant && req->authed)
                ev.tenant = req->auth.tenant;
        if (!ev.request_id)
                ev.request_id = req->request_id;
        audit_emit(req->w->kafka, &ev);
}

/* h_osb_diag: an OpenSandbox sandbox's diagnostics (the lifecycle server's
 * GET /sandboxes/{id}/diagnostics/logs and /events, the SDKs'
 * get_diagnostic_logs / get_diagnostic_events and `osb diagnostics`):
 * a DiagnosticContentResponse with the text inline. Logs are the sandbox's
 * output as its provider keeps it, events its lifecycle as the broker
 * recorded it (osb_diag.h). The tenant's own sandboxes only (404 else, as
 * for an unknown id); the deprecated plain-text form without `scope`
 * (`osb devops`) answers 501. docs/OPENSANDBOX.md, "Diagnostics". */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "h_opensandbox.h"
#include "core/log.h"
#include "sandbox/osb_diag.h"
#include "routes.h"

#define SCOPE_MAX 32
#define DIAG_CONTENT_TYPE "text/plain; charset=utf-8"

enum diag_kind { DIAG_LOGS, DIAG_EVENTS };

/* The scopes each kind serves (the CLI's built-in ones, and "lifecycle",
 * which the SDK's docstring names for events), with what each holds. */
static const struct diag_scope {
        enum diag_kind kind;
        const char *name;
        const char *warning; /* NULL: the scope is answered whole */
} scopes[] = {
        { DIAG_LOGS, "container", NULL },
        { DIAG_LOGS, "all",
          "this server keeps the sandbox's container output only: scope all is scope container" },
        { DIAG_EVENTS, "lifecycle", NULL },
        { DIAG_EVENTS, "runtime",
          "this server records the sandbox's lifecycle transitions (the backend's exits, pauses "
          "and OOM kills appear as their reasons), not the backend's own event stream" },
        { DIAG_EVENTS,
          "all", "this server records the sandbox's lifecycle transitions only: scope all is scope lifecycle" },
};

static const struct diag_scope *scope_find(enum diag_kind kind, const char *name)
{
        size_t i;

        for (i = 0; i < sizeof(scopes) / sizeof(scopes[0]); i++)
                if (scopes[i].kind == kind && !strcmp(scopes[i].name, name))
                        return &scopes[i];
        return NULL;
}

/* The query's scope (and for logs its tail) checked; replies and returns
 * -1 when they are bad. */
static int diag_query(struct request *req, enum diag_kind kind, const struct diag_scope **ret_scope,
                      int *ret_tail)
{
        const char *what = kind == DIAG_LOGS ? "logs" : "events";
        char scope[SCOPE_MAX + 1], tail[16], *end;
        long n;
        int r;

        r = request_query_param(req, "scope", scope, sizeof(scope));
        if (r == -ENOENT) {
                reply_error(req, API_NOT_IMPLEMENTED,
                            "%s without scope is the deprecated plain-text DevOps form (osb "
                            "devops), not served by this server: ask with scope=%s",
                            what,
                            kind == DIAG_LOGS ? "container or all" : "lifecycle, runtime or all");
                return -1;
        }
        if (r < 0 || !(*ret_scope = scope_find(kind, scope))) {
                reply_error(req, API_INVALID_REQUEST,
                            "unknown %s scope (at most %d bytes): this server has %s", what,
                            SCOPE_MAX,
                            kind == DIAG_LOGS ? "container, all" : "lifecycle, runtime, all");
                return -1;
        }
        *ret_tail = req->w->cfg->diag_log_tail;
        if (kind == DIAG_LOGS &&
            (r = request_query_param(req, "tail", tail, sizeof(tail))) != -ENOENT) {
                n = r == 0 ? strtol(tail, &end, 10) : 0;
                if (r < 0 || !tail[0] || *end || n < 1 || n > req->w->cfg->diag_log_tail) {
                        reply_error(req, API_INVALID_REQUEST,
                                    "tail must be an integer from 1 to %d (DIAGNOSTICS_LOG_TAIL)",
                                    req->w->cfg->diag_log_tail);
                        return -1;
                }
                *ret_tail = (int)n;
        }
        return 0;
}

static void diag_reply(struct request *req, enum diag_kind kind, const struct diag_scope *scope,
                       const struct osb_diag *d)
{
        struct json_object *o = json_object_new_object(), *w = NULL;
        int r = o ? 0 : -ENOMEM;

        if (d->warning[0] || scope->warning) {
                w = json_object_new_array();
                if (!w ||
                    (d->warning[0] &&
                     json_object_array_add(w, json_object_new_string(d->warning)) < 0) ||
                    (scope->warning &&
                     json_object_array_add(w, json_object_new_string(scope->warning)) < 0))
                        r = -ENOMEM;
        }
        if (r == 0 &&
            (json_object_object_add(o, "sandboxId", json_object_new_string(req->path_arg)) < 0 ||
             json_object_object_add(
                     o, "kind", json_object_new_string(kind == DIAG_LOGS ? "logs" : "events")) < 0 ||
             json_object_object_add(o, "scope", json_object_new_string(scope->name)) < 0 ||
             json_object_object_add(o, "delivery", json_object_new_string("inline")) < 0 ||
             json_object_object_add(o, "contentType", json_object_new_string(DIAG_CONTENT_TYPE)) < 0 ||
             json_object_object_add(o, "truncated", json_object_new_boolean(d->truncated)) < 0 ||
             json_object_object_add(o, "content",
                                    json_object_new_string_len(d->content, (int)d->len)) < 0 ||
             json_object_object_add(o, "contentLength", json_object_new_int64((int64_t)d->len)) < 0))
                r = -ENOMEM;
        if (r == 0 && w) {
                r = json_object_object_add(o, "warnings", w) < 0 ? -ENOMEM : 0;
                if (r == 0)
                        w = NULL;
        }
        if (r < 0)
                reply_errno(req, r, "diagnostics");
        else
                reply_json(req, 200, o);
        json_object_put(w);
        json_object_put(o);
}

void h_osb_diag_logs(struct request *req)
{
        const struct diag_scope *scope;
        char err[PROVIDER_ERR_MAX] = "", msg[PROVIDER_ERR_MAX + 64];
        struct osb_diag d = { 0 };
        struct osb o;
        int tail, r;

        if (h_osb_open(req, &o) < 0)
                return;
        if (diag_query(req, DIAG_LOGS, &scope, &tail) < 0)
                goto out;
        r = osb_diag_logs(req->w->provider, req->w->cfg, &o.sb.rec, tail, &d, err);
        if (r == -ENOENT) {
                reply_error(req, API_SANDBOX_NOT_FOUND, "sandbox %s: %s", req->path_arg,
                            err[0] ? err : "its container is gone");
                goto out;
        }
        if (r < 0 && r != -ENOMEM) {
                enum api_error e = provider_api_error(r, "logs", err, msg, sizeof(msg));
                if (e != API_NOT_IMPLEMENTED)
                        log_err(LOG_KV({ "SANDBOX_ID", req->path_arg },
                                       { "REQUEST_ID", req->request_id }),
                                "diagnostics logs failed: %s", msg);
                reply_error(req, e, "%s", msg);
                goto out;
        }
        if (r < 0) {
                reply_errno(req, r, "diagnostics logs");
                goto out;
        }
        diag_reply(req, DIAG_LOGS, scope, &d);
out:
        osb_diag_clear(&d);
        osb_sandbox_clear(&o.sb);
}

void h_osb_diag_events(struct request *req)
{
        const struct diag_scope *scope;
        struct osb_diag d = { 0 };
        struct osb o;
        int tail, r;

        if (h_osb_open(req, &o) < 0)
                return;
        if (diag_query(req, DIAG_EVENTS, &scope, &tail) < 0)
                goto out;
        r = osb_diag_events(req->w->redis, req->w->cfg, req->path_arg, &d);
        if (r < 0) {
                reply_errno(req, r, "diagnostics events");
                goto out;
        }
        diag_reply(req, DIAG_EVENTS, scope, &d);
out:
        osb_diag_clear(&d);
        osb_sandbox_clear(&o.sb);
}

/* h_opensandbox: the OpenSandbox lifecycle API
 * (sandbox-lifecycle.yml of the OpenSandbox project) on the broker's slots,
 * but the create (h_osb_create.c).
 *
 * The tenant is the API key's (checked by the route table); another
 * tenant's sandbox does not exist (404), except to an admin key, which
 * lists and acts across tenants. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "h_opensandbox.h"
#include "core/json_input.h"
#include "core/log.h"
#include "core/metrics.h"
#include "sandbox/opensandbox.h"
#include "sandbox/osb_store.h"
#include "readiness.h"
#include "routes.h"
#include "sandbox/sandbox.h"
#include "sandbox/sandbox_control.h"
#include "core/timeutil.h"
#include "sandbox/volume.h"

#define PAGE_SIZE_MAX 200

static void osb_done(struct osb *o)
{
        osb_sandbox_clear(&o->sb);
}

int h_osb_auth(struct request *req, struct osb *o)
{
        memset(o, 0, sizeof(*o));
        if (!req->w->provider) {
                reply_error(req, API_NOT_FOUND, "this broker runs without a sandbox provider");
                return -1;
        }
        snprintf(o->tenant, sizeof(o->tenant), "%s", req->auth.tenant);
        return 0;
}

/* h_osb_open: see h_opensandbox.h. */
int h_osb_open(struct request *req, struct osb *o)
{
        const char *tenant;
        int r;

        if (h_osb_auth(req, o) < 0)
                return -1;
        r = osb_store_get(req->w->redis, req->w->cfg, req->path_arg, true, &o->sb);
        if (r < 0 && r != -ENOENT) {
                reply_errno(req, r, "sandbox lookup");
                return -1;
        }
        /* no record, or one that is no OpenSandbox sandbox (a lease's: no tenant) */
        tenant = o->sb.rec.tenant;
        if (r == -ENOENT || !tenant[0] || (strcmp(tenant, o->tenant) != 0 && !req->auth.admin)) {
                reply_error(req, API_SANDBOX_NOT_FOUND, "no sandbox %s", req->path_arg);
                osb_done(o);
                return -1;
        }
        /* A sandbox whose create's answer reached nobody (answerBy) is
         * removed after OPENSANDBOX_UNANSWERED_S: a request of its own
         * tenant naming it shows that a client has it (one that found it in
         * its list after a 502, say). An admin's look does not. */
        if (strcmp(tenant, o->tenant) == 0 && o->sb.rec.answer_by[0] &&
            (r = osb_store_answered(req->w->redis, req->path_arg)) < 0)
                log_warn(LOG_KV({ "SANDBOX_ID", req->path_arg }, { "REQUEST_ID", req->request_id }),
                         "a request named a sandbox waiting for its create's answer, but it was not "
                         "marked answered (%s)", strerror(-r));
        /* an admin acts on the sandbox as its own tenant would */
        snprintf(o->tenant, sizeof(o->tenant), "%s", tenant);
        return 0;
}

void h_osb_get(struct request *req)
{
        struct osb o;

        if (h_osb_open(req, &o) < 0)
                return;
        reply_json(req, 200, o.sb.json);
        osb_done(&o);
}

static int parse_metadata_filter(const char *v, struct osb_list_filter *f)
{
        const char *p = v;
        char k[128], val[128];
        int r;

        /* the value is itself a query string ("a=b&c=d"), its parts encoded once more */
        while ((r = url_query_next(&p, k, sizeof(k), val, sizeof(val))) == 1) {
                if (f->n_md >= 16 || !*k)
                        return -EINVAL;
                strcpy(f->md_keys[f->n_md], k);
                strcpy(f->md_vals[f->n_md], val);
                f->n_md++;
        }
        return r;
}

void h_osb_list(struct request *req)
{
        struct osb_list_filter f;
        struct json_object *items = NULL, *o;
        const char *cursor = req->query;
        char name[32], value[1024];
        long page = 1, size = 20;
        long long total = 0;
        struct osb a;
        int r;

        if (h_osb_auth(req, &a) < 0)
                return;
        memset(&f, 0, sizeof(f));
        while ((r = url_query_next(&cursor, name, sizeof(name), value, sizeof(value))) == 1) {
                char *end;
                if (strcmp(name, "state") == 0 && f.n_states < 8) {
                        /* any letter case ("RUNNING", the SDK README's); a state
                         * this server never gives (Resuming, Allocated, one
                         * added later: clients must tolerate new states, the
                         * spec says) matches nothing, as given */
                        const char *st = osb_state_canonical(value);
                        if (!st && (!*value || strlen(value) >= sizeof(f.states[0]))) {
                                reply_error(req, API_INVALID_REQUEST, "state must be 1 to %zu bytes",
                                            sizeof(f.states[0]) - 1);
                                return;
                        }
                        strcpy(f.states[f.n_states++], st ? st : value);
                } else if (strcmp(name, "metadata") == 0) {
                        if (parse_metadata_filter(value, &f) < 0) {
                                reply_error(req, API_INVALID_REQUEST, "metadata filter must be k=v pairs joined by &");
                                return;
                        }
                } else if (strcmp(name, "page") == 0 || strcmp(name, "pageSize") == 0) {
                        long n = strtol(value, &end, 10);
                        if (*end || end == value || n < 1 || (name[4] && n > PAGE_SIZE_MAX) || n > 1000000) {
                                reply_error(req, API_INVALID_REQUEST, "%s must be an integer from 1 to %d", name,
                                            name[4] ? PAGE_SIZE_MAX : 1000000);
                                return;
                        }
                        *(name[4] ? &size : &page) = n;
                } else if (strcmp(name, "state") == 0) {
                        reply_error(req, API_INVALID_REQUEST, "at most 8 state filters");
                        return;
                }
        }
        if (r < 0) {
                reply_error(req, API_INVALID_REQUEST, "malformed query string");
                return;
        }
        /* an admin key lists every tenant's live sandboxes */
        r = osb_store_list(req->w->redis, req->auth.admin ? "" : a.tenant, page, size, &f, &total, &items);
        if (r < 0) {
                reply_errno(req, r, "list");
                return;
        }
        o = osb_page_json(items, page, size, total);
        reply_json(req, 200, o);
        json_put(o);
}

void h_osb_delete(struct request *req)
{
        struct sandbox_control_outcome out;
        struct osb o;
        int r;

        if (h_osb_open(req, &o) < 0)
                return;
        r = sandbox_control_osb_delete(req->w->redis, req->w->provider, req->path_arg, o.tenant,
                                       &o.sb.rec, &out);
        if (r < 0) {
                reply_errno(req, r, "delete");
        } else if (out.kind == SANDBOX_CONTROL_GONE) {
                reply_error(req, API_SANDBOX_NOT_FOUND, "sandbox %s is already terminated",
                            req->path_arg);
        } else {
                request_audit(req, (struct audit_event){ .type = AUDIT_SANDBOX_DELETED,
                                                         .tenant = o.tenant,
                                                         .sandbox_id = req->path_arg });
                reply_empty(req, 204);
        }
        osb_done(&o);
}

/* pause (Running -> Paused) or resume (Paused -> Running): one use-case
 * (sandbox_control.h), its outcome mapped */
static void pause_resume(struct request *req, bool pause)
{
        const char *what = pause ? "pause" : "resume";
        struct sandbox_control_outcome out;
        struct osb o;
        int r;

        if (h_osb_open(req, &o) < 0)
                return;
        r = (pause ? sandbox_control_pause : sandbox_control_resume)(
                req->w->redis, req->w->provider, req->path_arg, o.sb.rec.state, o.sb.rec.ref, &out);
        if (r == 0 && out.kind == SANDBOX_CONTROL_REFUSED) {
                reply_error(req, API_CONFLICT, "sandbox %s is %s; %s needs it %s", req->path_arg,
                            out.state, what, pause ? "Running" : "Paused");
                goto out;
        }
        if (r == 0 && out.kind == SANDBOX_CONTROL_PROVIDER)
                r = out.provider_r;
        if (r == -EIO) {
                reply_errno(req, r, what);
                goto out;
        }
        if (r == -EOPNOTSUPP) { /* the backend cannot (Kubernetes): nothing changed */
                reply_error(req, API_NOT_IMPLEMENTED, "%s: %s", what, out.err);
                goto out;
        }
        if (r < 0) {
                log_err(LOG_KV({ "SANDBOX_ID", req->path_arg }, { "REQUEST_ID", req->request_id }),
                        "%s failed: %s", what, out.err);
                reply_error(req, r == -ECONNREFUSED ? API_UNAVAILABLE : API_SANDBOX_FAILED,
                            "%s: %s", what, out.err);
                goto out;
        }
        request_audit(req, (struct audit_event){ .type = pause ? AUDIT_SANDBOX_PAUSED : AUDIT_SANDBOX_RESUMED,
                                                 .tenant = o.tenant, .sandbox_id = req->path_arg });
        reply_empty(req, 202);
out:
        osb_done(&o);
}

void h_osb_pause(struct request *req)
{
        pause_resume(req, true);
}

void h_osb_resume(struct request *req)
{
        pause_resume(req, false);
}

void h_osb_renew(struct request *req)
{
        struct json_object *body = NULL, *v, *res;
        char why[256], iso[32];
        int64_t ms, latest;
        struct osb o;
        int r;

        if (h_osb_open(req, &o) < 0)
                return;
        if (request_json_body(req, &body) < 0)
                goto out;
        if (!json_object_object_get_ex(body, "expiresAt", &v) || !json_object_is_type(v, json_type_string) ||
            osb_parse_time(json_object_get_string(v), &ms) < 0) {
                reply_error(req, API_INVALID_REQUEST, "expiresAt must be an RFC 3339 UTC time, e.g. 2025-11-16T14:30:45Z");
                goto out;
        }
        /* any future time up to OPENSANDBOX_MAX_TIMEOUT_S from now (checked again,
         * atomically, by the script); the answer names the maximum */
        latest = timeutil_now_ms() + (int64_t)req->w->cfg->osb_max_timeout_s * 1000;
        if (ms > latest) {
                timeutil_format_iso(latest, iso, sizeof(iso));
                reply_error(req, API_INVALID_REQUEST,
                            "expiresAt is beyond the longest timeout this server allows: at most %d s "
                            "(OPENSANDBOX_MAX_TIMEOUT_S) from now, i.e. not after %s",
                            req->w->cfg->osb_max_timeout_s, iso);
                goto out;
        }
        r = osb_store_renew(req->w->redis, req->w->cfg, req->path_arg, o.tenant, (long long)ms,
                            (long long)latest, why);
        if (r == 0) {
                timeutil_format_iso(ms, iso, sizeof(iso));
                res = json_object_new_object();
                json_object_object_add(res, "expiresAt", json_object_new_string(iso));
                reply_json(req, 200, res);
                json_put(res);
        } else if (r == -EINVAL) {
                reply_error(req, API_INVALID_REQUEST, "%s", why);
        } else if (r == -EBUSY) {
                reply_error(req, API_CONFLICT, "sandbox %s is %s", req->path_arg, why);
        } else if (r == -ENOENT) {
                reply_error(req, API_SANDBOX_NOT_FOUND, "no sandbox %s", req->path_arg);
        } else {
                reply_errno(req, r, "renew");
        }
out:
        json_put(body);
        osb_done(&o);
}

void h_osb_metadata(struct request *req)
{
        struct json_object *body = NULL, *sb = NULL;
        char err[OSB_ERR_MAX];
        struct osb o;
        int r;

        if (h_osb_open(req, &o) < 0)
                return;
        if (request_json_body(req, &body) < 0)
                goto out;
        /* JSON Merge Patch (RFC 7396) on a flat object: null deletes a key.
         * Checked here, merged atomically in Redis (concurrent patches both land). */
        if (osb_metadata_patch_check(body, err) < 0) {
                reply_error(req, API_INVALID_REQUEST, "%s", err);
                goto out;
        }
        r = osb_store_metadata_patch(req->w->redis, req->path_arg, o.tenant,
                                     json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN),
                                     OSB_METADATA_MAX - 1, &sb);
        if (r == -E2BIG) {
                reply_error(req, API_INVALID_REQUEST, "metadata is larger than %d bytes", OSB_METADATA_MAX - 1);
        } else if (r == -ENOENT) {
                reply_error(req, API_SANDBOX_NOT_FOUND, "no sandbox %s", req->path_arg);
        } else if (r < 0) {
                reply_errno(req, r, "metadata");
        } else {
                reply_json(req, 200, sb);
        }
out:
        json_put(sb);
        json_put(body);
        osb_done(&o);
}

void h_osb_endpoint(struct request *req)
{
        const char *host = req->w->cfg->osb_endpoint_host, *cursor = req->query;
        struct json_object *res, *hdrs;
        char name[32], value[64], url[512], detail[READINESS_DETAIL_MAX], *end, token[OSB_TOKEN_MAX];
        long port = strtol(req->path_arg2, &end, 10);
        struct readiness rd;
        struct osb o;
        int r;

        if (h_osb_open(req, &o) < 0)
                return;
        if (*end || end == req->path_arg2 || port < 1 || port > 65535) {
                reply_error(req, API_INVALID_REQUEST, "port must be an integer from 1 to 65535");
                goto out;
        }
        while ((r = url_query_next(&cursor, name, sizeof(name), value, sizeof(value))) == 1)
                if (strcmp(name, "expires") == 0) {
                        reply_error(req, API_INVALID_REQUEST, "signed endpoints (expires) are not supported; "
                                                              "endpoints are always served through this server");
                        goto out;
                }
        /* Every port has the same path: execd's and egress's are served by
         * the broker itself, any other reaches 127.0.0.1:{port} inside the
         * sandbox through its agent (sandbox-ingress, docs/INGRESS.md). */
        if (!*host)
                host = FCGX_GetParam("HTTP_HOST", req->fcgx->envp);
        if (!host || !*host || strlen(host) > 255) {
                reply_error(req, API_INVALID_REQUEST, "no Host header to build the endpoint from");
                goto out;
        }
        /* The SDKs ask for execd's endpoint right after the create, and the
         * TypeScript SDK's create fails at once only here (its /ping loop
         * retries everything): a sandbox being made is waited for (bounded,
         * readiness.h), and one that failed or ended is 403 with its reason. */
        if (port == OSB_EXECD_PORT && readiness_read(req, req->path_arg, &rd) == 0) {
                readiness_wait(req, req->path_arg, true, &rd);
                if (readiness_final(&rd)) {
                        readiness_detail(&rd, detail, sizeof(detail));
                        reply_error(req, API_SANDBOX_UNUSABLE, "sandbox %s is %s%s: it will never be ready",
                                    req->path_arg, rd.state, detail);
                        goto out;
                }
        }
        /* the caller's key's own token: it dies with the key (revoked or
         * rotated), and with the sandbox's rotation (h_osb_token_rotate) */
        r = osb_store_token_issue(req->w->redis, req->path_arg, o.tenant, req->auth.key_id, token);
        if (r == -ENOENT) {
                reply_error(req, API_SANDBOX_NOT_FOUND, "no sandbox %s", req->path_arg);
                goto out;
        }
        if (r < 0) {
                reply_errno(req, r, "endpoint");
                goto out;
        }
        snprintf(url, sizeof(url), "%s/v1/sandboxes/%s/proxy/%ld", host, req->path_arg, port);
        res = json_object_new_object();
        hdrs = json_object_new_object();
        json_object_object_add(res, "endpoint", json_object_new_string(url));
        json_object_object_add(hdrs, "X-EXECD-ACCESS-TOKEN", json_object_new_string(token));
        json_object_object_add(res, "headers", hdrs);
        reply_json(req, 200, res);
        json_put(res);
out:
        explicit_bzero(token, sizeof(token));
        osb_done(&o);
}

/* POST /v1/sandboxes/{id}/token/rotate (in no spec; docs/API.md): every
 * data-plane token of the sandbox, whichever key fetched it, is refused from
 * the next request on; the answer carries the caller's key's new token, as
 * the endpoint answer does (other keys fetch theirs from the endpoint). */
void h_osb_token_rotate(struct request *req)
{
        char token[OSB_TOKEN_MAX] = "";
        struct json_object *res, *hdrs;
        long long revoked = 0;
        struct osb o;
        int r;

        if (h_osb_open(req, &o) < 0)
                return;
        r = osb_store_token_rotate(req->w->redis, req->path_arg, o.tenant, req->auth.key_id, token,
                                   &revoked);
        if (r == -ENOENT) {
                reply_error(req, API_SANDBOX_NOT_FOUND, "no sandbox %s", req->path_arg);
                goto out;
        }
        if (r < 0) {
                reply_errno(req, r, "token rotate");
                goto out;
        }
        log_info(LOG_KV({ "SANDBOX_ID", req->path_arg }, { "TENANT", o.tenant },
                        { "KEY_ID", req->auth.key_id }, { "REQUEST_ID", req->request_id }),
                 "data-plane tokens rotated: %lld old token(s) refused from now on", revoked);
        request_audit(req, (struct audit_event){ .type = AUDIT_SANDBOX_TOKEN_ROTATED,
                                                 .tenant = o.tenant, .sandbox_id = req->path_arg });
        res = json_object_new_object();
        hdrs = json_object_new_object();
        json_object_object_add(hdrs, "X-EXECD-ACCESS-TOKEN", json_object_new_string(token));
        json_object_object_add(res, "headers", hdrs);
        json_object_object_add(res, "revokedTokens", json_object_new_int64(revoked));
        reply_json(req, 200, res);
        json_put(res);
out:
        explicit_bzero(token, sizeof(token));
        osb_done(&o);
}

/* POST /v1/metrics/events: the SDKs' telemetry after every create
 * (osb_metrics_event_parse), in none of the specs, its answer ignored by the
 * SDKs. Recorded as metrics only, never stored per event: one count of
 * broker_sdk_create_events_total{success} and one observation of the
 * histogram broker_sdk_sandbox_create_seconds (fixed series, whatever the
 * clients send); a debug log line names the tenant and sandbox. 204, as
 * the reference server answers; a bad body is a 400 and counts nothing. */
void h_osb_metrics_event(struct request *req)
{
        struct json_object *body = NULL;
        struct osb_metrics_event ev;
        char why[OSB_ERR_MAX];

        if (request_json_body(req, &body) < 0)
                goto out;
        if (osb_metrics_event_parse(body, &ev, why) < 0) {
                reply_error(req, API_INVALID_REQUEST, "%s", why);
                goto out;
        }
        metrics_add(ev.success ? "broker_sdk_create_events_total{success=\"true\"}"
                               : "broker_sdk_create_events_total{success=\"false\"}",
                    1);
        metrics_observe_ms(METRICS_SDK_CREATE, ev.duration_ms);
        log_debug(LOG_KV({ "TENANT", req->auth.tenant },
                         { "SANDBOX_ID", ev.sandbox_id ? ev.sandbox_id : "" },
                         { "REQUEST_ID", req->request_id }),
                  "SDK create event: %s after %lld ms", ev.success ? "ready" : "failed",
                  (long long)ev.duration_ms);
        reply_empty(req, 204);
out:
        json_put(body);
}

/* Routes the SDKs and osb call that this server does not serve: 501 with
 * the reason (never "no such route"). */
void h_osb_not_implemented(struct request *req)
{
        reply_error(req, API_NOT_IMPLEMENTED,
                    "%s %s: this diagnostic is not served by this server (the deprecated "
                    "DevOps forms of osb devops; diagnostics/logs and /events with a scope "
                    "are)",
                    req->method, req->route);
}


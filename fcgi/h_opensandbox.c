/* h_opensandbox: the OpenSandbox lifecycle API
 * (../shared/specs/opensandbox/sandbox-lifecycle.yml) on the broker's slots.
 *
 * A create is a lease of its tenant (user LEASE_OSB_USER, which the lease API
 * cannot name; session = sandbox id) that carries the sandbox record made at
 * create time: it takes a slot like any acquire, or waits in the same Kafka
 * queue (Pending, reason QUEUED), and it expires at the sandbox's expiresAt
 * instead of by heartbeats. The tenant is the API key's (checked by the
 * route table); another tenant's sandbox does not exist (404), except to an
 * admin key, which lists and acts across tenants. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_input.h"
#include "lease.h"
#include "log.h"
#include "opensandbox.h"
#include "routes.h"
#include "sandbox.h"
#include "timeutil.h"

#define LIST_MAX 10000       /* records a list reads at most */
#define PAGE_SIZE_MAX 200

struct osb {
        char tenant[130];
        redisReply *rec; /* HGETALL of the sandbox, owned */
};

static void osb_done(struct osb *o)
{
        reply_free(o->rec);
        o->rec = NULL;
}

static const char *rec_get(const redisReply *h, const char *name)
{
        for (size_t i = 0; h && i + 1 < h->elements; i += 2)
                if (h->element[i]->type == REDIS_REPLY_STRING && strcmp(h->element[i]->str, name) == 0 &&
                    h->element[i + 1]->type == REDIS_REPLY_STRING)
                        return h->element[i + 1]->str;
        return NULL;
}

/* The caller's tenant (the route table authenticated the key); replies
 * and returns -1 when the broker has no sandboxes. */
static int osb_auth(struct request *req, struct osb *o)
{
        memset(o, 0, sizeof(*o));
        if (!req->w->provider) {
                reply_error(req, API_NOT_FOUND, "this broker runs without a sandbox provider");
                return -1;
        }
        snprintf(o->tenant, sizeof(o->tenant), "%s", req->auth.tenant);
        return 0;
}

static int read_record(struct request *req, const char *sid, redisReply **ret)
{
        char key[160];

        snprintf(key, sizeof(key), "%ssandbox:%s", req->w->cfg->key_prefix, sid);
        const char *argv[] = { "HGETALL", key };
        return redis_conn_command(req->w->redis, 2, argv, ret);
}

/* Authenticate and load the path's sandbox of this tenant; replies on error. */
static int osb_open(struct request *req, struct osb *o)
{
        const char *tenant;
        int r;

        if (osb_auth(req, o) < 0)
                return -1;
        r = read_record(req, req->path_arg, &o->rec);
        if (r < 0) {
                reply_errno(req, r, "sandbox lookup");
                return -1;
        }
        tenant = rec_get(o->rec, "tenant");
        if (!tenant || (strcmp(tenant, o->tenant) != 0 && !req->auth.admin)) {
                reply_error(req, API_SANDBOX_NOT_FOUND, "no sandbox %s", req->path_arg);
                osb_done(o);
                return -1;
        }
        /* an admin acts on the sandbox as its own tenant would */
        snprintf(o->tenant, sizeof(o->tenant), "%s", tenant);
        return 0;
}

static void reply_sandbox(struct request *req, int status, const char *hdr, const redisReply *rec,
                          bool full)
{
        struct json_object *o = NULL;

        if (osb_sandbox_json(rec, full, &o) < 0) {
                reply_errno(req, -EPROTO, "sandbox");
                return;
        }
        reply_json_hdr(req, status, hdr, o);
        json_put(o);
}

/* After the 202: make the sandbox of a create that got a slot at once. */
static void create_after(struct request *req)
{
        char err[SANDBOX_ERR_MAX];
        int r = sandbox_lease_ready(req->w->redis, req->w->provider, req->w->cfg, req->after_arg,
                                    NULL, err);

        if (r < 0 && r != -ENOENT)
                log_err(LOG_KV({ "LEASE_ID", req->after_arg }, { "REQUEST_ID", req->request_id }),
                        "OpenSandbox create: sandbox failed: %s", err);
}

static int delete_record(struct request *req, const char *sid, const char *tenant)
{
        redisReply *rep = NULL;
        const char *argv[] = { sid, tenant };
        int r = redis_conn_script(req->w->redis, LUA_OSB_DELETE, 2, argv, &rep);

        reply_free(rep);
        return r;
}

void h_osb_create(struct request *req)
{
        struct json_object *body = NULL;
        struct osb_create c;
        struct lease_request lr = { 0 };
        struct lease_outcome out = { 0 };
        redisReply *rep = NULL;
        char err[OSB_ERR_MAX], sid[33], token[33], cpus[24], mem[24], pids[16], exp[24] = ""; /* timeout ms */
        char max[16], location[96];
        struct osb o;
        int r;

        if (osb_auth(req, &o) < 0 || request_json_body(req, &body) < 0)
                goto out;
        if (osb_create_parse(req->w->cfg, body, &c, err) < 0) {
                reply_error(req, API_INVALID_REQUEST, "%s", err);
                goto out;
        }
        if (timeutil_random_id(sid, sizeof(sid)) < 0 || timeutil_random_id(token, sizeof(token)) < 0) {
                reply_errno(req, -EIO, "create");
                goto out;
        }
        snprintf(cpus, sizeof(cpus), "%lld", (long long)c.nano_cpus);
        snprintf(mem, sizeof(mem), "%lld", (long long)c.memory_bytes);
        snprintf(pids, sizeof(pids), "%d", req->w->cfg->sandbox_pids);
        if (c.timeout_s > 0)
                snprintf(exp, sizeof(exp), "%lld", (long long)c.timeout_s * 1000);
        snprintf(max, sizeof(max), "%d", req->w->cfg->osb_max_per_tenant);
        const char *argv[] = { sid, o.tenant, max, exp, "image", c.image, "entrypoint", c.entrypoint,
                               "env", c.env, "metadata", c.metadata, "nanoCpus", cpus,
                               "memoryBytes", mem, "pids", pids, "token", token,
                               "provider", req->w->cfg->provider };
        r = redis_conn_script(req->w->redis, LUA_OSB_CREATE, 22, argv, &rep);
        if (r < 0) {
                reply_errno(req, r, "create");
                goto out;
        }
        if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 2) {
                reply_error(req, API_CONFLICT, "tenant %s already has %lld live sandboxes (the limit)",
                            o.tenant, rep->element[1]->integer);
                goto out;
        }
        /* Admission: the same slots and queue as lease acquires. */
        lr = (struct lease_request){ .tenant = o.tenant, .user_id = LEASE_OSB_USER,
                                     .session_id = sid, .mode = "exclusive", .pool_id = "",
                                     .sandbox_id = sid };
        r = lease_acquire(req->w->redis, req->w->cfg, &lr, &out);
        if (r < 0) {
                delete_record(req, sid, o.tenant);
                reply_errno(req, r, "create");
                goto out;
        }
        if (out.kind == LEASE_QUEUED) {
                char msg[96];
                if (out.new_ticket && leases_queue_ticket(req, &lr, &out) < 0) {
                        delete_record(req, sid, o.tenant); /* the 503 is answered */
                        goto out;
                }
                snprintf(msg, sizeof(msg), "waiting for a free slot (queue position %lld)", out.position);
                sandbox_transition(req->w->redis, sid, "Pending", "Pending", "QUEUED", msg, "");
                request_audit(req, (struct audit_event){ .type = AUDIT_SANDBOX_CREATED,
                                                         .tenant = o.tenant, .sandbox_id = sid,
                                                         .ticket_id = out.ticket_id,
                                                         .reason = msg });
        } else if (out.kind == LEASE_GRANTED) {
                struct json_object *lid;
                json_object_object_get_ex(out.lease, "leaseId", &lid);
                snprintf(req->after_arg, sizeof(req->after_arg), "%s", json_object_get_string(lid));
                req->after = create_after;
                request_audit(req, (struct audit_event){ .type = AUDIT_SANDBOX_CREATED,
                                                         .tenant = o.tenant, .sandbox_id = sid,
                                                         .lease_id = req->after_arg,
                                                         .reason = "admitted: a slot was free" });
        } else {
                delete_record(req, sid, o.tenant);
                reply_errno(req, -EPROTO, "create");
                goto out;
        }
        reply_free(rep);
        rep = NULL;
        r = read_record(req, sid, &rep);
        if (r < 0) {
                reply_errno(req, r, "create");
                goto out;
        }
        snprintf(location, sizeof(location), "Location: /v1/sandboxes/%s", sid);
        reply_sandbox(req, 202, location, rep, false);
out:
        lease_outcome_clear(&out);
        reply_free(rep);
        json_put(body);
}

void h_osb_get(struct request *req)
{
        struct osb o;

        if (osb_open(req, &o) < 0)
                return;
        reply_sandbox(req, 200, NULL, o.rec, true);
        osb_done(&o);
}

/* state and metadata filters of a list */
struct list_filter {
        char states[8][24];
        int n_states;
        char md_keys[16][128];
        char md_vals[16][128];
        int n_md;
};

static int parse_metadata_filter(const char *v, struct list_filter *f)
{
        const char *p = v;
        char k[128], val[128];
        int r;

        /* the value is itself a query string ("a=b&c=d"), its parts encoded once more */
        while ((r = request_query_next(&p, k, sizeof(k), val, sizeof(val))) == 1) {
                if (f->n_md >= 16 || !*k)
                        return -EINVAL;
                strcpy(f->md_keys[f->n_md], k);
                strcpy(f->md_vals[f->n_md], val);
                f->n_md++;
        }
        return r;
}

static bool list_match(const struct list_filter *f, const redisReply *rec)
{
        const char *state = rec_get(rec, "state");
        struct json_object *md = NULL, *v;
        bool ok = f->n_states == 0;

        for (int i = 0; i < f->n_states && !ok; i++)
                ok = state && strcmp(state, f->states[i]) == 0;
        if (!ok || f->n_md == 0)
                return ok;
        md = json_tokener_parse(rec_get(rec, "metadata") ? rec_get(rec, "metadata") : "{}");
        for (int i = 0; i < f->n_md && ok; i++)
                ok = md && json_object_object_get_ex(md, f->md_keys[i], &v) &&
                     strcmp(json_object_get_string(v), f->md_vals[i]) == 0;
        json_put(md);
        return ok;
}

void h_osb_list(struct request *req)
{
        static __thread struct list_filter f;
        struct json_object *items = NULL, *o, *pg;
        redisReply *ids = NULL;
        const char *cursor = req->query;
        char name[32], value[1024], key[200];
        long page = 1, size = 20, total = 0, skip;
        struct osb a;
        int r;

        if (osb_auth(req, &a) < 0)
                return;
        memset(&f, 0, sizeof(f));
        while ((r = request_query_next(&cursor, name, sizeof(name), value, sizeof(value))) == 1) {
                char *end;
                if (strcmp(name, "state") == 0 && f.n_states < 8 && strlen(value) < 24) {
                        strcpy(f.states[f.n_states++], value);
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
        if (req->auth.admin)
                snprintf(key, sizeof(key), "%ssandboxes", req->w->cfg->key_prefix);
        else
                snprintf(key, sizeof(key), "%stenant:%s", req->w->cfg->key_prefix, a.tenant);
        const char *argv[] = { "ZREVRANGE", key, "0", "9999" };
        r = redis_conn_command(req->w->redis, 4, argv, &ids);
        if (r < 0) {
                reply_errno(req, r, "list");
                return;
        }
        items = json_object_new_array();
        skip = (page - 1) * size;
        for (size_t i = 0; i < ids->elements && i < LIST_MAX; i++) {
                redisReply *rec = NULL;
                struct json_object *sb;
                if (ids->element[i]->type != REDIS_REPLY_STRING ||
                    read_record(req, ids->element[i]->str, &rec) < 0)
                        continue;
                if (rec->elements > 0 && list_match(&f, rec)) {
                        if (total >= skip && total < skip + size && osb_sandbox_json(rec, true, &sb) == 0)
                                json_object_array_add(items, sb);
                        total++;
                }
                reply_free(rec);
        }
        o = json_object_new_object();
        pg = json_object_new_object();
        json_object_object_add(o, "items", items);
        json_object_object_add(pg, "page", json_object_new_int64(page));
        json_object_object_add(pg, "pageSize", json_object_new_int64(size));
        json_object_object_add(pg, "totalItems", json_object_new_int64(total));
        json_object_object_add(pg, "totalPages", json_object_new_int64((total + size - 1) / size));
        json_object_object_add(pg, "hasNextPage", json_object_new_boolean(page * size < total));
        json_object_object_add(o, "pagination", pg);
        reply_json(req, 200, o);
        json_put(o);
        reply_free(ids);
}

void h_osb_delete(struct request *req)
{
        redisReply *rep = NULL;
        struct osb o;
        int r;

        if (osb_open(req, &o) < 0)
                return;
        const char *argv[] = { req->path_arg, o.tenant };
        r = redis_conn_script(req->w->redis, LUA_OSB_DELETE, 2, argv, &rep);
        if (r < 0) {
                reply_errno(req, r, "delete");
        } else if (rep->type == REDIS_REPLY_ARRAY && rep->elements == 2 &&
                   strcmp(rep->element[1]->str, "Terminated") == 0) {
                reply_error(req, API_SANDBOX_NOT_FOUND, "sandbox %s is already terminated", req->path_arg);
        } else {
                request_audit(req, (struct audit_event){ .type = AUDIT_SANDBOX_DELETED,
                                                         .tenant = o.tenant,
                                                         .sandbox_id = req->path_arg });
                reply_empty(req, 204);
        }
        reply_free(rep);
        osb_done(&o);
}

/* pause (Running -> Paused) or resume (Paused -> Running) */
static void pause_resume(struct request *req, bool pause)
{
        const char *from = pause ? "Running" : "Paused", *to = pause ? "Paused" : "Running";
        char err[PROVIDER_ERR_MAX] = "";
        const char *state, *ref;
        struct osb o;
        int r;

        if (osb_open(req, &o) < 0)
                return;
        state = rec_get(o.rec, "state");
        ref = rec_get(o.rec, "ref");
        if (!state || strcmp(state, from) != 0 || !ref || !*ref) {
                reply_error(req, API_CONFLICT, "sandbox %s is %s; %s needs it %s", req->path_arg,
                            state ? state : "unknown", pause ? "pause" : "resume", from);
                goto out;
        }
        r = pause ? req->w->provider->ops->pause(req->w->provider, ref, err)
                  : req->w->provider->ops->resume(req->w->provider, ref, err);
        if (r < 0) {
                log_err(LOG_KV({ "SANDBOX_ID", req->path_arg }, { "REQUEST_ID", req->request_id }),
                        "%s failed: %s", pause ? "pause" : "resume", err);
                reply_error(req, r == -ECONNREFUSED ? API_UNAVAILABLE : API_SANDBOX_FAILED, "%s: %s",
                            pause ? "pause" : "resume", err);
                goto out;
        }
        r = sandbox_transition(req->w->redis, req->path_arg, from, to, pause ? "user_pause" : "user_resume",
                               "", "");
        if (r < 0 && r != -EBUSY) {
                reply_errno(req, r, pause ? "pause" : "resume");
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
        redisReply *rep = NULL;
        char newms[24], latest[24], tttl[16], iso[32];
        int64_t ms;
        struct osb o;
        int r;

        if (osb_open(req, &o) < 0)
                return;
        if (request_json_body(req, &body) < 0)
                goto out;
        if (!json_object_object_get_ex(body, "expiresAt", &v) || !json_object_is_type(v, json_type_string) ||
            osb_parse_time(json_object_get_string(v), &ms) < 0) {
                reply_error(req, API_INVALID_REQUEST, "expiresAt must be an RFC 3339 UTC time, e.g. 2025-11-16T14:30:45Z");
                goto out;
        }
        snprintf(newms, sizeof(newms), "%lld", (long long)ms);
        snprintf(latest, sizeof(latest), "%lld",
                 (long long)(timeutil_now_ms() + (int64_t)req->w->cfg->osb_max_timeout_s * 1000));
        snprintf(tttl, sizeof(tttl), "%d", req->w->cfg->ticket_ttl_ms);
        const char *argv[] = { req->path_arg, o.tenant, newms, latest, tttl };
        r = redis_conn_script(req->w->redis, LUA_OSB_RENEW, 5, argv, &rep);
        if (r < 0) {
                reply_errno(req, r, "renew");
                goto out;
        }
        if (rep->type != REDIS_REPLY_ARRAY || rep->elements < 1) {
                reply_errno(req, -EPROTO, "renew");
        } else if (strcmp(rep->element[0]->str, "ok") == 0) {
                timeutil_format_iso(ms, iso, sizeof(iso));
                res = json_object_new_object();
                json_object_object_add(res, "expiresAt", json_object_new_string(iso));
                reply_json(req, 200, res);
                json_put(res);
        } else if (strcmp(rep->element[0]->str, "invalid") == 0) {
                reply_error(req, API_INVALID_REQUEST, "%s", rep->element[1]->str);
        } else if (strcmp(rep->element[0]->str, "conflict") == 0) {
                reply_error(req, API_CONFLICT, "sandbox %s is %s", req->path_arg, rep->element[1]->str);
        } else {
                reply_error(req, API_SANDBOX_NOT_FOUND, "no sandbox %s", req->path_arg);
        }
out:
        reply_free(rep);
        json_put(body);
        osb_done(&o);
}

void h_osb_metadata(struct request *req)
{
        struct json_object *body = NULL, *md = NULL;
        redisReply *rep = NULL;
        char err[OSB_ERR_MAX], key[160];
        const char *text;
        struct osb o;
        int r;

        if (osb_open(req, &o) < 0)
                return;
        if (request_json_body(req, &body) < 0)
                goto out;
        md = json_tokener_parse(rec_get(o.rec, "metadata") ? rec_get(o.rec, "metadata") : "{}");
        if (!md)
                md = json_object_new_object();
        /* JSON Merge Patch (RFC 7396) on a flat object: null deletes a key. */
        json_object_object_foreach(body, k, v) {
                if (json_object_is_type(v, json_type_null)) {
                        json_object_object_del(md, k);
                        continue;
                }
                json_object_object_add(md, k, json_object_get(v));
        }
        if (osb_metadata_check(md, err) < 0) {
                reply_error(req, API_INVALID_REQUEST, "%s", err);
                goto out;
        }
        text = json_object_to_json_string_ext(md, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        if (strlen(text) >= OSB_METADATA_MAX) {
                reply_error(req, API_INVALID_REQUEST, "metadata is larger than %d bytes", OSB_METADATA_MAX - 1);
                goto out;
        }
        snprintf(key, sizeof(key), "%ssandbox:%s", req->w->cfg->key_prefix, req->path_arg);
        const char *argv[] = { "HSET", key, "metadata", text };
        r = redis_conn_command(req->w->redis, 4, argv, &rep);
        reply_free(rep);
        rep = NULL;
        if (r == 0)
                r = read_record(req, req->path_arg, &rep);
        if (r < 0) {
                reply_errno(req, r, "metadata");
                goto out;
        }
        reply_sandbox(req, 200, NULL, rep, true);
out:
        reply_free(rep);
        json_put(md);
        json_put(body);
        osb_done(&o);
}

void h_osb_endpoint(struct request *req)
{
        const char *host = req->w->cfg->osb_endpoint_host, *token, *cursor = req->query;
        struct json_object *res, *hdrs;
        char name[32], value[64], url[512], *end;
        long port = strtol(req->path_arg2, &end, 10);
        struct osb o;
        int r;

        if (osb_open(req, &o) < 0)
                return;
        if (*end || end == req->path_arg2 || port < 1 || port > 65535) {
                reply_error(req, API_INVALID_REQUEST, "port must be an integer from 1 to 65535");
                goto out;
        }
        while ((r = request_query_next(&cursor, name, sizeof(name), value, sizeof(value))) == 1)
                if (strcmp(name, "expires") == 0) {
                        reply_error(req, API_INVALID_REQUEST, "signed endpoints (expires) are not supported; "
                                                              "endpoints are always served through this server");
                        goto out;
                }
        /* Sandboxes have no network: only the ports the broker itself serves
         * for a sandbox (execd, egress) can be reached, through the broker. */
        if (port != OSB_EXECD_PORT && port != OSB_EGRESS_PORT) {
                reply_error(req, API_NOT_FOUND, "port %ld is not reachable: sandboxes run without a network; "
                            "the broker serves ports %d (execd) and %d (egress)", port, OSB_EXECD_PORT, OSB_EGRESS_PORT);
                goto out;
        }
        if (!*host)
                host = FCGX_GetParam("HTTP_HOST", req->fcgx->envp);
        if (!host || !*host || strlen(host) > 255) {
                reply_error(req, API_INVALID_REQUEST, "no Host header to build the endpoint from");
                goto out;
        }
        token = rec_get(o.rec, "token");
        snprintf(url, sizeof(url), "%s/v1/sandboxes/%s/proxy/%ld", host, req->path_arg, port);
        res = json_object_new_object();
        hdrs = json_object_new_object();
        json_object_object_add(res, "endpoint", json_object_new_string(url));
        json_object_object_add(hdrs, "X-EXECD-ACCESS-TOKEN", json_object_new_string(token ? token : ""));
        json_object_object_add(res, "headers", hdrs);
        reply_json(req, 200, res);
        json_put(res);
out:
        osb_done(&o);
}

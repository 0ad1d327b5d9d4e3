/* h_opensandbox: the OpenSandbox lifecycle API
 * (sandbox-lifecycle.yml of the OpenSandbox project) on the broker's slots.
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
#include "egress_store.h"
#include "osb_store.h"
#include "readiness.h"
#include "routes.h"
#include "sandbox.h"
#include "snapshot_store.h"
#include "timeutil.h"
#include "volume.h"

#define PAGE_SIZE_MAX 200

struct osb {
        char tenant[130];
        redisReply *rec; /* HGETALL of the sandbox, owned */
};

#define TEMPLATES_NOT_SERVED                                                                        \
        "templates are not served by this server (they are in none of the OpenSandbox specifications " \
        "it implements); make sandboxes from an image or a snapshotId"

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
        return osb_store_get(req->w->redis, req->w->cfg, sid, ret);
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

/* The image.auth of the create answered on this thread, kept in memory
 * for its after hook (the pull) and wiped by it: never stored. */
static __thread struct {
        bool set;
        char sid[64];
        char image[256];
        char user[OSB_AUTH_USER_MAX], pass[OSB_AUTH_PASS_MAX];
} pending_auth;

static void pending_auth_keep(const struct osb_create *c, const char *sid)
{
        pending_auth.set = c->has_auth;
        if (!c->has_auth)
                return;
        snprintf(pending_auth.sid, sizeof(pending_auth.sid), "%s", sid);
        snprintf(pending_auth.image, sizeof(pending_auth.image), "%s", c->image);
        memcpy(pending_auth.user, c->auth_user, sizeof(pending_auth.user));
        memcpy(pending_auth.pass, c->auth_pass, sizeof(pending_auth.pass));
}

static void pending_auth_wipe(void)
{
        explicit_bzero(&pending_auth, sizeof(pending_auth));
}

/* After the 202 of a create with image.auth that got a slot: pull its
 * image with the create's credentials (they are never stored, so no
 * supervisor could), then the supervisors' workers make the sandbox from
 * the image now on the host, as any other create. */
static void create_after(struct request *req)
{
        char err[SANDBOX_ERR_MAX];
        struct image_auth auth = { pending_auth.user, pending_auth.pass };
        int r = sandbox_lease_pull_then_queue(req->w->redis, req->w->provider, req->w->cfg,
                                              req->after_arg, pending_auth.sid, pending_auth.image,
                                              &auth, err);

        pending_auth_wipe();
        if (r < 0 && r != -ECANCELED)
                log_err(LOG_KV({ "LEASE_ID", req->after_arg }, { "REQUEST_ID", req->request_id }),
                        "OpenSandbox create: sandbox failed: %s", err);
}

/* A create granted a warm-pool member: make it the sandbox before the
 * answer (a container update, the entrypoint started by the agent), so
 * that the answer already reads Running. A failure leaves the record
 * Failed, as the after hook would. */
static void warm_ready(struct request *req)
{
        char err[SANDBOX_ERR_MAX];
        int r = sandbox_lease_ready(req->w->redis, req->w->provider, req->w->cfg, req->after_arg,
                                    NULL, err);

        if (r < 0 && r != -ENOENT)
                log_err(LOG_KV({ "LEASE_ID", req->after_arg }, { "REQUEST_ID", req->request_id }),
                        "OpenSandbox create: pooled sandbox failed: %s", err);
}

/* After the 202 of a queued create with image.auth: pull the image now,
 * while the credentials are in memory, so that the sandbox made when a
 * slot frees finds it on the host. */
static void prefetch_after(struct request *req)
{
        char err[PROVIDER_ERR_MAX] = "";
        struct image_auth auth = { pending_auth.user, pending_auth.pass };
        int r = sandbox_image_prefetch(req->w->provider, req->w->cfg, pending_auth.image, &auth, err);

        pending_auth_wipe();
        if (r < 0)
                log_warn(LOG_KV({ "SANDBOX_ID", req->after_arg }, { "REQUEST_ID", req->request_id }),
                         "OpenSandbox create: image pull ahead of the slot failed: %s", err);
}

static int delete_record(struct request *req, const char *sid, const char *tenant)
{
        return osb_store_delete(req->w->redis, sid, tenant);
}

/* The create's volumes (volume.h), made usable now so that a bad one is
 * the create's 4xx; replies and returns -1 on error. */
static int create_volumes(struct request *req, const char *tenant, const char *sid,
                          struct json_object *body, char **ret)
{
        char err[VOLUME_ERR_MAX], msg[VOLUME_ERR_MAX + 64];
        int r = volume_for_create(req->w->provider, req->w->cfg, tenant, sid, body, ret, err);

        switch (r) {
        case 0:
                return 0;
        case -EINVAL:
        case -EPERM:
        case -EOPNOTSUPP:
        case -ENOENT:
                reply_error(req, API_INVALID_REQUEST, "%s", err);
                return -1;
        case -EDQUOT:
        case -EEXIST:
                reply_error(req, API_CONFLICT, "%s", err);
                return -1;
        case -ENOMEM:
                reply_errno(req, r, "create: volumes");
                return -1;
        default:
                reply_error(req, provider_api_error(r, "create: volumes", err, msg, sizeof(msg)), "%s", msg);
                return -1;
        }
}

void h_osb_create(struct request *req)
{
        struct json_object *body = NULL;
        struct osb_create c;
        struct lease_request lr = { 0 };
        struct lease_outcome out = { 0 };
        redisReply *rep = NULL;
        char err[OSB_ERR_MAX], sid[33], cpus[24], mem[24], pids[16], exp[24] = ""; /* timeout ms */
        char location[96];
        char *egress = NULL; /* normalized networkPolicy (egress_store.h) */
        char *volumes = NULL; /* the record's volumes (volume.h); NULL = none */
        bool committed = false; /* the sandbox exists: the volumes made are its own */
        long long live = 0;
        bool warm = false;
        struct osb o;
        int r;

        if (osb_auth(req, &o) < 0 || request_json_body(req, &body) < 0)
                goto out;
        if (json_object_object_get_ex(body, "templateId", NULL)) {
                reply_error(req, API_NOT_IMPLEMENTED, "create: " TEMPLATES_NOT_SERVED);
                goto out;
        }
        if (osb_create_parse(req->w->cfg, body, &c, err) < 0) {
                reply_error(req, API_INVALID_REQUEST, "%s", err);
                goto out;
        }
        r = egress_policy_for_create(req->w->cfg, body, &egress, err, sizeof(err));
        if (r == -EINVAL) {
                reply_error(req, API_INVALID_REQUEST, "%s", err);
                goto out;
        }
        if (r < 0) {
                reply_errno(req, r, "create");
                goto out;
        }
        /* snapshotId: the snapshot's image (this tenant's, Ready), made by the
         * broker; else IMAGE_ALLOW: an image neither on the host nor allowed
         * is refused now */
        if (c.snapshot_id[0]) {
                char st[SNAPSHOT_STATE_MAX] = "";
                r = snapshot_store_image(req->w->redis, req->w->cfg, c.snapshot_id, o.tenant, c.image, st);
                if (r == -ENOENT) {
                        reply_error(req, API_NOT_FOUND, "no snapshot %s", c.snapshot_id);
                        goto out;
                }
                if (r == -EBUSY) {
                        reply_error(req, API_CONFLICT, "snapshot %s is %s; sandboxes are made from Ready "
                                    "snapshots", c.snapshot_id, st);
                        goto out;
                }
                if (r < 0) {
                        reply_errno(req, r, "create");
                        goto out;
                }
        } else if (sandbox_image_admissible(req->w->provider, req->w->cfg, c.image, err) == -EPERM) {
                reply_error(req, API_INVALID_REQUEST, "%s", err);
                goto out;
        }
        if (timeutil_random_id(sid, sizeof(sid)) < 0) {
                reply_errno(req, -EIO, "create");
                goto out;
        }
        if (create_volumes(req, o.tenant, sid, body, &volumes) < 0)
                goto out;
        snprintf(cpus, sizeof(cpus), "%lld", (long long)c.nano_cpus);
        snprintf(mem, sizeof(mem), "%lld", (long long)c.memory_bytes);
        snprintf(pids, sizeof(pids), "%d", req->w->cfg->sandbox_pids);
        if (c.timeout_s > 0)
                snprintf(exp, sizeof(exp), "%lld", (long long)c.timeout_s * 1000);
        const char *fields[] = { "image", c.image, "entrypoint", c.entrypoint, "env", c.env,
                                 "metadata", c.metadata, "nanoCpus", cpus, "memoryBytes", mem,
                                 "pids", pids, "provider", req->w->cfg->provider,
                                 "egress_policy", egress, "snapshotId", c.snapshot_id,
                                 "volumes", volumes ? volumes : "", "runtime", c.runtime };
        /* a member of the image's warm pool, taken by the same script that
         * stores the record: the sandbox then has the member's id */
        r = osb_store_create(req->w->redis, req->w->cfg, sid, o.tenant, exp,
                             osb_create_pool(req->w->cfg, &c, volumes != NULL), c.disk_mb, fields,
                             (int)(sizeof(fields) / sizeof(fields[0])), sid, &warm, &live);
        if (r == -EDQUOT) {
                reply_error(req, API_CONFLICT, "tenant %s already has %lld live sandboxes (the limit)",
                            o.tenant, live);
                goto out;
        }
        if (r == -EFBIG) {
                reply_error(req, API_INVALID_REQUEST, "resourceLimits." OSB_LIMIT_DISK ": at most %lldMi "
                            "for tenant %s", live, o.tenant);
                goto out;
        }
        if (r < 0) {
                reply_errno(req, r, "create");
                goto out;
        }
        /* Admission: the same slots and queue as lease acquires. */
        lr = (struct lease_request){ .tenant = o.tenant, .user_id = LEASE_OSB_USER,
                                     .session_id = sid, .mode = "exclusive", .pool_id = "",
                                     .sandbox_id = sid, .caller_makes = warm || c.has_auth };
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
                if (c.has_auth) {
                        pending_auth_keep(&c, sid);
                        snprintf(req->after_arg, sizeof(req->after_arg), "%s", sid);
                        req->after = prefetch_after;
                }
                request_audit(req, (struct audit_event){ .type = AUDIT_SANDBOX_CREATED,
                                                         .tenant = o.tenant, .sandbox_id = sid,
                                                         .ticket_id = out.ticket_id,
                                                         .reason = msg });
        } else if (out.kind == LEASE_GRANTED) {
                struct json_object *lid;
                json_object_object_get_ex(out.lease, "leaseId", &lid);
                snprintf(req->after_arg, sizeof(req->after_arg), "%s", json_object_get_string(lid));
                if (warm) {
                        /* a running member: apply the request (limits, entrypoint)
                         * now and answer Running; its image is on the host */
                        warm_ready(req);
                } else if (c.has_auth) {
                        /* the pull credentials live only in this thread's
                         * memory: the image is pulled here, after the 202,
                         * then the workers make the sandbox */
                        pending_auth_keep(&c, sid);
                        req->after = create_after;
                }
                /* else the supervisors' provisioning workers make it (the
                 * intent stored by lease_acquire) */
                request_audit(req, (struct audit_event){ .type = AUDIT_SANDBOX_CREATED,
                                                         .tenant = o.tenant, .sandbox_id = sid,
                                                         .lease_id = req->after_arg,
                                                         .reason = "admitted: a slot was free" });
        } else {
                delete_record(req, sid, o.tenant);
                reply_errno(req, -EPROTO, "create");
                goto out;
        }
        committed = true; /* admitted or queued: the sandbox exists */
        r = read_record(req, sid, &rep);
        if (r < 0) {
                reply_errno(req, r, "create");
                goto out;
        }
        snprintf(location, sizeof(location), "Location: /v1/sandboxes/%s", sid);
        reply_sandbox(req, 202, location, rep, false);
out:
        if (volumes && !committed)
                volume_undo(req->w->provider, volumes);
        free(volumes);
        if (req->after != create_after && req->after != prefetch_after)
                pending_auth_wipe();
        osb_create_wipe(&c);
        free(egress);
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
        static __thread struct osb_list_filter f;
        struct json_object *items = NULL, *o;
        redisReply *ids = NULL;
        const char *cursor = req->query;
        char name[32], value[1024];
        long page = 1, size = 20, total = 0;
        struct osb a;
        int r;

        if (osb_auth(req, &a) < 0)
                return;
        memset(&f, 0, sizeof(f));
        while ((r = url_query_next(&cursor, name, sizeof(name), value, sizeof(value))) == 1) {
                char *end;
                if (strcmp(name, "state") == 0 && f.n_states < 8) {
                        /* any letter case ("RUNNING", the SDK README's); unknown: 400 */
                        const char *st = osb_state_canonical(value);
                        if (!st) {
                                reply_error(req, API_INVALID_REQUEST,
                                            "unknown state '%.32s' (Pending, Running, Pausing, Paused, "
                                            "Stopping, Terminated, Failed)", value);
                                return;
                        }
                        strcpy(f.states[f.n_states++], st);
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
        r = osb_store_list(req->w->redis, req->auth.admin ? "" : a.tenant, page, size, &f, &ids);
        if (r < 0) {
                reply_errno(req, r, "list");
                return;
        }
        items = json_object_new_array();
        total = ids->element[0]->integer;
        for (size_t i = 1; i < ids->elements; i++) {
                struct json_object *sb;
                if (osb_sandbox_json(ids->element[i], true, &sb) == 0)
                        json_object_array_add(items, sb);
        }
        o = osb_page_json(items, page, size, total);
        reply_json(req, 200, o);
        json_put(o);
        reply_free(ids);
}

void h_osb_delete(struct request *req)
{
        struct osb o;
        int r;

        if (osb_open(req, &o) < 0)
                return;
        r = osb_store_delete(req->w->redis, req->path_arg, o.tenant);
        if (r == -EALREADY || r == -ENOENT) {
                reply_error(req, API_SANDBOX_NOT_FOUND, "sandbox %s is already terminated", req->path_arg);
        } else if (r < 0) {
                reply_errno(req, r, "delete");
        } else {
                const char *ref = rec_get(o.rec, "ref"), *vols = rec_get(o.rec, "volumes");
                /* A sandbox that never had a container ends here, with no
                 * teardown to release its deleteOnSandboxTermination volumes
                 * (sandbox_teardown_next); one still being made keeps its
                 * volume (in use: Docker refuses) for DELETE /v1/volumes. */
                if ((!ref || !*ref) && vols && *vols && provider_has_volumes(req->w->provider))
                        (void)volume_release(req->w->provider, vols);
                request_audit(req, (struct audit_event){ .type = AUDIT_SANDBOX_DELETED,
                                                         .tenant = o.tenant,
                                                         .sandbox_id = req->path_arg });
                reply_empty(req, 204);
        }
        osb_done(&o);
}

/* pause (Running -> Paused) or resume (Paused -> Running) */
static void pause_resume(struct request *req, bool pause)
{
        const char *from = pause ? "Running" : "Paused";
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
        r = osb_store_pause_resume(req->w->redis, req->w->provider, req->path_arg, ref, pause, err);
        if (r == -EIO) {
                reply_errno(req, r, pause ? "pause" : "resume");
                goto out;
        }
        if (r < 0) {
                log_err(LOG_KV({ "SANDBOX_ID", req->path_arg }, { "REQUEST_ID", req->request_id }),
                        "%s failed: %s", pause ? "pause" : "resume", err);
                reply_error(req, r == -ECONNREFUSED ? API_UNAVAILABLE : API_SANDBOX_FAILED, "%s: %s",
                            pause ? "pause" : "resume", err);
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

        if (osb_open(req, &o) < 0)
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
        struct json_object *body = NULL;
        redisReply *rec = NULL;
        char err[OSB_ERR_MAX];
        struct osb o;
        int r;

        if (osb_open(req, &o) < 0)
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
                                     OSB_METADATA_MAX - 1, &rec);
        if (r == -E2BIG) {
                reply_error(req, API_INVALID_REQUEST, "metadata is larger than %d bytes", OSB_METADATA_MAX - 1);
        } else if (r == -ENOENT) {
                reply_error(req, API_SANDBOX_NOT_FOUND, "no sandbox %s", req->path_arg);
        } else if (r < 0) {
                reply_errno(req, r, "metadata");
        } else {
                reply_sandbox(req, 200, NULL, rec, true);
        }
out:
        reply_free(rec);
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

        if (osb_open(req, &o) < 0)
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

        if (osb_open(req, &o) < 0)
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
 * ({eventType: "sandbox.create", createDurationMs, success, sandboxId,
 * image}), in none of the specs, its answer ignored by the SDKs. The broker
 * keeps its own metrics (/metrics): the event is accepted and dropped. */
void h_osb_metrics_event(struct request *req)
{
        reply_empty(req, 204);
}

/* Routes the SDKs and osb call that this server does not serve: 501 with
 * the reason (never "no such route"). */
void h_osb_not_implemented(struct request *req)
{
        if (strncmp(req->route, "/v1/templates", 13) == 0)
                reply_error(req, API_NOT_IMPLEMENTED, "%s %s: " TEMPLATES_NOT_SERVED, req->method, req->route);
        else
                reply_error(req, API_NOT_IMPLEMENTED,
                            "%s %s: diagnostics are not served by this server (logs and events are part "
                            "of the OpenSandbox specification, not served yet)",
                            req->method, req->route);
}

/* The SDKs' egress path for sandboxes of origin "template" (the
 * OPEN-SANDBOX-ORIGIN answer header, which the broker never sends): 501;
 * every other sandbox's egress policy is the egress API under
 * /proxy/18080/policy. */
void h_osb_networkpolicy_not_implemented(struct request *req)
{
        reply_error(req, API_NOT_IMPLEMENTED,
                    "%s %s: not implemented: the network policy of template sandboxes is not served "
                    "(there are no templates here); a sandbox's egress policy is the egress API at "
                    "GET/PATCH/DELETE /v1/sandboxes/{id}/proxy/18080/policy",
                    req->method, req->route);
}

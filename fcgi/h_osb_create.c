/* h_osb_create: POST /v1/sandboxes of the OpenSandbox lifecycle API
 * (sandbox-lifecycle.yml of the OpenSandbox project), on the broker's slots.
 *
 * A create is a lease of its tenant (user LEASE_OSB_USER, which the lease API
 * cannot name; session = sandbox id) that carries the sandbox record made at
 * create time: it takes a slot like any acquire, or waits in the same Kafka
 * queue (Pending, reason QUEUED), and it expires at the sandbox's expiresAt
 * instead of by heartbeats.
 *
 * A create whose answer never reaches its client (the handler killed
 * between the record and the answer: the client reads a 502) must not leave
 * a sandbox nobody owns (docs/API.md, "Idempotent creates"):
 * - with an Idempotency-Key, the client's retry answers the same sandbox
 *   (the key is stored in the script that stores the record), and admits it
 *   when the first create died before asking for a slot;
 * - every create waits for its answer: the after hook marks it answered
 *   once the 202 is out (a replay's too); one that nobody got is removed
 *   OPENSANDBOX_UNANSWERED_S later by the supervisors' reaper, unless a
 *   request of its tenant names it first (h_osb_open). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "egress_store.h"
#include "h_opensandbox.h"
#include "json_input.h"
#include "lease.h"
#include "log.h"
#include "opensandbox.h"
#include "osb_store.h"
#include "routes.h"
#include "sandbox.h"
#include "snapshot_store.h"
#include "template_store.h"
#include "timeutil.h"
#include "volume.h"

/* What the after hook of the create answered on this thread does: mark the
 * sandbox answered (its 202 is out), then the work that needed the answer
 * first. The image.auth is kept in memory for the pull only and wiped by
 * it: never stored. */
enum after_work { AFTER_NONE, AFTER_PULL, AFTER_PREFETCH };

static __thread struct {
        char sid[33];
        enum after_work work;
        char image[256];
        char user[OSB_AUTH_USER_MAX], pass[OSB_AUTH_PASS_MAX];
} pending;

static void pending_keep(const struct osb_create *c, const char *sid, enum after_work work)
{
        snprintf(pending.sid, sizeof(pending.sid), "%s", sid);
        pending.work = work;
        if (work == AFTER_NONE)
                return;
        snprintf(pending.image, sizeof(pending.image), "%s", c->image);
        memcpy(pending.user, c->auth_user, sizeof(pending.user));
        memcpy(pending.pass, c->auth_pass, sizeof(pending.pass));
}

static void pending_wipe(void)
{
        explicit_bzero(&pending, sizeof(pending));
}

/* After the 202 of a create with image.auth that got a slot: pull its
 * image with the create's credentials (they are never stored, so no
 * supervisor could), then the supervisors' workers make the sandbox from
 * the image now on the host, as any other create. */
static void pull_after(struct request *req)
{
        char err[SANDBOX_ERR_MAX];
        struct image_auth auth = { pending.user, pending.pass };
        int r = sandbox_lease_pull_then_queue(req->w->redis, req->w->provider, req->w->cfg,
                                              req->after_arg, pending.sid, pending.image, &auth, err);

        if (r < 0 && r != -ECANCELED)
                log_err(LOG_KV({ "LEASE_ID", req->after_arg }, { "REQUEST_ID", req->request_id }),
                        "OpenSandbox create: sandbox failed: %s", err);
}

/* After the 202 of a queued create with image.auth: pull the image now,
 * while the credentials are in memory, so that the sandbox made when a
 * slot frees finds it on the host. */
static void prefetch_after(struct request *req)
{
        char err[PROVIDER_ERR_MAX] = "";
        struct image_auth auth = { pending.user, pending.pass };
        int r = sandbox_image_prefetch(req->w->provider, req->w->cfg, pending.image, &auth, err);

        if (r < 0)
                log_warn(LOG_KV({ "SANDBOX_ID", pending.sid }, { "REQUEST_ID", req->request_id }),
                         "OpenSandbox create: image pull ahead of the slot failed: %s", err);
}

/* The accept loop runs this once the response is complete (FCGX_Finish_r):
 * a 202 reached nginx, so the client has the sandbox's id. */
static void create_after(struct request *req)
{
        int r;

        if (req->status == 202 && (r = osb_store_answered(req->w->redis, pending.sid)) < 0)
                log_warn(LOG_KV({ "SANDBOX_ID", pending.sid }, { "REQUEST_ID", req->request_id }),
                         "OpenSandbox create: answered, but not marked so (%s): the sandbox is removed "
                         "after OPENSANDBOX_UNANSWERED_S unless a request names it",
                         strerror(-r));
        if (pending.work == AFTER_PULL)
                pull_after(req);
        else if (pending.work == AFTER_PREFETCH)
                prefetch_after(req);
        pending_wipe();
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

/* The create's image: snapshotId's (this tenant's, Ready), made by the
 * broker; else image.uri, which IMAGE_ALLOW must allow when it is not on
 * the host. Replies and returns -1 on error. */
static int create_image(struct request *req, const char *tenant, struct osb_create *c)
{
        char err[OSB_ERR_MAX], st[SNAPSHOT_STATE_MAX] = "";
        int r;

        if (!c->snapshot_id[0]) {
                if (sandbox_image_admissible(req->w->provider, req->w->cfg, c->image, err) != -EPERM)
                        return 0;
                reply_error(req, API_INVALID_REQUEST, "%s", err);
                return -1;
        }
        r = snapshot_store_image(req->w->redis, req->w->cfg, c->snapshot_id, tenant, c->image, st);
        if (r == -ENOENT)
                reply_error(req, API_NOT_FOUND, "no snapshot %s", c->snapshot_id);
        else if (r == -EBUSY)
                reply_error(req, API_CONFLICT, "snapshot %s is %s; sandboxes are made from Ready snapshots",
                            c->snapshot_id, st);
        else if (r < 0)
                reply_errno(req, r, "create");
        return r < 0 ? -1 : 0;
}

/* Admission of the stored record sid: the same slots and queue as lease
 * acquires (acquire.lua is idempotent per session: a replay that finds a
 * lease or a ticket makes no other). On failure the record is deleted with
 * its key (the client's retry is a new create) and -1 returned, answered. */
static int create_admit(struct request *req, const struct osb_create *c, const char *tenant,
                        const char *sid, bool warm, const char *key)
{
        struct lease_request lr = { .tenant = tenant, .user_id = LEASE_OSB_USER, .session_id = sid,
                                    .mode = "exclusive", .pool_id = "", .sandbox_id = sid,
                                    .caller_makes = warm || c->has_auth };
        struct lease_outcome out = { 0 };
        int r = lease_acquire(req->w->redis, req->w->cfg, &lr, &out);

        if (r < 0) {
                (void)osb_store_delete(req->w->redis, sid, tenant, key);
                reply_errno(req, r, "create");
                goto out;
        }
        if (out.kind == LEASE_QUEUED) {
                char msg[96];
                if (out.new_ticket && leases_queue_ticket(req, &lr, &out) < 0) {
                        (void)osb_store_delete(req->w->redis, sid, tenant, key); /* the 503 is answered */
                        r = -1;
                        goto out;
                }
                snprintf(msg, sizeof(msg), "waiting for a free slot (queue position %lld)", out.position);
                sandbox_transition(req->w->redis, sid, "Pending", "Pending", "QUEUED", msg, "");
                if (c->has_auth)
                        pending_keep(c, sid, AFTER_PREFETCH);
                request_audit(req, (struct audit_event){ .type = AUDIT_SANDBOX_CREATED,
                                                         .tenant = tenant, .sandbox_id = sid,
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
                } else if (c->has_auth) {
                        /* the pull credentials live only in this thread's
                         * memory: the image is pulled after the 202, then
                         * the workers make the sandbox */
                        pending_keep(c, sid, AFTER_PULL);
                }
                /* else the supervisors' provisioning workers make it (the
                 * intent stored by lease_acquire) */
                request_audit(req, (struct audit_event){ .type = AUDIT_SANDBOX_CREATED,
                                                         .tenant = tenant, .sandbox_id = sid,
                                                         .lease_id = req->after_arg,
                                                         .reason = "admitted: a slot was free" });
        } else {
                (void)osb_store_delete(req->w->redis, sid, tenant, key);
                reply_errno(req, -EPROTO, "create");
                r = -1;
        }
out:
        lease_outcome_clear(&out);
        return r < 0 ? -1 : 0;
}

/* Store the record (or find the key's); replies and returns -1 unless it
 * is to be answered (*ret: what the store did). */
static int create_store(struct request *req, const struct osb_store_new *nw, struct osb_store_outcome *ret)
{
        int r = osb_store_create(req->w->redis, req->w->cfg, nw, ret);

        if (r < 0) {
                reply_errno(req, r, "create");
                return -1;
        }
        switch (ret->kind) {
        case OSB_STORE_CREATED:
        case OSB_STORE_REPLAY:
                return 0;
        case OSB_STORE_LIMIT:
                reply_error(req, API_CONFLICT, "tenant %s already has %lld live sandboxes (the limit)",
                            nw->tenant, ret->n);
                return -1;
        case OSB_STORE_DISK:
                reply_error(req, API_INVALID_REQUEST, "resourceLimits." OSB_LIMIT_DISK ": at most %lldMi "
                            "for tenant %s", ret->n, nw->tenant);
                return -1;
        case OSB_STORE_KEY_MISMATCH:
                reply_error(req, API_IDEMPOTENCY_KEY_REUSED,
                            "Idempotency-Key %s was used for another create (sandbox %s) with a different "
                            "body; a new create needs a new key", nw->idem_key, ret->sid);
                return -1;
        case OSB_STORE_KEY_SPENT:
                reply_error(req, API_IDEMPOTENCY_KEY_SPENT,
                            "Idempotency-Key %s made sandbox %s, which is gone (deleted or expired, and "
                            "its record with it); a new create needs a new key", nw->idem_key, ret->sid);
                return -1;
        }
        reply_errno(req, -EPROTO, "create");
        return -1;
}

void h_osb_create(struct request *req)
{
        struct json_object *body = NULL;
        struct osb_create c;
        struct osb_store_outcome so = { 0 };
        struct osb_sandbox sb = { 0 };
        char err[OSB_ERR_MAX], sid[33], cpus[24], mem[24], pids[16], exp[24] = ""; /* timeout ms */
        char key[OSB_IDEMPOTENCY_KEY_MAX + 1], fp[OSB_FINGERPRINT_MAX] = "", hdr[192];
        char terr[TEMPLATE_ERR_MAX];
        struct json_object *merged = NULL; /* the create body of a templateId (owned by body then) */
        char *egress = NULL; /* normalized networkPolicy (egress_store.h) */
        char *volumes = NULL; /* the record's volumes (volume.h); NULL = none */
        const char *hval;
        bool committed = false; /* the sandbox exists: the volumes made are its own */
        struct osb o;
        int r;

        memset(&c, 0, sizeof(c));
        pending_wipe();
        if (h_osb_auth(req, &o) < 0)
                goto out;
        /* a bad key is refused before anything is read or made; two keys
         * are one too many (nginx 1.23+ joins them with ", ", which the
         * parse refuses; older ones pass both) */
        if (request_param_once(req, "HTTP_IDEMPOTENCY_KEY", &hval) < 0) {
                reply_error(req, API_INVALID_REQUEST, "Idempotency-Key: one header at most");
                goto out;
        }
        if (osb_idempotency_key_parse(hval, key, err) < 0) {
                reply_error(req, API_INVALID_REQUEST, "%s", err);
                goto out;
        }
        if (request_json_body(req, &body) < 0)
                goto out;
        /* a create from a template is this create, of the body the
         * template and the request make together (template.h) */
        r = template_store_expand(req->w->redis, o.tenant, body, &merged, terr);
        if (r == -EINVAL || r == -ENOENT) {
                reply_error(req, r == -EINVAL ? API_INVALID_REQUEST : API_NOT_FOUND,
                            r == -EINVAL ? "%s" : "no template %s", terr);
                goto out;
        }
        if (r < 0) {
                reply_errno(req, r, "create");
                goto out;
        }
        if (merged) {
                json_put(body);
                body = merged;
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
        if (create_image(req, o.tenant, &c) < 0)
                goto out;
        if ((key[0] && osb_create_fingerprint(body, fp) < 0) || timeutil_random_id(sid, sizeof(sid)) < 0) {
                reply_errno(req, -EIO, "create");
                goto out;
        }
        /* a replay undoes the volumes it made (volume_undo below): the
         * sandbox it answers has its own */
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
                                 "volumes", volumes ? volumes : "", "runtime", c.runtime,
                                 "extensions", c.extensions, "renewExtendMs", c.renew_extend_ms,
                                 "lifecycle", c.lifecycle ? c.lifecycle : "" };
        /* a member of the image's warm pool, taken by the same script that
         * stores the record: the sandbox then has the member's id */
        const struct osb_store_new nw = {
                .sid = sid, .tenant = o.tenant, .timeout_ms = exp,
                .pool_image = osb_create_pool(req->w->cfg, &c, volumes != NULL), .disk_mb = c.disk_mb,
                .idem_key = key, .fingerprint = fp, .fields = fields,
                .n = (int)(sizeof(fields) / sizeof(fields[0])),
        };
        if (create_store(req, &nw, &so) < 0)
                goto out;
        committed = so.kind == OSB_STORE_CREATED;
        /* a new record, or the key's whose create died before asking for a
         * slot, is admitted; any other replay is answered as it is now */
        if ((so.kind == OSB_STORE_CREATED || so.admit) &&
            create_admit(req, &c, o.tenant, so.sid, so.warm, key) < 0) {
                committed = false;
                goto out;
        }
        pending_keep(&c, so.sid, pending.work);
        req->after = create_after;
        r = osb_store_get(req->w->redis, req->w->cfg, so.sid, false, &sb);
        if (r == -ENOENT)
                r = -EPROTO; /* the record it just made or named: gone is a fault */
        if (r < 0) {
                reply_errno(req, r, "create");
                goto out;
        }
        if (so.kind == OSB_STORE_REPLAY) {
                log_info(LOG_KV({ "SANDBOX_ID", so.sid }, { "REQUEST_ID", req->request_id }),
                         "OpenSandbox create: Idempotency-Key replayed%s",
                         so.admit ? " (the first create stopped before admission: admitted now)" : "");
                snprintf(hdr, sizeof(hdr), "Location: /v1/sandboxes/%s\r\nIdempotent-Replayed: true", so.sid);
        } else {
                snprintf(hdr, sizeof(hdr), "Location: /v1/sandboxes/%s", so.sid);
        }
        reply_json_hdr(req, 202, hdr, sb.json);
out:
        if (volumes && !committed)
                volume_undo(req->w->provider, volumes);
        free(volumes);
        if (req->after != create_after)
                pending_wipe();
        osb_create_wipe(&c);
        free(egress);
        osb_sandbox_clear(&sb);
        json_put(body);
}

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
 *   request of its tenant names it first (h_osb_open).
 *
 * The handler parses and answers; the create itself is one use-case
 * (lib/sandbox/osb_create_run.h), whose outcome is mapped here, and whose
 * after-answer state lives in the request (request_scratch), never in a
 * thread-local. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox/egress_store.h"
#include "h_opensandbox.h"
#include "core/json_input.h"
#include "store/lease.h"
#include "core/log.h"
#include "sandbox/opensandbox.h"
#include "sandbox/osb_create_run.h"
#include "sandbox/osb_store.h"
#include "routes.h"
#include "sandbox/template_store.h"

/* The accept loop runs this once the response is complete (FCGX_Finish_r):
 * a 202 reached nginx, so the client has the sandbox's id. */
static void create_after(struct request *req)
{
        struct osb_create_pending *p = req->after_data;
        struct osb_create_after_outcome out;

        osb_create_after(req->w->redis, req->w->provider, req->w->cfg, p, req->status == 202, &out);
        if (out.answered_r < 0)
                log_warn(LOG_KV({ "SANDBOX_ID", p->sid }, { "REQUEST_ID", req->request_id }),
                         "OpenSandbox create: answered, but not marked so (%s): the sandbox is "
                         "removed after OPENSANDBOX_UNANSWERED_S unless a request names it",
                         strerror(-out.answered_r));
        if (out.work_r < 0 && p->work == OSB_AFTER_PULL && out.work_r != -ECANCELED)
                log_err(LOG_KV({ "LEASE_ID", p->lease_id }, { "REQUEST_ID", req->request_id }),
                        "OpenSandbox create: sandbox failed: %s", out.err);
        else if (out.work_r < 0 && p->work == OSB_AFTER_PREFETCH)
                log_warn(LOG_KV({ "SANDBOX_ID", p->sid }, { "REQUEST_ID", req->request_id }),
                         "OpenSandbox create: image pull ahead of the slot failed: %s", out.err);
        explicit_bzero(p, sizeof(*p));
}

/* The audit event and log lines of an admission (the outcome's, also when
 * the create failed after it). */
static void create_admitted(struct request *req, const char *tenant,
                            const struct osb_create_outcome *out)
{
        if (out->produce_r)
                log_warn(LOG_KV({ "TICKET_ID", out->ticket_id }, { "USER_ID", LEASE_OSB_USER },
                                { "SESSION_ID", out->store.sid }, { "REQUEST_ID", req->request_id }),
                         "ticket not queued: Kafka did not confirm it (%s)",
                         strerror(-out->produce_r));
        if (out->warm_r < 0)
                log_err(LOG_KV({ "LEASE_ID", out->lease_id }, { "REQUEST_ID", req->request_id }),
                        "OpenSandbox create: pooled sandbox failed: %s", out->warm_err);
        if (!out->admitted)
                return;
        if (out->admission == LEASE_QUEUED)
                request_audit(req, (struct audit_event){ .type = AUDIT_SANDBOX_CREATED,
                                                         .tenant = tenant,
                                                         .sandbox_id = out->store.sid,
                                                         .ticket_id = out->ticket_id,
                                                         .reason = out->queued_msg });
        else
                request_audit(req, (struct audit_event){ .type = AUDIT_SANDBOX_CREATED,
                                                         .tenant = tenant,
                                                         .sandbox_id = out->store.sid,
                                                         .lease_id = out->lease_id,
                                                         .reason = "admitted: a slot was free" });
}

/* A create refused by the use-case (nothing is left of it), as its API error. */
static void create_refused(struct request *req, const struct osb_create_input *in,
                           const struct osb_create_outcome *out)
{
        char msg[VOLUME_ERR_MAX + 64];
        const struct osb_store_outcome *so = &out->store;

        switch (out->kind) {
        case OSB_CREATE_IMAGE_REFUSED: reply_error(req, API_INVALID_REQUEST, "%s", out->err); break;
        case OSB_CREATE_NO_SNAPSHOT:
                reply_error(req, API_NOT_FOUND, "no snapshot %s", in->c->snapshot_id);
                break;
        case OSB_CREATE_SNAPSHOT_NOT_READY:
                reply_error(req, API_CONFLICT,
                            "snapshot %s is %s; sandboxes are made from Ready snapshots",
                            in->c->snapshot_id, out->snapshot_state);
                break;
        case OSB_CREATE_VOLUMES: /* volume.h's errors */
                switch (out->volume_r) {
                case -EINVAL:
                case -EPERM:
                case -EOPNOTSUPP:
                case -ENOENT: reply_error(req, API_INVALID_REQUEST, "%s", out->err); break;
                case -EDQUOT:
                case -EEXIST: reply_error(req, API_CONFLICT, "%s", out->err); break;
                case -ENOMEM: reply_errno(req, out->volume_r, "create: volumes"); break;
                default:
                        reply_error(req,
                                    provider_api_error(out->volume_r, "create: volumes", out->err,
                                                       msg, sizeof(msg)),
                                    "%s", msg);
                }
                break;
        case OSB_CREATE_STORE_REFUSED:
                if (so->kind == OSB_STORE_LIMIT)
                        reply_error(req, API_CONFLICT,
                                    "tenant %s already has %lld live sandboxes (the limit)",
                                    in->tenant, so->n);
                else if (so->kind == OSB_STORE_DISK)
                        reply_error(req, API_INVALID_REQUEST,
                                    "resourceLimits." OSB_LIMIT_DISK ": at most %lldMi "
                                    "for tenant %s",
                                    so->n, in->tenant);
                else if (so->kind == OSB_STORE_KEY_MISMATCH)
                        reply_error(req, API_IDEMPOTENCY_KEY_REUSED,
                                    "Idempotency-Key %s was used for another create (sandbox %s) "
                                    "with a different "
                                    "body; a new create needs a new key",
                                    in->idem_key, so->sid);
                else if (so->kind == OSB_STORE_KEY_SPENT)
                        reply_error(req, API_IDEMPOTENCY_KEY_SPENT,
                                    "Idempotency-Key %s made sandbox %s, which is gone (deleted or "
                                    "expired, and "
                                    "its record with it); a new create needs a new key",
                                    in->idem_key, so->sid);
                else
                        reply_errno(req, -EPROTO, "create");
                break;
        case OSB_CREATE_QUEUE_UNAVAILABLE:
                reply_error(
                        req, API_UNAVAILABLE,
                        "the queue is unavailable (Kafka did not confirm the ticket); retry later");
                break;
        default: reply_errno(req, -EPROTO, "create");
        }
}

void h_osb_create(struct request *req)
{
        struct osb_create_pending *pending = request_scratch(req, sizeof(*pending));
        struct json_object *body = NULL;
        struct osb_create c;
        struct osb_create_outcome out = { 0 };
        char err[OSB_ERR_MAX], key[OSB_IDEMPOTENCY_KEY_MAX + 1], hdr[192];
        char terr[TEMPLATE_ERR_MAX];
        struct json_object *merged = NULL; /* the create body of a templateId (owned by body then) */
        char *egress = NULL; /* normalized networkPolicy (egress_store.h) */
        const char *hval;
        struct osb o;
        int r;

        memset(&c, 0, sizeof(c));
        if (!pending)
                return;
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
        const struct osb_create_input in = {
                .tenant = o.tenant, .c = &c, .body = body, .idem_key = key, .egress = egress
        };
        r = osb_create_run(req->w->redis, req->w->provider, req->w->kafka, req->w->cfg, &in,
                           pending, &out);
        create_admitted(req, o.tenant, &out);
        if (r < 0) {
                reply_errno(req, r, "create");
                goto out;
        }
        if (out.kind != OSB_CREATE_ACCEPTED) {
                create_refused(req, &in, &out);
                goto out;
        }
        req->after = create_after;
        req->after_data = pending;
        if (out.store.kind == OSB_STORE_REPLAY) {
                log_info(LOG_KV({ "SANDBOX_ID", out.store.sid }, { "REQUEST_ID", req->request_id }),
                         "OpenSandbox create: Idempotency-Key replayed%s",
                         out.store.admit
                                 ? " (the first create stopped before admission: admitted now)"
                                 : "");
                snprintf(hdr, sizeof(hdr),
                         "Location: /v1/sandboxes/%s\r\nIdempotent-Replayed: true", out.store.sid);
        } else {
                snprintf(hdr, sizeof(hdr), "Location: /v1/sandboxes/%s", out.store.sid);
        }
        reply_json_hdr(req, 202, hdr, out.sb.json);
out:
        if (req->after != create_after)
                explicit_bzero(pending, sizeof(*pending));
        osb_create_wipe(&c);
        free(egress);
        osb_create_outcome_clear(&out);
        json_put(body);
}

/* h_leases: the lease API (docs/API.md): acquire, poll, heartbeat, release.
 * Handlers validate everything before the first Redis call, so bad input
 * changes nothing; each state change is logged once with its ids (for a
 * grant on acquire and a release, the audit event's line is that one). Every
 * name is inside the caller's tenant (req->auth, checked by the route
 * table): another tenant's leases and tickets are 404, like unknown ones. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox/admission.h"
#include "core/json_input.h"
#include "store/lease.h"
#include "core/log.h"
#include "routes.h"
#include "sandbox/sandbox.h"
#include "core/timeutil.h"

/* Read a required or optional id field; replies 400 and returns -1 on error. */
static int body_id(struct request *req, struct json_object *body, const char *name, int required,
                   const char **ret)
{
        char err[256];

        if (json_input_get_id(body, name, required, ret, err, sizeof(err)) < 0) {
                reply_error(req, API_INVALID_REQUEST, "%s", err);
                return -1;
        }
        return 0;
}

static void reply_lease(struct request *req, int status, const char *state, struct json_object *lease)
{
        struct json_object *o = json_object_new_object();

        json_object_object_add(o, "status", json_object_new_string(state));
        json_object_object_add(o, "lease", json_object_get(lease));
        reply_json(req, status, o);
        json_put(o);
}

/* What a waiting client is told when no supervisor runs (lease_supervisors:
 * nobody listens for wake-ups), so it can tell its user why it waits: a
 * provisioning lease's sandbox, or a queued ticket's grant, waits for one. */
#define NO_SUPERVISOR_PROVISIONING \
        "no supervisor is running: the sandbox is made when one starts; poll the ticket"
#define NO_SUPERVISOR_QUEUED \
        "no supervisor is running: the ticket is granted when one starts; poll the ticket"

/* message when no supervisor runs, else NULL (also when Redis cannot say:
 * the answer goes out without it). */
static const char *no_supervisor(struct request *req, const char *message)
{
        return lease_supervisors(req->w->redis, req->w->cfg) == 0 ? message : NULL;
}

static void reply_queued(struct request *req, const struct lease_outcome *out)
{
        struct json_object *o = json_object_new_object();
        const char *msg = no_supervisor(req, NO_SUPERVISOR_QUEUED);

        json_object_object_add(o, "status", json_object_new_string("queued"));
        json_object_object_add(o, "ticketId", json_object_new_string(out->ticket_id));
        json_object_object_add(o, "position", json_object_new_int64(out->position));
        if (msg)
                json_object_object_add(o, "message", json_object_new_string(msg));
        reply_json(req, 202, o);
        json_put(o);
}

static const char *lease_field(struct json_object *lease, const char *name)
{
        struct json_object *v;
        return json_object_object_get_ex(lease, name, &v) ? json_object_get_string(v) : NULL;
}

/* A new ticket the queue did not confirm (admission.h): logged; a 503
 * when it was taken back (the acquire did not happen). Returns -1 when
 * answered so, 0 when the ticket stands (queued, or already served). */
static int queue_failure(struct request *req, const struct lease_request *lr,
                         const struct admission_outcome *ad)
{
        if (ad->queue != ADMISSION_QUEUE_SERVED && ad->queue != ADMISSION_QUEUE_UNAVAILABLE)
                return 0;
        log_warn(LOG_KV({ "TICKET_ID", ad->lease.ticket_id }, { "USER_ID", lr->user_id },
                        { "SESSION_ID", lr->session_id }, { "REQUEST_ID", req->request_id }),
                 "ticket not queued: Kafka did not confirm it (%s)", strerror(-ad->produce_r));
        if (ad->queue == ADMISSION_QUEUE_SERVED)
                return 0; /* a supervisor already served it: the client can poll it */
        reply_error(req, API_UNAVAILABLE,
                    "the queue is unavailable (Kafka did not confirm the ticket); retry later");
        return -1;
}

/* 202: the lease holds its slot, its sandbox is not made yet; the client
 * polls the ticket (or repeats the acquire, which waits again). */
static void reply_provisioning(struct request *req, const struct lease_outcome *out,
                               const char *message)
{
        struct json_object *o = json_object_new_object();

        json_object_object_add(o, "status", json_object_new_string("provisioning"));
        if (out->ticket_id[0])
                json_object_object_add(o, "ticketId", json_object_new_string(out->ticket_id));
        json_object_object_add(o, "lease", json_object_get(out->lease));
        if (message)
                json_object_object_add(o, "message", json_object_new_string(message));
        reply_json(req, 202, o);
        json_put(o);
}

/* A granted lease whose sandbox the supervisors' provisioning workers make
 * (docs/ARCHITECTURE.md §3.1): wait for it, bounded by
 * ACQUIRE_WAIT_MS, well inside nginx's read timeout. Returns SANDBOX_READY
 * (out->lease replaced by the ready lease), SANDBOX_PENDING, SANDBOX_NOBODY
 * (no supervisor listens: answered at once rather than after the wait), or
 * -1 after replying an error (the sandbox failed: its slot is freed). */
enum { SANDBOX_READY, SANDBOX_PENDING, SANDBOX_NOBODY };

static int wait_sandbox(struct request *req, const struct lease_request *lr,
                        struct lease_outcome *out)
{
        struct lease_outcome w = { 0 };
        int r;

        if (!out->ticket_id[0])
                return SANDBOX_PENDING; /* a lease stored before intents: repeat the acquire */
        r = lease_supervisors(req->w->redis, req->w->cfg);
        if (r == 0)
                return SANDBOX_NOBODY;
        /* the wait holds this thread: a tenant waits in at most its share of
         * them (LEASES_TENANT_SHARE_PCT), beyond which its acquires answer
         * provisioning at once and its clients poll, so that its acquires
         * never keep another tenant's heartbeats waiting */
        if (request_share_try(req, req->auth.tenant) < 0) {
                log_info(LOG_KV({ "TICKET_ID", out->ticket_id }, { "REQUEST_ID", req->request_id }),
                         "tenant %s waits for sandboxes in its share of the leases API's threads: "
                         "answered provisioning at once",
                         req->auth.tenant);
                return SANDBOX_PENDING;
        }
        r = lease_wait(req->w->redis, req->w->cfg, req->auth.tenant, out->ticket_id,
                       req->w->cfg->acquire_wait_ms, &w);
        if (r < 0) {
                reply_errno(req, r, "acquire");
                return -1;
        }
        switch (w.kind) {
        case LEASE_GRANTED:
                json_put(out->lease);
                out->lease = w.lease;
                w.lease = NULL;
                out->provisioning = false;
                r = SANDBOX_READY;
                break;
        case LEASE_PROVISIONING:
                r = SANDBOX_PENDING;
                break;
        case LEASE_FAILED:
                log_err(LOG_KV({ "LEASE_ID", lease_field(out->lease, "leaseId") },
                               { "TICKET_ID", out->ticket_id }, { "USER_ID", lr->user_id },
                               { "SESSION_ID", lr->session_id }, { "REQUEST_ID", req->request_id }),
                        "sandbox for a granted lease failed; lease released: %s", w.message);
                reply_error(req, API_SANDBOX_FAILED, "%s", w.message);
                r = -1;
                break;
        default:
                reply_error(req, API_LEASE_NOT_FOUND, "the lease was released while its sandbox was being made");
                r = -1;
        }
        lease_outcome_clear(&w);
        return r;
}

void h_leases_acquire(struct request *req)
{
        struct json_object *body = NULL;
        struct lease_request lr = { 0 };
        struct admission_outcome ad = { 0 };
        struct lease_outcome *lo = &ad.lease;
        char err[256], note[128];
        int r, status;

        if (request_json_body(req, &body) < 0)
                return;
        if (body_id(req, body, "userId", 1, &lr.user_id) < 0 ||
            body_id(req, body, "sessionId", 1, &lr.session_id) < 0 ||
            body_id(req, body, "poolId", 0, &lr.pool_id) < 0)
                goto out;
        if (json_input_get_enum(body, "mode", lease_modes, &lr.mode, err, sizeof(err)) < 0) {
                reply_error(req, API_INVALID_REQUEST, "%s", err);
                goto out;
        }
        if (!lr.mode)
                lr.mode = lease_modes[0];
        if (strcmp(lr.mode, "multi_user_shared") == 0) {
                if (!lr.pool_id)
                        lr.pool_id = "default";
        } else if (lr.pool_id) {
                reply_error(req, API_INVALID_REQUEST, "poolId is only valid with mode multi_user_shared");
                goto out;
        } else {
                lr.pool_id = "";
        }

        lr.tenant = req->auth.tenant;
        r = admission_acquire(req->w->redis, req->w->kafka, req->w->cfg, &lr, &ad);
        if (r < 0) {
                reply_errno(req, r, "acquire");
                goto out;
        }
        switch (lo->kind) {
        case LEASE_GRANTED:
                status = lo->provisioning ? wait_sandbox(req, &lr, lo) : SANDBOX_READY;
                if (status < 0)
                        break;
                /* the grant's log line is the audit event's (same ids): one
                 * write per acquire, not two */
                snprintf(note, sizeof(note), "lease granted on acquire (mode %s)%s", lr.mode,
                         status == SANDBOX_READY ? "" : ", its sandbox still being made");
                request_audit(req, (struct audit_event){
                                           .type = AUDIT_LEASE_ACQUIRED,
                                           .user_id = lr.user_id,
                                           .session_id = lr.session_id,
                                           .lease_id = lease_field(lo->lease, "leaseId"),
                                           .sandbox_id = lease_field(lo->lease, "sandboxId"),
                                           .note = note });
                if (status == SANDBOX_READY)
                        reply_lease(req, 200, "granted", lo->lease);
                else
                        reply_provisioning(req, lo,
                                           status == SANDBOX_NOBODY ? NO_SUPERVISOR_PROVISIONING
                                                                    : NULL);
                break;
        case LEASE_QUEUED:
                if (queue_failure(req, &lr, &ad) < 0)
                        break;
                if (lo->new_ticket) {
                        log_info(LOG_KV({ "TICKET_ID", lo->ticket_id }, { "USER_ID", lr.user_id },
                                        { "SESSION_ID", lr.session_id },
                                        { "REQUEST_ID", req->request_id }),
                                 "no free slot: ticket queued at position %lld", lo->position);
                        request_audit(req, (struct audit_event){ .type = AUDIT_LEASE_QUEUED,
                                                                 .user_id = lr.user_id,
                                                                 .session_id = lr.session_id,
                                                                 .ticket_id = lo->ticket_id });
                }
                reply_queued(req, lo);
                break;
        case LEASE_CONFLICT:
                reply_error(
                        req, API_MODE_CONFLICT,
                        "session %s of user %s already has a %s lease or ticket; release it first",
                        lr.session_id, lr.user_id, lo->conflict_mode);
                break;
        default:
                reply_errno(req, -EPROTO, "acquire");
        }
out:
        admission_outcome_clear(&ad);
        json_put(body);
}

void h_leases_poll(struct request *req)
{
        struct lease_outcome out = { 0 };
        struct json_object *o;
        char id[64];
        int r = request_query_param(req, "ticketId", id, sizeof(id));

        if (r == -ENOENT) {
                reply_error(req, API_INVALID_REQUEST, "query parameter ticketId is required");
                return;
        }
        if (r < 0 || !timeutil_id_valid(id)) {
                reply_error(req, API_INVALID_REQUEST, "ticketId must be 32 lowercase hex characters");
                return;
        }
        r = lease_poll(req->w->redis, req->w->cfg, req->auth.tenant, id, &out);
        if (r < 0) {
                reply_errno(req, r, "poll");
                return;
        }
        if (out.kind == LEASE_NOT_FOUND) {
                reply_error(req, API_TICKET_NOT_FOUND, "no ticket %s", id);
                goto out;
        }
        o = json_object_new_object();
        json_object_object_add(o, "ticketId", json_object_new_string(id));
        if (out.kind == LEASE_QUEUED) {
                const char *msg = no_supervisor(req, NO_SUPERVISOR_QUEUED);

                json_object_object_add(o, "status", json_object_new_string("queued"));
                json_object_object_add(o, "position", json_object_new_int64(out.position));
                if (msg)
                        json_object_object_add(o, "message", json_object_new_string(msg));
        } else if (out.kind == LEASE_GRANTED) {
                json_object_object_add(o, "status", json_object_new_string("granted"));
                json_object_object_add(o, "lease", json_object_get(out.lease));
        } else if (out.kind == LEASE_PROVISIONING) {
                const char *msg = no_supervisor(req, NO_SUPERVISOR_PROVISIONING);

                json_object_object_add(o, "status", json_object_new_string("provisioning"));
                if (msg)
                        json_object_object_add(o, "message", json_object_new_string(msg));
        } else if (out.kind == LEASE_FAILED) {
                json_object_object_add(o, "status", json_object_new_string("failed"));
                json_object_object_add(o, "message", json_object_new_string(out.message));
        } else {
                json_object_object_add(o, "status", json_object_new_string("expired"));
        }
        reply_json(req, 200, o);
        json_put(o);
out:
        lease_outcome_clear(&out);
}

void h_leases_heartbeat(struct request *req)
{
        struct json_object *body = NULL, *v;
        struct lease_outcome out = { 0 };
        const char *lease_id = NULL, *user = NULL, *session = NULL;
        int r;

        if (request_json_body(req, &body) < 0)
                return;
        if (json_object_object_get_ex(body, "leaseId", &v)) {
                lease_id = json_object_get_string(v);
                if (!json_object_is_type(v, json_type_string) || !timeutil_id_valid(lease_id)) {
                        reply_error(req, API_INVALID_REQUEST, "leaseId must be 32 lowercase hex characters");
                        goto out;
                }
        } else if (body_id(req, body, "userId", 1, &user) < 0 ||
                   body_id(req, body, "sessionId", 1, &session) < 0) {
                goto out;
        }
        r = lease_heartbeat(req->w->redis, req->w->cfg, req->auth.tenant, lease_id, user, session,
                            &out);
        if (r < 0) {
                reply_errno(req, r, "heartbeat");
                goto out;
        }
        if (out.kind == LEASE_LOST) {
                log_info(LOG_KV({ "LEASE_ID", out.lease_id }, { "SANDBOX_ID", out.sandbox_id },
                                { "REQUEST_ID", req->request_id }),
                         "heartbeat of a lease whose sandbox was lost (%s): the lease has ended",
                         out.reason);
                reply_error(req, API_SANDBOX_LOST,
                            "lease %s has ended: its sandbox %s was lost (%s: %s); its slot is freed "
                            "and the sandbox removed, acquire again for a new sandbox",
                            out.lease_id, out.sandbox_id, out.reason, out.message);
                goto out;
        }
        if (out.kind != LEASE_GRANTED) {
                reply_error(req, API_LEASE_NOT_FOUND, "no such lease (released or expired)");
                goto out;
        }
        log_debug(LOG_KV({ "LEASE_ID", lease_field(out.lease, "leaseId") },
                         { "REQUEST_ID", req->request_id }), "lease renewed");
        reply_lease(req, 200, "active", out.lease);
out:
        lease_outcome_clear(&out);
        json_put(body);
}

void h_leases_release(struct request *req)
{
        struct json_object *body = NULL, *o;
        struct lease_outcome out = { 0 };
        const char *user, *session, *reason;
        char err[256], note[96];
        int r;

        if (request_json_body(req, &body) < 0)
                return;
        if (body_id(req, body, "userId", 1, &user) < 0 ||
            body_id(req, body, "sessionId", 1, &session) < 0)
                goto out;
        if (json_input_get_enum(body, "reason", lease_release_reasons, &reason, err, sizeof(err)) < 0) {
                reply_error(req, API_INVALID_REQUEST, "%s", err);
                goto out;
        }
        if (!reason)
                reason = lease_release_reasons[0];
        r = lease_release(req->w->redis, req->w->cfg, req->auth.tenant, user, session, reason, &out);
        if (r < 0) {
                reply_errno(req, r, "release");
                goto out;
        }
        if (out.kind != LEASE_RELEASED) {
                reply_error(req, API_LEASE_NOT_FOUND, "user %s holds no lease for session %s", user, session);
                goto out;
        }
        /* one log line: the audit event's, carrying the handler's words */
        snprintf(note, sizeof(note), "lease released (reason %s%s)", reason,
                 out.slot_freed ? ", slot freed" : "");
        request_audit(req, (struct audit_event){ .type = AUDIT_LEASE_RELEASED, .user_id = user,
                                                 .session_id = session, .lease_id = out.lease_id,
                                                 .reason = reason, .note = note });
        o = json_object_new_object();
        json_object_object_add(o, "status", json_object_new_string("released"));
        json_object_object_add(o, "leaseId", json_object_new_string(out.lease_id));
        json_object_object_add(o, "reason", json_object_new_string(reason));
        reply_json(req, 200, o);
        json_put(o);
out:
        lease_outcome_clear(&out);
        json_put(body);
}

/* audit: the lifecycle events of leases, tickets and sandboxes, for
 * operators who must tell one tenant's story.
 *
 * Each event is written twice with the same fields: as one JSON object to
 * the Kafka events topic (KAFKA_EVENTS_TOPIC, keyed by tenant so that a
 * tenant's events stay in order on one partition), and as one journald
 * entry at info level (fields TENANT, USER_ID, SESSION_ID, LEASE_ID,
 * SANDBOX_ID, TICKET_ID, REQUEST_ID, REASON, EVENT; MESSAGE "audit: <type>",
 * or "<note>; audit: <type>" when the caller's own log line rides along). docs/OPERATIONS.md,
 * "Audit events", shows how to read both.
 *
 * The Kafka copy is best effort: audit_emit() never blocks and never fails;
 * an event Kafka cannot take is counted in broker_audit_dropped_total and
 * still reaches journald. Events are sent in batches (KAFKA_EVENTS_LINGER_MS):
 * a process that dies without flushing (crash, SIGKILL) loses at most that
 * window's events and those not yet acknowledged from Kafka, never their
 * journald copies, which are written before the Kafka produce. The JSON object:
 *   {"type":"lease.granted","time":"2026-01-02T03:04:05.678Z","tenant":"acme",
 *    "userId":"alice","sessionId":"s1","leaseId":"...","ticketId":"...",
 *    "requestId":"...","sandboxId":"...","reason":"..."}
 * with absent (NULL or "") fields left out; "type" and "time" are always
 * there. */
#pragma once
#include <stddef.h>
#include <stdint.h>

struct kafka_producer;

/* Event types (the "type" field and EVENT=). */
#define AUDIT_LEASE_ACQUIRED   "lease.acquired"   /* granted on acquire, no queue */
#define AUDIT_LEASE_QUEUED     "lease.queued"     /* no slot: a ticket was queued */
#define AUDIT_LEASE_GRANTED    "lease.granted"    /* a queued ticket got its lease (supervisor) */
#define AUDIT_LEASE_RELEASED   "lease.released"   /* released by its holder */
#define AUDIT_LEASE_EXPIRED    "lease.expired"    /* reaped: no heartbeat within LEASE_TTL_MS (supervisor) */
#define AUDIT_TICKET_EXPIRED   "ticket.expired"   /* nobody polled within TICKET_TTL_MS (supervisor) */
#define AUDIT_SANDBOX_CREATED  "sandbox.created"
#define AUDIT_SANDBOX_DELETED  "sandbox.deleted"
#define AUDIT_SANDBOX_PAUSED   "sandbox.paused"
#define AUDIT_SANDBOX_RESUMED  "sandbox.resumed"
#define AUDIT_SANDBOX_EXPIRED  "sandbox.expired"  /* removed after its lease or parking expired (supervisor) */
#define AUDIT_SANDBOX_TOKEN_ROTATED "sandbox.token_rotated" /* its data-plane tokens replaced */
#define AUDIT_AUTH_DENIED      "auth.denied"      /* a request's API key or access token was refused */

/* The longest tenant audit_split_user() writes, with its NUL. */
#define AUDIT_TENANT_MAX 130

/* One event. Every field but type may be NULL (or "") for "absent". The
 * strings are only read during audit_emit(). */
struct audit_event {
        const char *type;       /* one of AUDIT_*; required */
        const char *tenant;
        const char *user_id;    /* the user within the tenant (not "tenant/user") */
        const char *session_id;
        const char *lease_id;
        const char *sandbox_id;
        const char *ticket_id;
        const char *request_id; /* X-Request-ID of the request that caused it */
        const char *reason;     /* free text or a reason code, e.g. LEASE_EXPIRED */
        /* What the caller would have logged about the same change: the
         * journald entry's MESSAGE is then "<note>; audit: <type>" (one
         * line per request where there were two), else "audit: <type>".
         * Never part of the Kafka copy. */
        const char *note;
};

/* Log ev to journald and queue it for Kafka on p (NULL: log only). Safe
 * from any thread; never blocks on I/O, never fails visibly (a lost Kafka
 * copy is counted, see above). An event without a type is ignored. */
void audit_emit(struct kafka_producer *p, const struct audit_event *ev);

/* The JSON text of ev with time_ms (ms since the epoch) as "time": what
 * audit_emit() sends. *ret is malloc'd, NUL-terminated, owned by the caller.
 * Returns 0, -EINVAL (no type) or -ENOMEM. */
int audit_event_json(const struct audit_event *ev, int64_t time_ms, char **ret);

/* Split a scoped user id "tenant/user" at its first '/': the tenant is
 * copied into tenant (size tenantsz) and *ret_user points into scoped just
 * after the '/'. Without a '/' (an unscoped id), tenant is "" and *ret_user
 * is scoped itself; scoped NULL gives "" and NULL. Returns 0, or
 * -ENAMETOOLONG when the tenant does not fit (then tenant is "" and
 * *ret_user is scoped, so the event still names the whole id). */
int audit_split_user(const char *scoped, char *tenant, size_t tenantsz, const char **ret_user);

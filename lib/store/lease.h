/* lease: the lease and ticket operations, each one atomic Redis script
 * (lib/store/lua/), and the mapping of script replies to API objects.
 *
 * Errors of every function: -EIO (Redis unreachable or timed out: 503),
 * -EPROTO (unexpected script reply or script error: 500), -ENOMEM. */
#pragma once
#include <stdbool.h>
#include <stdint.h>
#include <json-c/json.h>

#include "core/config.h"
#include "store/redis_conn.h"

/* NULL-terminated list of the lease modes; the first is the default. */
extern const char *const lease_modes[];
/* NULL-terminated list of release reasons; the first is the default. */
extern const char *const lease_release_reasons[];

/* The user of the admission lease of an OpenSandbox create: a name that
 * the lease API cannot spell (ids have no '*'), so such leases are never
 * reached through it. */
#define LEASE_OSB_USER "*osb"
#define LEASE_SCOPED_MAX 272 /* "<tenant>/<name>" with its NUL */

/* Every name below is inside req->tenant: Redis keeps users, sessions,
 * pools, slots and tickets as "<tenant>/<name>" (lib/store/lua/common.lua), so
 * the same userId in two tenants are two users. */
struct lease_request {
        const char *tenant;
        const char *user_id;
        const char *session_id;
        const char *mode;       /* one of lease_modes */
        const char *pool_id;    /* "" unless mode is multi_user_shared */
        const char *sandbox_id; /* NULL, or the OpenSandbox record the lease is for */
        /* a granted lease's sandbox is made by the caller, not the
         * supervisors' workers (an OpenSandbox create with pull credentials
         * held in memory, or a warm pool member) */
        bool caller_makes;
};

enum lease_outcome_kind {
        LEASE_GRANTED,  /* lease set; provisioning and ticket_id from its hash */
        LEASE_QUEUED,   /* ticket_id, position, new_ticket set */
        LEASE_CONFLICT, /* conflict_mode set */
        LEASE_NOT_FOUND,
        LEASE_EXPIRED,
        LEASE_RELEASED,     /* lease_id, slot_freed set */
        LEASE_PROVISIONING, /* granted, its sandbox is being made */
        LEASE_FAILED,       /* message set */
        /* the lease ended because its sandbox was lost (its container died
         * or was removed behind the broker's back): lease_id, sandbox_id,
         * reason (the record's, e.g. ENTRYPOINT_EXITED, OOM_KILLED) and
         * message set */
        LEASE_LOST,
};

struct lease_outcome {
        enum lease_outcome_kind kind;
        struct json_object *lease; /* owned */
        char ticket_id[33];
        long long position;
        bool new_ticket;
        char lease_id[33];
        bool slot_freed;
        char conflict_mode[32];
        char message[256];
        bool provisioning;   /* GRANTED, its sandbox not made yet */
        char sandbox_id[65]; /* LOST */
        char reason[48];     /* LOST */
};

/* Release what *o owns and zero it. */
void lease_outcome_clear(struct lease_outcome *o);

/* Grant, queue (new or existing ticket) or report a mode conflict. A
 * session whose lease's sandbox was lost gets a new lease (or a ticket),
 * never the lost one (its leases end as lease_heartbeat's LOST). A new
 * ticket is in Redis but not yet in Kafka: the caller produces it and calls
 * lease_ticket_cancel() if that fails. A new lease with a provider is
 * GRANTED with provisioning set and ticket_id naming an already granted
 * ticket: its intent is stored for the supervisors' provisioning workers
 * (nothing here makes a sandbox); lease_wait() waits for it. */
int lease_acquire(struct redis_conn *c, const struct broker_config *cfg,
                  const struct lease_request *req, struct lease_outcome *ret);

/* Ticket state: QUEUED (position in its tenant's line), PROVISIONING,
 * GRANTED (lease), FAILED (message), EXPIRED or NOT_FOUND (also a ticket of
 * another tenant or of an OpenSandbox create). */
int lease_poll(struct redis_conn *c, const struct broker_config *cfg, const char *tenant,
               const char *ticket_id, struct lease_outcome *ret);

/* Wait up to wait_ms for the lease of a granted ticket to leave
 * 'provisioning': *ret as lease_poll() gives it (GRANTED when ready, FAILED,
 * EXPIRED when it was released meanwhile), still PROVISIONING at the
 * deadline. Sleeps on the ticket's done list (BLPOP, in steps shorter than
 * REDIS_TIMEOUT_MS), so it answers as soon as a worker finishes. */
int lease_wait(struct redis_conn *c, const struct broker_config *cfg, const char *tenant,
               const char *ticket_id, int wait_ms, struct lease_outcome *ret);

/* How many supervisors listen on the wake channel (PUBSUB NUMSUB): 0 means
 * nobody takes provisioning intents now. Returns the count or a negative
 * errno. */
int lease_supervisors(struct redis_conn *c, const struct broker_config *cfg);

/* Renew a lease of tenant by id (lease_id non-NULL) or by (user, session):
 * GRANTED with the renewed lease, LOST (the lease's sandbox was lost: the
 * lease has ended, with every lease of that sandbox, and its slot is freed;
 * also for LOST_KEEP_S, an hour, after such an end), or NOT_FOUND (also a
 * lease of another tenant or the admission of an OpenSandbox create). */
int lease_heartbeat(struct redis_conn *c, const struct broker_config *cfg, const char *tenant,
                    const char *lease_id, const char *user_id, const char *session_id,
                    struct lease_outcome *ret);

/* Release the lease of (tenant, user, session): RELEASED or NOT_FOUND.
 * reason is one of lease_release_reasons: "idle" keeps the sandbox per
 * IDLE_POLICY, "deleted" removes it. */
int lease_release(struct redis_conn *c, const struct broker_config *cfg, const char *tenant,
                  const char *user_id, const char *session_id, const char *reason,
                  struct lease_outcome *ret);

/* "<tenant>/<name>" into out (LEASE_SCOPED_MAX). Returns 0 or -E2BIG. */
int lease_scope(const char *tenant, const char *name, char *out);

/* The tenant part of a scoped name into tenant (size bytes), and a pointer
 * to the name inside scoped; an unscoped name has tenant "". */
const char *lease_unscope(const char *scoped, char *tenant, size_t size);

/* Mark a provisioning lease usable: GRANTED with the lease, or NOT_FOUND. */
int lease_activate(struct redis_conn *c, const char *lease_id, struct lease_outcome *ret);

/* Release a lease whose sandbox could not be made (the sandbox is removed)
 * and mark its ticket failed with message. */
int lease_fail(struct redis_conn *c, const char *lease_id, const char *message);

/* Take back a queued ticket whose Kafka produce failed. Returns 0 when it
 * was removed, 1 when it had already left the queue (granted or expired by a
 * supervisor meanwhile: the client should poll it as usual). */
int lease_ticket_cancel(struct redis_conn *c, const char *ticket_id);

/* A ticket's createdAt and grantedAt (epoch ms) into *ret_created and
 * *ret_granted (the grant wait the supervisor observes). Returns 0, -ENOENT
 * when the ticket or either field is missing, or a negative errno (Redis). */
int lease_ticket_times(struct redis_conn *c, const struct broker_config *cfg, const char *ticket_id,
                       int64_t *ret_created, int64_t *ret_granted);

/* {"capacity", "activeSlots", "activeLeases", "queueDepth", "provider", "modes"}.
 * *ret is a new object owned by the caller. */
int lease_status(struct redis_conn *c, const struct broker_config *cfg, struct json_object **ret);

/* One tenant's share: {"name", "activeSlots", "queued", "maxSlots",
 * "maxSandboxes"} with the caps in force. *ret is owned by the caller. */
int lease_tenant_status(struct redis_conn *c, const struct broker_config *cfg, const char *tenant,
                        struct json_object **ret);

/* The Kafka message of a queued ticket (JSON text, caller frees). */
int lease_ticket_message(const struct lease_request *req, const char *ticket_id, char **ret);

/* Read the ticket id of a Kafka ticket message into buf (33 bytes).
 * Returns 0 or -EINVAL. */
int lease_ticket_message_id(const char *payload, size_t len, char *buf);

struct lease_grant_hooks {
        void (*granted)(void *ud, const char *ticket_id, const char *lease_id, const char *user_id,
                        const char *session_id);
        void (*expired)(void *ud, const char *ticket_id);
        void (*reaped)(void *ud, const char *lease_id, const char *user_id, const char *session_id);
        void *ud;
};

/* The supervisor's grant step: grants queued tickets in order while slots
 * allow. When target is non-empty, its state afterwards ("queued", "granted",
 * "expired" or "gone") is written to ret_state (16 bytes). */
int lease_grant_step(struct redis_conn *c, const struct broker_config *cfg, const char *target,
                     const struct lease_grant_hooks *hooks, char *ret_state);

/* Release expired leases and expire abandoned tickets (at most limit each).
 * A lease still 'provisioning' is not expired before provision_max_ms
 * (its holder has not had it to heartbeat yet). *ret_freed gets the number
 * of slots freed. */
int lease_reap(struct redis_conn *c, const struct broker_config *cfg, int limit,
               int provision_max_ms, const struct lease_grant_hooks *hooks, int *ret_freed);

/* Called once for each lease id an operation below answers (a string of
 * its reply; anything else in it is skipped). waited_ms: how long its
 * intent waited (lease_intents_take), 0 when the reply says nothing. */
typedef void (*lease_id_fn)(void *ud, const char *lease_id, int64_t waited_ms);

/* Leases left 'provisioning' for more than older_ms whose sandbox nobody is
 * making (its lock is free): up to limit ids, each handed to each(ud, ...).
 * 0, or a negative errno (-EPROTO: a reply that is no array). */
int lease_stale(struct redis_conn *c, int older_ms, int limit, lease_id_fn each, void *ud);

/* A supervisor's idle workers take up to limit provisioning intents (each
 * to one supervisor only): each lease id and the ms its intent waited to
 * each(ud, ...). Returns as lease_stale(). */
int lease_intents_take(struct redis_conn *c, int limit, lease_id_fn each, void *ud);

/* Queue a provisioning lease whose caller prepared it (sandbox.h,
 * sandbox_lease_pull_then_queue) for the supervisors' workers and wake
 * them: 1, 0 when the lease is no longer provisioning, or a negative errno. */
int lease_intent_push(struct redis_conn *c, const char *lease_id);

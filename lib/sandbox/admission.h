/* admission: a lease asked for (lease_acquire) and, when no slot is free,
 * its new ticket put in the Kafka queue (the enqueue use-case): the one
 * path of a lease acquire and of an OpenSandbox create's admission
 * (osb_create_run.h), so no handler produces a ticket itself.
 *
 * A ticket exists in Redis only once Kafka has acknowledged it
 * (docs/ARCHITECTURE.md §5, "No lost or doubled tickets"): a produce that
 * fails takes it back out, unless a supervisor already served it. No
 * logging here: the outcome says what happened, the caller logs.
 *
 * Errors (returned): those of lease_acquire (-EIO, -EPROTO, -ENOMEM). */
#pragma once
#include "core/config.h"
#include "queue/kafka.h"
#include "store/lease.h"
#include "store/redis_conn.h"

/* What became of a new ticket. */
enum admission_queue {
        ADMISSION_QUEUE_NONE,     /* no new ticket: nothing produced */
        ADMISSION_QUEUE_PRODUCED, /* in Kafka, acknowledged */
        /* Kafka did not confirm it (produce_r), but a supervisor had
         * already taken it out of Redis's queue: the client polls it as
         * usual */
        ADMISSION_QUEUE_SERVED,
        /* Kafka did not confirm it (produce_r): taken back out of Redis
         * (or Redis could not say), the acquire did not happen */
        ADMISSION_QUEUE_UNAVAILABLE,
};

struct admission_outcome {
        struct lease_outcome lease; /* lease_acquire's (owned) */
        enum admission_queue queue; /* lease.kind QUEUED with new_ticket: what became of it */
        int produce_r;              /* SERVED, UNAVAILABLE: the produce's negative errno */
};

/* Release what *o owns and zero it. */
void admission_outcome_clear(struct admission_outcome *o);

/* Put ticket_id, new in Redis (lease_acquire's QUEUED with new_ticket) for
 * req, in the Kafka queue (kafka may be NULL: no queue, UNAVAILABLE).
 * Returns the admission_queue it came to (never NONE); *ret_produce_r the
 * produce's error when not PRODUCED. */
enum admission_queue admission_enqueue(struct redis_conn *c, struct kafka_producer *kafka,
                                       const struct lease_request *req, const char *ticket_id,
                                       int *ret_produce_r);

/* lease_acquire(req), then admission_enqueue of a new ticket. Returns 0
 * with *ret filled (clear it either way), or lease_acquire's error. */
int admission_acquire(struct redis_conn *c, struct kafka_producer *kafka,
                      const struct broker_config *cfg, const struct lease_request *req,
                      struct admission_outcome *ret);

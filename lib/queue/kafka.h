/* kafka: the ticket queue on Kafka (librdkafka).
 *
 * Producer: thread-safe; kafka_produce_sync() returns once the broker has
 * acknowledged the message (acks=all, idempotent), so an acquire answers 202
 * only for a ticket that is durably queued. The same producer also carries
 * the audit events (lib/queue/audit.h) to cfg->kafka_events_topic, fire-and-forget,
 * through a second librdkafka instance of its own that gathers them for
 * cfg->kafka_events_linger_ms into one request (tickets are never delayed):
 * kafka_produce_event() never waits, and what cannot be queued or delivered
 * is counted in broker_audit_dropped_total, never reported to a request.
 * Events still gathered in memory when the process dies unflushed (SIGKILL,
 * crash) are lost from Kafka; their journald copies were written first.
 * Consumer: one per supervisor, in KAFKA_GROUP; offsets are committed only by
 * the caller (kafka_consumer_commit) after the ticket's grant is stored. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "core/config.h"

struct kafka_producer;
struct kafka_consumer;

struct kafka_msg {
        int32_t partition;
        int64_t offset;
        size_t len;
        char *payload; /* NUL-terminated copy, owned */
};

/* Create a producer for cfg->kafka_topic (tickets) and
 * cfg->kafka_events_topic (audit events). Connecting is asynchronous; the
 * constructor does not wait for Kafka. Errors: -EINVAL (bad config, message
 * in err), -ENOMEM. */
int kafka_producer_new(const struct broker_config *cfg, const char *client_id,
                       struct kafka_producer **ret, char *err, size_t errsz);

/* Wait until every queued message, audit events still gathering included,
 * is delivered or failed, each instance at most KAFKA_TIMEOUT_MS; the
 * producer stays usable. Accepts NULL. For a process about to exit. */
void kafka_producer_flush(struct kafka_producer *p);

/* Flush outstanding messages (bounded by the produce timeout) and free;
 * accepts NULL. */
void kafka_producer_free(struct kafka_producer *p);

/* Produce one message and wait for its acknowledgement (at most
 * KAFKA_TIMEOUT_MS). Errors: -ETIMEDOUT, -EIO (delivery failed), -ENOBUFS. */
int kafka_produce_sync(struct kafka_producer *p, const char *key, const char *payload, size_t len);

/* Queue one audit event for cfg->kafka_events_topic and return at once
 * (payload copied; key may be NULL: any partition). At most 10000 events
 * wait for delivery per producer; beyond that, or when librdkafka's queue is
 * full, the event is dropped. A drop, here or later (delivery failed after
 * KAFKA_TIMEOUT_MS), adds 1 to broker_audit_dropped_total. Errors: -ENOBUFS
 * (dropped: too many in flight), -EIO (dropped: refused by librdkafka).
 * Callers may ignore the result. */
int kafka_produce_event(struct kafka_producer *p, const char *key, const char *payload, size_t len);

/* Ask the cluster for the topic's metadata within timeout_ms: the health
 * check. Errors: -EIO with a reason in err. */
int kafka_producer_check(struct kafka_producer *p, int timeout_ms, char *err, size_t errsz);

/* Create the ticket topic and the events topic, each with one partition (one
 * partition keeps the queue in order), if they do not exist. Errors: -EIO
 * with a reason in err. */
int kafka_topic_ensure(struct kafka_producer *p, int timeout_ms, char *err, size_t errsz);

/* Create a consumer in cfg->kafka_group subscribed to cfg->kafka_topic. */
int kafka_consumer_new(const struct broker_config *cfg, struct kafka_consumer **ret, char *err,
                       size_t errsz);

/* Leave the group and free; accepts NULL. */
void kafka_consumer_free(struct kafka_consumer *c);

/* Wait up to timeout_ms for the next message. Returns 1 with *ret set (free
 * with kafka_msg_free), 0 when none arrived, or -EIO on a fatal consumer
 * error. Transient errors (broker down, partition EOF) are logged at debug
 * and return 0. Also serves group heartbeats and rebalances. */
int kafka_consumer_poll(struct kafka_consumer *c, int timeout_ms, struct kafka_msg **ret);

/* Commit the position after m (m->offset + 1) synchronously. */
int kafka_consumer_commit(struct kafka_consumer *c, const struct kafka_msg *m);

/* Stop (pause) or restart (resume) fetching on every assigned partition. */
int kafka_consumer_pause(struct kafka_consumer *c, int pause);

/* Incremented whenever partitions are revoked: messages held from before a
 * change of generation may be re-delivered to another consumer. */
unsigned kafka_consumer_generation(const struct kafka_consumer *c);

void kafka_msg_free(struct kafka_msg *m);

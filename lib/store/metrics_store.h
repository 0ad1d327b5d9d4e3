/* metrics_store: the Redis half of metrics (lib/core/metrics.h counts):
 * every process's deltas flushed with HINCRBY into the hash <prefix>metrics,
 * and that hash with the live gauges (lease_status()) rendered as the
 * Prometheus text of GET /metrics. */
#pragma once
#include <stddef.h>

#include "core/config.h"
#include "core/metrics.h"
#include "store/redis_conn.h"

/* Move this process's deltas into the Redis hash (HINCRBY). A delta that
 * could not be written is kept for the next flush. Returns 0 or -EIO. */
int metrics_flush(struct redis_conn *c, const struct broker_config *cfg);

/* metrics_flush() if METRICS_FLUSH_MS passed since the last one: for a
 * single-threaded loop (the supervisor) calling it every turn. */
void metrics_flush_due(struct redis_conn *c, const struct broker_config *cfg);

/* A thread that flushes every METRICS_FLUSH_MS over its own connection
 * (the FastCGI handlers). cfg must outlive it. Returns 0 or a negative errno. */
int metrics_flusher_start(const struct broker_config *cfg);

/* Stop that thread after a last flush; a no-op if it was not started. */
void metrics_flusher_stop(void);

/* Read the hash and the live gauges and format them. Errors: those of
 * redis_conn_command / lease_status, -ENOMEM. */
int metrics_render(struct redis_conn *c, const struct broker_config *cfg, char **ret,
                   size_t *ret_len);

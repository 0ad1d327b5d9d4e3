/* metrics: in-process counters and histograms, aggregated across processes
 * in one Redis hash, rendered as Prometheus text for GET /metrics.
 *
 * Counting is a lock-free atomic add on a process-local table: no Redis
 * call on the request hot path. Every process flushes its deltas about once
 * a second with HINCRBY into the hash <prefix>metrics, so the counts of all
 * handler processes and supervisors add up; /metrics reads that hash and
 * adds live gauges (lease_status()). A series is its Prometheus name with
 * labels, e.g. broker_http_requests_total{group="leases",...}; histogram
 * buckets are stored per bucket and made cumulative when rendered.
 * The names and labels are listed in docs/OPERATIONS.md. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

#include "config.h"
#include "redis_conn.h"

#define METRICS_SERIES_MAX 512 /* distinct series per process; more are dropped */
#define METRICS_SERIES_LEN 160 /* longest series name with its labels */
#define METRICS_FLUSH_MS 1000

enum metrics_hist {
        METRICS_GRANT_WAIT,     /* queued ticket: createdAt -> grantedAt */
        METRICS_SANDBOX_CREATE, /* provider create + start until Running */
        METRICS_SANDBOX_EXEC,   /* one exec call of the runtime API */
        METRICS_PROVISION_WAIT, /* granted lease queued -> a provisioning worker takes it */
        METRICS_SDK_CREATE,     /* a create as an SDK timed it (POST /v1/metrics/events) */
        METRICS_HIST_N,
};

/* Add n to a series (a full Prometheus series name with labels). Thread-safe,
 * never blocks on I/O. A name that does not fit METRICS_SERIES_LEN, or a
 * series beyond METRICS_SERIES_MAX, is counted in broker_metrics_dropped_total. */
void metrics_add(const char *series, long long n);

/* One answered request. route is the matched pattern of the route table (or
 * NULL: no route); method is normalised to a known verb or "other". */
void metrics_request(const char *group, const char *route, const char *method, int status);

/* One observation of histogram h, in milliseconds (negative counts as 0). */
void metrics_observe_ms(enum metrics_hist h, int64_t ms);

/* A provider call op ("create", "exec", ...) failed for a backend reason. */
void metrics_provider_error(const char *op);

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

/* metrics: in-process counters and histograms, aggregated across processes
 * in one Redis hash, rendered as Prometheus text for GET /metrics. This is
 * the counting half (lib/core); the Redis half, flush and exposition, is
 * lib/store/metrics_store.h.
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

#define METRICS_SERIES_MAX 512 /* distinct series per process; more are dropped */
#define METRICS_SERIES_LEN 160 /* longest series name with its labels */
#define METRICS_FLUSH_MS 1000
/* The series counting what did not fit the table. */
#define METRICS_DROPPED "broker_metrics_dropped_total"

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

/* Take this process's deltas: fn(ctx, series, n) for each series counted
 * since the last drain (and broker_metrics_dropped_total for what could not
 * be), its delta zeroed first. fn returns 0, or a negative errno: then that
 * delta is kept for the next drain and the drain stops with fn's error.
 * Returns 0 or that error. The store's flush (metrics_store.h) drains. */
int metrics_drain(int (*fn)(void *ctx, const char *series, long long n), void *ctx);

/* Histogram h's family name ("broker_..._seconds"; "" for no such h). */
const char *metrics_hist_name(enum metrics_hist h);

/* The histograms' bucket bounds in ms, ascending, *ret_n of them. */
const int64_t *metrics_hist_bounds(size_t *ret_n);

/* metrics: see metrics.h. */
#include "core/metrics.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct series {
        atomic_int ready; /* name is written and final */
        char name[METRICS_SERIES_LEN];
        atomic_llong delta; /* not yet flushed */
};

/* Histogram bounds in ms; rendered in seconds (Prometheus base unit). */
static const int64_t bounds_ms[] = { 5,    10,   25,   50,    100,   250,   500,
                                     1000, 2500, 5000, 10000, 30000, 60000, 120000 };
#define N_BOUNDS (sizeof(bounds_ms) / sizeof(bounds_ms[0]))
static const char *const hist_names[METRICS_HIST_N] = {
        [METRICS_GRANT_WAIT] = "broker_grant_wait_seconds",
        [METRICS_SANDBOX_CREATE] = "broker_sandbox_create_seconds",
        [METRICS_SANDBOX_EXEC] = "broker_sandbox_exec_seconds",
        [METRICS_PROVISION_WAIT] = "broker_provision_queue_wait_seconds",
        [METRICS_SDK_CREATE] = "broker_sdk_sandbox_create_seconds",
};

static struct {
        struct series table[METRICS_SERIES_MAX];
        pthread_mutex_t insert_lock; /* writers of new series; readers never lock */
        atomic_llong dropped;
} m = { .insert_lock = PTHREAD_MUTEX_INITIALIZER };

static uint32_t hash_name(const char *s)
{
        uint32_t h = 2166136261u; /* FNV-1a */
        for (; *s; s++)
                h = (h ^ (uint8_t)*s) * 16777619u;
        return h;
}

/* The series called name, created if new; NULL when the table is full. */
static struct series *series_get(const char *name)
{
        uint32_t start = hash_name(name) % METRICS_SERIES_MAX;
        struct series *found = NULL;

        /* Fast path: entries are never removed or renamed, so a ready name
         * can be compared without a lock. */
        for (uint32_t i = 0; i < METRICS_SERIES_MAX; i++) {
                struct series *e = &m.table[(start + i) % METRICS_SERIES_MAX];
                if (!atomic_load_explicit(&e->ready, memory_order_acquire))
                        break;
                if (strcmp(e->name, name) == 0)
                        return e;
        }
        pthread_mutex_lock(&m.insert_lock);
        for (uint32_t i = 0; i < METRICS_SERIES_MAX; i++) {
                struct series *e = &m.table[(start + i) % METRICS_SERIES_MAX];
                if (!atomic_load_explicit(&e->ready, memory_order_acquire)) {
                        snprintf(e->name, sizeof(e->name), "%s", name);
                        atomic_store_explicit(&e->ready, 1, memory_order_release);
                        found = e;
                        break;
                }
                if (strcmp(e->name, name) == 0) {
                        found = e;
                        break;
                }
        }
        pthread_mutex_unlock(&m.insert_lock);
        return found;
}

void metrics_add(const char *series, long long n)
{
        struct series *e = strlen(series) < METRICS_SERIES_LEN ? series_get(series) : NULL;

        if (e)
                atomic_fetch_add_explicit(&e->delta, n, memory_order_relaxed);
        else
                atomic_fetch_add_explicit(&m.dropped, 1, memory_order_relaxed);
}

void metrics_request(const char *group, const char *route, const char *method, int status)
{
        static const char *const verbs[] = { "GET",    "HEAD",  "POST",   "PUT",
                                             "DELETE", "PATCH", "OPTIONS" };
        const char *verb = "other";
        char name[METRICS_SERIES_LEN];

        /* Only bounded label values: the client picks the method and path,
         * the route table and the status codes are ours. */
        for (size_t i = 0; method && i < sizeof(verbs) / sizeof(verbs[0]); i++)
                if (strcmp(method, verbs[i]) == 0)
                        verb = verbs[i];
        if (status < 100 || status > 599)
                status = 0;
        snprintf(
                name, sizeof(name),
                "broker_http_requests_total{group=\"%s\",route=\"%s\",method=\"%s\",status=\"%d\"}",
                group ? group : "", route ? route : "none", verb, status);
        metrics_add(name, 1);
}

void metrics_observe_ms(enum metrics_hist h, int64_t ms)
{
        char name[METRICS_SERIES_LEN];
        size_t b = 0;

        if ((unsigned)h >= METRICS_HIST_N)
                return;
        if (ms < 0)
                ms = 0;
        while (b < N_BOUNDS && ms > bounds_ms[b])
                b++;
        /* Stored per bucket (b == N_BOUNDS: above the last bound, only in
         * _count); metrics_format() makes them cumulative. */
        if (b < N_BOUNDS) {
                snprintf(name, sizeof(name), "%s_bucket{le=\"%lld\"}", hist_names[h],
                         (long long)bounds_ms[b]);
                metrics_add(name, 1);
        }
        snprintf(name, sizeof(name), "%s_count", hist_names[h]);
        metrics_add(name, 1);
        snprintf(name, sizeof(name), "%s_sum_ms", hist_names[h]);
        metrics_add(name, ms);
}

void metrics_provider_error(const char *op)
{
        char name[METRICS_SERIES_LEN];

        snprintf(name, sizeof(name), "broker_provider_errors_total{op=\"%s\"}", op);
        metrics_add(name, 1);
}

const char *metrics_hist_name(enum metrics_hist h)
{
        return (unsigned)h < METRICS_HIST_N ? hist_names[h] : "";
}

const int64_t *metrics_hist_bounds(size_t *ret_n)
{
        *ret_n = N_BOUNDS;
        return bounds_ms;
}

int metrics_drain(int (*fn)(void *ctx, const char *series, long long n), void *ctx)
{
        long long n;
        int r;

        for (int i = 0; i < METRICS_SERIES_MAX; i++) {
                struct series *e = &m.table[i];
                if (!atomic_load_explicit(&e->ready, memory_order_acquire))
                        continue;
                n = atomic_exchange_explicit(&e->delta, 0, memory_order_relaxed);
                if (n && (r = fn(ctx, e->name, n)) < 0) {
                        atomic_fetch_add_explicit(&e->delta, n, memory_order_relaxed);
                        return r; /* the rest waits too */
                }
        }
        n = atomic_exchange_explicit(&m.dropped, 0, memory_order_relaxed);
        if (n && (r = fn(ctx, METRICS_DROPPED, n)) < 0) {
                atomic_fetch_add_explicit(&m.dropped, n, memory_order_relaxed);
                return r;
        }
        return 0;
}

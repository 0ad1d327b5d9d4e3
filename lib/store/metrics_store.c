/* metrics_store: see metrics_store.h. */
#include "store/metrics_store.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/lease.h"
#include "store/metrics_reply.h"
#include "core/timeutil.h"

static struct {
        int64_t last_flush; /* metrics_flush_due(): its caller's thread only */
        /* the flusher thread */
        pthread_t thread;
        bool running, stop;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        const struct broker_config *cfg;
} m = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

static int hincrby(struct redis_conn *c, const char *key, const char *field, long long n)
{
        char num[24];
        const char *argv[] = { "HINCRBY", key, field, num };
        redisReply *rep = NULL;
        int r;

        snprintf(num, sizeof(num), "%lld", n);
        r = redis_conn_command(c, 4, argv, &rep);
        reply_free(rep);
        return r;
}

struct flush {
        struct redis_conn *c;
        char key[96];
};

static int flush_one(void *ctx, const char *series, long long n)
{
        struct flush *f = ctx;

        return hincrby(f->c, f->key, series, n) < 0 ? -EIO : 0; /* Redis is down */
}

int metrics_flush(struct redis_conn *c, const struct broker_config *cfg)
{
        struct flush f = { .c = c };

        snprintf(f.key, sizeof(f.key), "%smetrics", cfg->key_prefix);
        return metrics_drain(flush_one, &f);
}

void metrics_flush_due(struct redis_conn *c, const struct broker_config *cfg)
{
        int64_t now = timeutil_mono_ms();

        if (now - m.last_flush < METRICS_FLUSH_MS)
                return;
        m.last_flush = now;
        metrics_flush(c, cfg);
}

static void *flusher_main(void *arg)
{
        struct redis_conn *c = arg;
        struct timespec deadline;
        bool stop = false;

        while (!stop) {
                clock_gettime(CLOCK_REALTIME, &deadline);
                deadline.tv_sec += METRICS_FLUSH_MS / 1000;
                pthread_mutex_lock(&m.lock);
                while (!m.stop && pthread_cond_timedwait(&m.cond, &m.lock, &deadline) != ETIMEDOUT)
                        ;
                stop = m.stop;
                pthread_mutex_unlock(&m.lock);
                metrics_flush(c, m.cfg); /* the last one runs after stop */
        }
        redis_conn_free(c);
        return NULL;
}

int metrics_flusher_start(const struct broker_config *cfg)
{
        struct redis_conn *c = NULL;
        int r = redis_conn_new(cfg, &c);

        if (r < 0)
                return r;
        m.cfg = cfg;
        m.stop = false;
        r = -pthread_create(&m.thread, NULL, flusher_main, c);
        if (r < 0) {
                redis_conn_free(c);
                return r;
        }
        m.running = true;
        return 0;
}

void metrics_flusher_stop(void)
{
        if (!m.running)
                return;
        pthread_mutex_lock(&m.lock);
        m.stop = true;
        pthread_cond_signal(&m.cond);
        pthread_mutex_unlock(&m.lock);
        pthread_join(m.thread, NULL);
        m.running = false;
}

/* ---- exposition ------------------------------------------------------------------------ */

struct buf {
        char *p;
        size_t len, cap;
        bool oom;
};

static void __attribute__((format(printf, 2, 3))) put(struct buf *b, const char *fmt, ...)
{
        va_list ap;
        int n;

        if (b->oom)
                return;
        for (;;) {
                va_start(ap, fmt);
                n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
                va_end(ap);
                if (n < 0) {
                        b->oom = true;
                        return;
                }
                if (b->p && b->len + (size_t)n < b->cap) {
                        b->len += (size_t)n;
                        return;
                }
                size_t cap = b->cap ? b->cap * 2 : 4096;
                while (cap <= b->len + (size_t)n)
                        cap *= 2;
                char *p = realloc(b->p, cap);
                if (!p) {
                        b->oom = true;
                        return;
                }
                b->p = p;
                b->cap = cap;
        }
}

struct family {
        const char *name, *type, *help;
        bool labelled; /* no series until the first count: nothing to show as 0 */
        /* of a labelled family: label sets known in advance, shown as 0
         * until counted (so that rate() sees the first one) */
        const char *const *zeros;
};

static const char *const egress_reasons[] = { "{reason=\"policy\"}", "{reason=\"port\"}",
                                              "{reason=\"address\"}", NULL };

static const char *const sdk_results[] = { "{success=\"true\"}", "{success=\"false\"}", NULL };

static const struct family counters[] = {
        { "broker_http_requests_total",
          "counter", "Requests answered by the FastCGI handlers, by route group, route pattern, method and status.",
          true, NULL },
        { "broker_tickets_granted_total", "counter", "Queued tickets granted by a supervisor.",
          false, NULL },
        { "broker_tickets_expired_total", "counter",
          "Queued tickets skipped because nobody polled them within TICKET_TTL_MS.", false, NULL },
        { "broker_leases_reaped_total", "counter",
          "Leases released by the reaper after missed heartbeats (LEASE_TTL_MS).", false, NULL },
        { "broker_sandboxes_unanswered_total", "counter",
          "OpenSandbox sandboxes removed because no client got their create's answer within "
          "OPENSANDBOX_UNANSWERED_S (the handler died before it) and no request named them.",
          false, NULL },
        { "broker_snapshot_images_reaped_total", "counter",
          "Snapshot images the reconciler removed because their snapshot is Failed or gone (a "
          "commit cut short, or one that landed after its snapshot failed).",
          false, NULL },
        { "broker_provider_errors_total",
          "counter", "Sandbox provider calls that failed for a backend reason (timeout, unreachable, backend error), by operation.",
          true, NULL },
        { "broker_audit_dropped_total",
          "counter", "Audit events not delivered to the Kafka events topic (queue full, Kafka unreachable); journald still has them.",
          false, NULL },
        { "broker_egress_allowed_total",
          "counter", "Egress requests of sandboxes allowed by their policy (sandbox-egress-acl; docs/EGRESS.md).",
          false, NULL },
        { "broker_egress_denied_total", "counter",
          "Egress requests of sandboxes denied, by reason: policy (by sandbox-egress-acl: the "
          "policy, no policy, no sandbox identity), port (not in EGRESS_PORTS), address (resolved "
          "to a blocked range).",
          true, egress_reasons },
        { "broker_provisions_total", "counter",
          "Sandboxes of granted leases made by the supervisor's provisioning workers, by result "
          "(ready, failed, gone: released meanwhile).",
          true, NULL },
        { "broker_sdk_create_events_total", "counter",
          "sandbox.create events the OpenSandbox SDKs reported (POST /v1/metrics/events), by their "
          "success field: client-reported, not checked.",
          true, sdk_results },
        { METRICS_DROPPED, "counter",
          "Counts dropped because a process had too many distinct series.", false, NULL },
};

static const char *const hist_help[METRICS_HIST_N] = {
        [METRICS_GRANT_WAIT] =
                "Wait of queued tickets from creation to grant (immediate grants have no ticket).",
        [METRICS_SANDBOX_CREATE] = "Time to make a sandbox run: provider create and start.",
        [METRICS_SANDBOX_EXEC] = "Duration of exec calls of the runtime API, command included.",
        [METRICS_PROVISION_WAIT] = "Wait of granted leases for a supervisor's provisioning worker "
                                   "(PROVISION_WORKERS).",
        [METRICS_SDK_CREATE] = "Creates as the OpenSandbox SDKs timed them, until ready or failed "
                               "(POST /v1/metrics/events): client-reported, not checked.",
};

static const struct {
        const char *key, *name, *help;
} gauges[] = {
        { "capacity", "broker_capacity", "Hard cap of active slots (BROKER_CAPACITY)." },
        { "activeSlots", "broker_slots_active", "Slots (sandboxes) in use now." },
        { "activeLeases", "broker_leases_active", "Leases held now." },
        { "queueDepth", "broker_queue_depth", "Tickets waiting in the queue now." },
};

/* The value of field in a flat HGETALL reply, or 0. */
static long long field_value(const redisReply *h, const char *field)
{
        const char *v = reply_hash_get(h, field);

        return v ? strtoll(v, NULL, 10) : 0;
}

static void put_seconds(struct buf *b, long long ms)
{
        put(b, "%lld.%03lld", ms / 1000, ms % 1000);
}

int metrics_format(const redisReply *h, struct json_object *status, char **ret, size_t *ret_len)
{
        struct buf b = { 0 };
        char name[METRICS_SERIES_LEN + 16];

        *ret = NULL;
        if (h && h->type != REDIS_REPLY_ARRAY)
                h = NULL;
        for (size_t f = 0; f < sizeof(counters) / sizeof(counters[0]); f++) {
                const char *fam = counters[f].name;
                size_t flen = strlen(fam);
                bool any = false;

                put(&b, "# HELP %s %s\n# TYPE %s %s\n", fam, counters[f].help, fam, counters[f].type);
                for (size_t i = 0; h && i + 1 < h->elements; i += 2) {
                        const redisReply *k = h->element[i], *v = h->element[i + 1];
                        if (k->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING ||
                            strncmp(k->str, fam, flen) != 0 || (k->str[flen] && k->str[flen] != '{'))
                                continue;
                        put(&b, "%s %lld\n", k->str, strtoll(v->str, NULL, 10));
                        any = true;
                }
                if (!any && !counters[f].labelled)
                        put(&b, "%s 0\n", fam);
                for (const char *const *z = counters[f].zeros; z && *z; z++) {
                        snprintf(name, sizeof(name), "%s%s", fam, *z);
                        if (!reply_hash_get(h, name))
                                put(&b, "%s 0\n", name);
                }
        }
        size_t n_bounds;
        const int64_t *bounds_ms = metrics_hist_bounds(&n_bounds);

        for (int hi = 0; hi < METRICS_HIST_N; hi++) {
                const char *fam = metrics_hist_name((enum metrics_hist)hi);
                long long cum = 0;

                put(&b, "# HELP %s %s\n# TYPE %s histogram\n", fam, hist_help[hi], fam);
                for (size_t i = 0; i < n_bounds; i++) {
                        snprintf(name, sizeof(name), "%s_bucket{le=\"%lld\"}", fam,
                                 (long long)bounds_ms[i]);
                        cum += field_value(h, name);
                        put(&b, "%s_bucket{le=\"", fam);
                        put_seconds(&b, bounds_ms[i]);
                        put(&b, "\"} %lld\n", cum);
                }
                snprintf(name, sizeof(name), "%s_count", fam);
                put(&b, "%s_bucket{le=\"+Inf\"} %lld\n", fam, field_value(h, name));
                put(&b, "%s_count %lld\n", fam, field_value(h, name));
                snprintf(name, sizeof(name), "%s_sum_ms", fam);
                put(&b, "%s_sum ", fam);
                put_seconds(&b, field_value(h, name));
                put(&b, "\n");
        }
        for (size_t g = 0; status && g < sizeof(gauges) / sizeof(gauges[0]); g++) {
                struct json_object *v;
                if (!json_object_object_get_ex(status, gauges[g].key, &v))
                        continue;
                put(&b, "# HELP %s %s\n# TYPE %s gauge\n%s %lld\n", gauges[g].name, gauges[g].help,
                    gauges[g].name, gauges[g].name, (long long)json_object_get_int64(v));
        }
        if (b.oom || !b.p) {
                free(b.p);
                return -ENOMEM;
        }
        *ret = b.p;
        if (ret_len)
                *ret_len = b.len;
        return 0;
}

int metrics_render(struct redis_conn *c, const struct broker_config *cfg, char **ret, size_t *ret_len)
{
        char key[96];
        const char *argv[] = { "HGETALL", key };
        struct json_object *status = NULL;
        redisReply *rep = NULL;
        int r;

        *ret = NULL;
        snprintf(key, sizeof(key), "%smetrics", cfg->key_prefix);
        r = redis_conn_command(c, 2, argv, &rep);
        if (r < 0)
                return r;
        r = lease_status(c, cfg, &status);
        if (r == 0)
                r = metrics_format(rep, status, ret, ret_len);
        json_object_put(status);
        reply_free(rep);
        return r;
}

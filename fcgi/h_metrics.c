/* h_metrics: GET /metrics, the Prometheus text exposition (metrics.h):
 * the counters every broker process flushed to Redis plus live gauges. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json_input.h"
#include "core/metrics.h"
#include "store/metrics_store.h"
#include "sandbox/pool.h"
#include "routes.h"

/* Per warm pool (POOL): gauges and claim counters appended to the text. */
static void pool_metrics(struct request *req, char **text, size_t *len)
{
        static const char *const gauges[][3] = {
                { "size", "broker_pool_size", "Configured size of the warm pool." },
                { "members", "broker_pool_members", "Pool members, creating or ready." },
                { "ready", "broker_pool_ready", "Ready (claimable) pool members." },
                { "lastRefillAt", "broker_pool_last_refill_timestamp_ms",
                  "Epoch ms of the last member made." },
                { "refillMs", "broker_pool_refill_ms", "Milliseconds the last member took to make." },
                { "failures", "broker_pool_failures",
                  "Consecutive failed refills (backing off when > 0)." },
        };
        char *out = NULL;
        size_t outlen = 0;
        FILE *f = open_memstream(&out, &outlen);
        struct json_object *st[CONFIG_POOLS_MAX] = { 0 }, *v;

        if (!f)
                return;
        for (int i = 0; i < req->w->cfg->n_pools; i++) {
                st[i] = json_object_new_object();
                if (st[i] && pool_status(req->w->redis, req->w->cfg, req->w->cfg->pools[i].image,
                                         st[i]) < 0) {
                        json_put(st[i]);
                        st[i] = NULL;
                }
        }
        for (size_t g = 0; g < sizeof(gauges) / sizeof(gauges[0]); g++) {
                fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n", gauges[g][1], gauges[g][2],
                        gauges[g][1]);
                for (int i = 0; i < req->w->cfg->n_pools; i++)
                        if (st[i] && json_object_object_get_ex(st[i], gauges[g][0], &v))
                                fprintf(f, "%s{image=\"%s\"} %lld\n", gauges[g][1],
                                        req->w->cfg->pools[i].image,
                                        (long long)json_object_get_int64(v));
        }
        fprintf(f, "# HELP broker_pool_claims_total Sandboxes claimed from a pooled image, warm or "
                   "cold.\n"
                   "# TYPE broker_pool_claims_total counter\n");
        for (int i = 0; i < req->w->cfg->n_pools; i++) {
                if (!st[i])
                        continue;
                if (json_object_object_get_ex(st[i], "claimsWarm", &v))
                        fprintf(f, "broker_pool_claims_total{image=\"%s\",kind=\"warm\"} %lld\n",
                                req->w->cfg->pools[i].image, (long long)json_object_get_int64(v));
                if (json_object_object_get_ex(st[i], "claimsCold", &v))
                        fprintf(f, "broker_pool_claims_total{image=\"%s\",kind=\"cold\"} %lld\n",
                                req->w->cfg->pools[i].image, (long long)json_object_get_int64(v));
                json_put(st[i]);
        }
        fclose(f);
        char *n = out ? realloc(*text, *len + outlen + 1) : NULL;
        if (n) {
                memcpy(n + *len, out, outlen + 1);
                *text = n;
                *len += outlen;
        }
        free(out);
}

void h_metrics(struct request *req)
{
        char *text = NULL;
        size_t len = 0;
        int r = metrics_render(req->w->redis, req->w->cfg, &text, &len);

        if (r < 0) {
                reply_errno(req, r, "metrics");
                return;
        }
        if (req->w->cfg->n_pools > 0)
                pool_metrics(req, &text, &len);
        reply_text(req, 200, "text/plain; version=0.0.4; charset=utf-8", text, len);
        free(text);
}

/* h_status: GET /health, GET /version and GET /v1/status. */
#include <stdbool.h>
#include <stdio.h>

#include "broker_version.h"
#include "core/json_input.h"
#include "store/lease.h"
#include "core/log.h"
#include "sandbox/pool.h"
#include "routes.h"

#define HEALTH_KAFKA_TIMEOUT_MS 1500

/* The warm pools' troubles for /health into buf: "error: pool IMG: ..."
 * for an image that fails to start, "warning: pool IMG: ..." for one no
 * lease mode uses that no create has asked for (pool_status), "; "
 * between them. Returns whether there is any. */
static bool pools_health(struct request *req, char *buf, size_t size)
{
        const struct broker_config *cfg = req->w->cfg;
        size_t n = 0;

        buf[0] = '\0';
        for (int i = 0; i < cfg->n_pools && n < size; i++) {
                struct json_object *p = json_object_new_object(), *f = NULL, *e = NULL, *w = NULL;
                if (!p || pool_status(req->w->redis, cfg, cfg->pools[i].image, p) < 0) {
                        json_put(p);
                        continue;
                }
                json_object_object_get_ex(p, "error", &e);
                json_object_object_get_ex(p, "warning", &w);
                if (json_object_object_get_ex(p, "failures", &f) && json_object_get_int64(f) > 0)
                        n += (size_t)snprintf(buf + n, size - n, "%serror: pool %s: %s", n ? "; " : "",
                                              cfg->pools[i].image, e ? json_object_get_string(e) : "");
                else if (w && json_object_get_string_len(w) > 0)
                        n += (size_t)snprintf(buf + n, size - n, "%swarning: pool %s: %s", n ? "; " : "",
                                              cfg->pools[i].image, json_object_get_string(w));
                json_put(p);
        }
        return buf[0] != '\0';
}

void h_health(struct request *req)
{
        struct json_object *o = json_object_new_object(), *checks = json_object_new_object();
        char err[256] = "", pools[1024];
        int healthy = 1;
        bool loading = false;

        if (!o || !checks) {
                json_put(o);
                json_put(checks);
                reply_error(req, API_INTERNAL, "out of memory");
                return;
        }
        if (redis_conn_ping(req->w->redis) == 0) {
                json_object_object_add(checks, "redis", json_object_new_string("ok"));
        } else {
                healthy = 0;
                loading = redis_conn_loading(req->w->redis);
                json_object_object_add(checks, "redis",
                                       json_object_new_string(loading ? "error: loading its dataset (it restarted)"
                                                                      : "error: unreachable"));
        }
        if (kafka_producer_check(req->w->kafka, HEALTH_KAFKA_TIMEOUT_MS, err, sizeof(err)) == 0) {
                json_object_object_add(checks, "kafka", json_object_new_string("ok"));
        } else {
                char msg[300];
                healthy = 0;
                snprintf(msg, sizeof(msg), "error: %s", err);
                json_object_object_add(checks, "kafka", json_object_new_string(msg));
        }
        /* A warm pool whose image fails to start, or whose members nothing
         * can ever take: degraded, not down (claims fall back to cold
         * creates). */
        if (pools_health(req, pools, sizeof(pools))) {
                json_object_object_add(checks, "pool", json_object_new_string(pools));
                if (healthy == 1)
                        healthy = 2;
        }
        json_object_object_add(o, "status", json_object_new_string(healthy == 1 ? "healthy" :
                                                                    healthy == 2 ? "degraded" : "unhealthy"));
        json_object_object_add(o, "checks", checks);
        if (healthy != 1)
                log_warn(LOG_KV({ "REQUEST_ID", req->request_id }), "health check failed: %s",
                         json_object_to_json_string_ext(checks, JSON_C_TO_STRING_PLAIN));
        /* a Redis that is loading is back in a moment: say when to look again */
        char retry[32];
        snprintf(retry, sizeof(retry), "Retry-After: %d", REQUEST_LOADING_RETRY_S);
        reply_json_hdr(req, healthy ? 200 : 503, loading ? retry : NULL, o);
        json_put(o);
}

void h_status(struct request *req)
{
        struct json_object *o = NULL, *t = NULL;
        int r = lease_status(req->w->redis, req->w->cfg, &o);

        if (r == 0)
                r = lease_tenant_status(req->w->redis, req->w->cfg, req->auth.tenant, &t);
        if (r < 0) {
                json_put(o);
                reply_errno(req, r, "status");
                return;
        }
        /* the caller's own share; the totals above are the whole broker's */
        json_object_object_add(o, "tenant", t);
        if (req->w->cfg->n_pools > 0) {
                struct json_object *pools = json_object_new_array();
                for (int i = 0; pools && i < req->w->cfg->n_pools; i++) {
                        struct json_object *p = json_object_new_object();
                        if (p && pool_status(req->w->redis, req->w->cfg, req->w->cfg->pools[i].image, p) == 0)
                                json_object_array_add(pools, p);
                        else
                                json_put(p);
                }
                json_object_object_add(o, "pools", pools);
        }
        reply_json(req, 200, o);
        json_put(o);
}

/* GET /version: {"version": BROKER_VERSION}, the build's version
 * (VERSION and the git commit, Makefile), open as the reference server's
 * (opensandbox-server 1.1.1 answers {"version": its package version}
 * without a key); nothing else is told. */
void h_version(struct request *req)
{
        struct json_object *o = json_object_new_object();

        if (!o || json_add_str(o, "version", BROKER_VERSION) < 0) {
                json_put(o);
                reply_error(req, API_INTERNAL, "out of memory");
                return;
        }
        reply_json(req, 200, o);
        json_put(o);
}

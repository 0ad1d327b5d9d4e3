/* h_status: GET /health and GET /v1/status. */
#include <stdio.h>

#include "json_input.h"
#include "lease.h"
#include "log.h"
#include "pool.h"
#include "routes.h"

#define HEALTH_KAFKA_TIMEOUT_MS 1500

void h_health(struct request *req)
{
        struct json_object *o = json_object_new_object(), *checks = json_object_new_object();
        char err[256] = "";
        int healthy = 1;

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
                json_object_object_add(checks, "redis", json_object_new_string("error: unreachable"));
        }
        if (kafka_producer_check(req->w->kafka, HEALTH_KAFKA_TIMEOUT_MS, err, sizeof(err)) == 0) {
                json_object_object_add(checks, "kafka", json_object_new_string("ok"));
        } else {
                char msg[300];
                healthy = 0;
                snprintf(msg, sizeof(msg), "error: %s", err);
                json_object_object_add(checks, "kafka", json_object_new_string(msg));
        }
        /* A warm pool whose image fails to start: degraded, not down (claims
         * fall back to cold creates). */
        for (int i = 0; i < req->w->cfg->n_pools; i++) {
                struct json_object *p = json_object_new_object(), *f = NULL, *e = NULL;
                char msg[400];
                if (!p || pool_status(req->w->redis, req->w->cfg, req->w->cfg->pools[i].image, p) < 0 ||
                    !json_object_object_get_ex(p, "failures", &f) || json_object_get_int64(f) == 0) {
                        json_put(p);
                        continue;
                }
                json_object_object_get_ex(p, "error", &e);
                snprintf(msg, sizeof(msg), "error: pool %s: %s", req->w->cfg->pools[i].image,
                         e ? json_object_get_string(e) : "");
                json_object_object_add(checks, "pool", json_object_new_string(msg));
                if (healthy == 1)
                        healthy = 2;
                json_put(p);
        }
        json_object_object_add(o, "status", json_object_new_string(healthy == 1 ? "healthy" :
                                                                    healthy == 2 ? "degraded" : "unhealthy"));
        json_object_object_add(o, "checks", checks);
        if (healthy != 1)
                log_warn(LOG_KV({ "REQUEST_ID", req->request_id }), "health check failed: %s",
                         json_object_to_json_string_ext(checks, JSON_C_TO_STRING_PLAIN));
        reply_json(req, healthy ? 200 : 503, o);
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

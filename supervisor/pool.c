/* pool: a thread keeping the warm pools filled (lib/sandbox/pool.h), with
 * its own provider and Redis connection, so that making members (a create
 * and a start each) never holds up grants, provisioning or reaping. Every
 * supervisor runs one: members are reserved in Redis before they are made,
 * so two supervisors overshoot a pool by at most one member each. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/log.h"
#include "sandbox/pool.h"
#include "providers/provider_factory.h"
#include "supervisor.h"

#define POOL_IDLE_MS 200

struct sup_pool {
        struct broker_config cfg;
        struct provider *provider;
        struct redis_conn *redis;
        struct pool_state st;
        pthread_t thread;
        atomic_bool stop;
};

/* What a pool step did, logged here (lib/ reports, the boundary logs). */
static void pool_log(void *ctx, const struct pool_event *ev)
{
        (void)ctx;
        switch (ev->kind) {
        case POOL_EVENT_HOLD:
                log_info(LOG_KV({ "IMAGE", ev->image }), "pool: refill waits for the cold creates of its image in flight (at most %lld ms)",
                         ev->ms);
                break;
        case POOL_EVENT_RESUME:
                log_info(LOG_KV({ "IMAGE", ev->image }), "pool: refill resumes after %lld ms",
                         ev->ms);
                break;
        case POOL_EVENT_REMOVED:
                log_info(LOG_KV({ "SANDBOX_ID", ev->sid }), "pool: member removed (%s)", ev->why);
                break;
        case POOL_EVENT_FAILED:
                log_err(LOG_KV({ "IMAGE", ev->image }),
                        "pool: cannot make a member (retry in %lld ms): %s", ev->ms, ev->why);
                break;
        case POOL_EVENT_READY:
                log_debug(LOG_KV({ "SANDBOX_ID", ev->sid }, { "IMAGE", ev->image }),
                          "pool: member ready");
                break;
        }
}

static void *pool_main(void *ud)
{
        struct sup_pool *p = ud;
        const struct pool_report report = { pool_log, p };

        while (!atomic_load(&p->stop)) {
                int r = pool_step(p->redis, p->provider, &p->cfg, &p->st, &report);
                if (r > 0)
                        continue;
                if (r < 0)
                        log_debug(NULL, "pool: step failed (%d); retrying", r);
                usleep(POOL_IDLE_MS * 1000);
        }
        return NULL;
}

int sup_pool_start(struct sup *s)
{
        struct sup_pool *p;

        if (!s->provider || s->cfg.n_pools == 0) {
                if (s->cfg.pool[0])
                        log_warn(NULL, "pool: POOL=%s ignored without a sandbox provider",
                                 s->cfg.pool);
                return 0;
        }
        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->cfg = s->cfg;
        if (sup_conns_open(&p->cfg, &p->provider, &p->redis) < 0 ||
            pthread_create(&p->thread, NULL, pool_main, p) != 0) {
                log_err(NULL, "pool: cannot start the refill thread");
                sup_conns_close(p->provider, p->redis);
                free(p);
                return -EIO;
        }
        for (int i = 0; i < s->cfg.n_pools; i++) {
                char why[400];
                log_info(LOG_KV({ "IMAGE", s->cfg.pools[i].image }),
                         "pool: keeping %d ready (max age %d ms)", s->cfg.pools[i].size,
                         s->cfg.pool_max_age_ms);
                /* a pool that lease claims never take from: said once here,
                 * and in /health while no create asks for its image */
                if (!pool_serves_leases(&s->cfg, i, why, sizeof(why)))
                        log_warn(LOG_KV({ "IMAGE", s->cfg.pools[i].image }), "pool %s: %s; only OpenSandbox creates naming this image take its members",
                                 s->cfg.pools[i].image, why);
        }
        s->pool = p;
        return 0;
}

void sup_pool_stop(struct sup *s)
{
        struct sup_pool *p = s->pool;

        if (!p)
                return;
        atomic_store(&p->stop, true);
        pthread_join(p->thread, NULL); /* at most one member's create + start */
        sup_conns_close(p->provider, p->redis);
        free(p);
        s->pool = NULL;
}

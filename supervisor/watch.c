/* watch: a sandbox whose entrypoint ends shows it at once (docs/AGENT.md,
 * "Entrypoint"). A thread of the supervisor follows the provider's event
 * stream (Docker: GET /events, filtered to our containers' "die") with a
 * provider and a Redis connection of its own, and marks the record of every
 * sandbox that stopped running while its record said Running as Failed
 * (sandbox_exited). What the stream misses while it reconnects, the
 * reconciler finds. Backends without a stream (Daytona) leave it to the
 * reconciler alone. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "provider_factory.h"
#include "sandbox.h"
#include "supervisor.h"

#define WATCH_RETRY_MS 1000

struct sup_watch {
        struct broker_config cfg;
        struct provider *provider;
        struct redis_conn *redis;
        pthread_t thread;
        atomic_bool stop;
};

static bool watch_stop(void *ud)
{
        struct sup_watch *w = ud;

        return atomic_load(&w->stop);
}

static void watch_exit(void *ud, const char *sid, const char *ref, int exit_code)
{
        struct sup_watch *w = ud;
        int r = sandbox_exited(w->redis, sid, exit_code);

        (void)ref;
        if (r < 0)
                log_warn(LOG_KV({ "SANDBOX_ID", sid }),
                         "watch: sandbox stopped running, record not updated (%s); the reconciler will",
                         strerror(-r));
}

static void *watch_main(void *arg)
{
        struct sup_watch *w = arg;
        bool said = false;

        while (!atomic_load(&w->stop)) {
                char err[PROVIDER_ERR_MAX] = "";
                int r = provider_watch_exits(w->provider, w->cfg.key_prefix, watch_exit, watch_stop,
                                             w, err);

                if (r == 0 || r == -EOPNOTSUPP)
                        break;
                if (r == -ETIMEDOUT) /* a stream lives an hour: follow again at once */
                        continue;
                if (!said)
                        log_warn(NULL, "watch: provider events: %s; following again every %d ms",
                                 err[0] ? err : strerror(-r), WATCH_RETRY_MS);
                said = true;
                for (int i = 0; i < WATCH_RETRY_MS / 100 && !atomic_load(&w->stop); i++)
                        nanosleep(&(struct timespec){ 0, 100 * 1000 * 1000 }, NULL);
        }
        return NULL;
}

int sup_watch_start(struct sup *s)
{
        char err[PROVIDER_ERR_MAX];
        struct sup_watch *w;

        if (!s->provider || !s->provider->ops->watch_exits)
                return 0;
        w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        w->cfg = s->cfg;
        if (provider_new_from_config(&w->cfg, &w->provider, err) < 0 || !w->provider ||
            redis_conn_new(&w->cfg, &w->redis) < 0 ||
            pthread_create(&w->thread, NULL, watch_main, w) != 0) {
                log_err(NULL, "watch: cannot start the provider's event stream");
                redis_conn_free(w->redis);
                provider_free(w->provider);
                free(w);
                return -EIO;
        }
        s->watch = w;
        return 0;
}

void sup_watch_stop(struct sup *s)
{
        struct sup_watch *w = s->watch;

        if (!w)
                return;
        atomic_store(&w->stop, true);
        pthread_join(w->thread, NULL); /* the stream asks stop() about once a second */
        redis_conn_free(w->redis);
        provider_free(w->provider);
        free(w);
        s->watch = NULL;
}

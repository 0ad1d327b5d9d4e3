/* watch: the world watched, not assumed (docs/OPERATIONS.md, "What the
 * supervisor watches"). A thread of the supervisor follows the provider's
 * event stream (Docker: GET /events, filtered to our containers' "die",
 * "pause", "unpause" and "oom") with a provider and a Redis connection of
 * its own, and keeps records in step with what happened behind the
 * broker's back. The record follows what the container is now, inspected
 * through a second provider connection (the first carries the stream), not
 * what the event said: events can come late, after the broker has undone a
 * pause or restarted a stopped sandbox (sandbox_follow; the broker's own
 * pause, resume and stop move the record themselves and win the reason):
 *   die      a Running or Paused record of a container stopped or gone goes
 *            Failed: ENTRYPOINT_EXITED, or OOM_KILLED when an "oom" of the
 *            same sandbox came within WATCH_OOM_MS before it, or (an exit
 *            code 137 with no oom seen) the container's State.OOMKilled says so;
 *   pause,   Running <-> Paused after the container;
 *   unpause
 *   oom      remembered for the die that usually follows (a process killed
 *            by the kernel while PID 1 lives on changes nothing);
 * and a die of a warm pool member (no record yet) drops it from the pool
 * at once (pool_member_lost), not at the pool's next check.
 * What the stream misses while it reconnects, the reconciler finds (exits,
 * vanished containers, pause states). Backends without a stream (Daytona)
 * leave it to the reconciler alone. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/log.h"
#include "sandbox/pool.h"
#include "providers/provider_factory.h"
#include "sandbox/sandbox.h"
#include "supervisor.h"
#include "core/timeutil.h"

#define WATCH_RETRY_MS 1000
#define WATCH_OOM_MS 30000 /* an oom counts for a die this soon after it */
#define WATCH_OOM_MAX 64   /* sandboxes remembered at once (oldest go first) */

struct sup_watch {
        struct broker_config cfg;
        struct provider *provider;  /* busy with the event stream */
        struct provider *inspector; /* asks about a container meanwhile */
        struct redis_conn *redis;
        pthread_t thread;
        atomic_bool stop;
        /* recent "oom" events: only this thread reads and writes them */
        struct {
                char sid[64];
                int64_t at; /* monotonic ms */
        } oom[WATCH_OOM_MAX];
        int oom_next;
};

static bool watch_stop(void *ud)
{
        struct sup_watch *w = ud;

        return atomic_load(&w->stop);
}

/* Was sid out of memory within WATCH_OOM_MS? Forgets it either way. */
static bool oom_take(struct sup_watch *w, const char *sid, int64_t now)
{
        bool seen = false;

        for (int i = 0; i < WATCH_OOM_MAX; i++) {
                if (!w->oom[i].sid[0] || strcmp(w->oom[i].sid, sid))
                        continue;
                seen = seen || now - w->oom[i].at <= WATCH_OOM_MS;
                w->oom[i].sid[0] = '\0';
        }
        return seen;
}

static void oom_note(struct sup_watch *w, const char *sid, int64_t now)
{
        snprintf(w->oom[w->oom_next].sid, sizeof(w->oom[0].sid), "%s", sid);
        w->oom[w->oom_next].at = now;
        w->oom_next = (w->oom_next + 1) % WATCH_OOM_MAX;
}

static void watch_event(void *ud, const struct sandbox_event *ev)
{
        struct sup_watch *w = ud;
        const char *sid = ev->info.sandbox_id;
        int64_t now = timeutil_mono_ms();
        int r = 0;

        switch (ev->kind) {
        case SANDBOX_EVENT_EXITED:
        case SANDBOX_EVENT_PAUSED:
        case SANDBOX_EVENT_UNPAUSED:
                if (ev->info.ref[0])
                        r = sandbox_follow(w->redis, w->inspector, &w->cfg, sid, ev->info.ref,
                                           ev->kind == SANDBOX_EVENT_EXITED ? ev->info.exit_code : -1,
                                           ev->kind == SANDBOX_EVENT_EXITED && oom_take(w, sid, now));
                /* a warm pool member has no record to follow: it leaves the pool */
                if (ev->kind == SANDBOX_EVENT_EXITED) {
                        int lost = pool_member_lost(w->redis, w->inspector, sid);

                        if (lost < 0)
                                log_warn(LOG_KV({ "SANDBOX_ID", sid }),
                                         "watch: pool membership not checked");
                        else if (lost > 0)
                                log_info(LOG_KV({ "SANDBOX_ID", sid }), "pool: member removed (%s)",
                                         POOL_WHY_WATCH);
                }
                break;
        case SANDBOX_EVENT_OOM:
                oom_note(w, sid, now);
                log_warn(LOG_KV({ "SANDBOX_ID", sid }), "watch: the sandbox hit its memory limit; "
                                                        "the kernel killed a process in it");
                break;
        }
        if (r < 0)
                log_warn(LOG_KV({ "SANDBOX_ID", sid }), "watch: the sandbox's container changed, record not updated (%s); the reconciler will",
                         strerror(-r));
}

static void *watch_main(void *arg)
{
        struct sup_watch *w = arg;
        bool said = false;

        while (!atomic_load(&w->stop)) {
                char err[PROVIDER_ERR_MAX] = "";
                int r = provider_watch_events(w->provider, w->cfg.key_prefix, watch_event,
                                              watch_stop, w, err);

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

        if (!s->provider || !provider_can_watch_events(s->provider))
                return 0;
        w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        w->cfg = s->cfg;
        if (sup_conns_open(&w->cfg, &w->provider, &w->redis) < 0 ||
            provider_new_from_config(&w->cfg, &w->inspector, err) < 0 || !w->inspector ||
            pthread_create(&w->thread, NULL, watch_main, w) != 0) {
                log_err(NULL, "watch: cannot start the provider's event stream");
                provider_free(w->inspector);
                sup_conns_close(w->provider, w->redis);
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
        provider_free(w->inspector);
        sup_conns_close(w->provider, w->redis);
        free(w);
        s->watch = NULL;
}

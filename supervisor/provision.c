/* provision: the supervisor's provisioning workers (docs/ARCHITECTURE.md,
 * "Provisioning workers"). Every lease to make comes from Redis: the
 * intents that acquires and grants store with their leases
 * (sup_provision_intake: as many as workers are idle, when woken or a
 * worker frees), and the leases another process left 'provisioning' (the
 * recovery, sandboxes.c). They go onto a bounded queue served by a fixed
 * set of threads (PROVISION_WORKERS), each with its own provider and Redis
 * connection, which make their sandboxes (sandbox_lease_ready). So grants,
 * reaping and reconciling never wait behind the provider, and a burst of
 * grants is made in parallel.
 *
 * Nothing here is durable, nor needs to be: a lease in the queue or in a
 * worker's hands is 'provisioning' in Redis, its intent taken
 * (intents_take.lua restamped its P..provisioning entry), and a supervisor
 * that dies (or stops) with work queued leaves it to the recovery of the
 * next one (lease_stale.lua), seconds later. An id is queued at most once
 * per process: the recovery re-offers every stale lease each second and
 * must not queue one twice while it waits. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/lease.h"
#include "core/log.h"
#include "core/metrics.h"
#include "providers/provider_factory.h"
#include "sandbox/sandbox.h"
#include "supervisor.h"
#include "core/timeutil.h"

struct job {
        char lease_id[33];
        int64_t queued_at; /* monotonic ms */
};

struct worker {
        struct sup_provision *p;
        struct provider *provider;
        struct redis_conn *redis;
        pthread_t thread;
        bool started;
        char lease_id[33]; /* the lease being made, "" idle (under p->mu) */
};

struct sup_provision {
        struct broker_config cfg;
        pthread_mutex_t mu;
        pthread_cond_t cond;
        struct job queue[SUP_PROVISION_QUEUE];
        int head, len;
        bool stop;
        bool freed; /* a worker went idle since the last intake */
        int n;
        struct worker w[PROVISION_WORKERS_MAX];
};

/* Under p->mu: is id queued or being made here? */
static bool known(const struct sup_provision *p, const char *id)
{
        for (int i = 0; i < p->len; i++)
                if (!strcmp(p->queue[(p->head + i) % SUP_PROVISION_QUEUE].lease_id, id))
                        return true;
        for (int i = 0; i < p->n; i++)
                if (!strcmp(p->w[i].lease_id, id))
                        return true;
        return false;
}

static void make(struct worker *w, const struct job *j)
{
        struct sup_provision *p = w->p;
        char err[SANDBOX_ERR_MAX];
        int64_t t0 = timeutil_mono_ms();
        int r;

        metrics_observe_ms(METRICS_PROVISION_WAIT, t0 - j->queued_at);
        r = sandbox_lease_ready(w->redis, w->provider, &p->cfg, j->lease_id, NULL, err);
        metrics_add(r == 0 ? "broker_provisions_total{result=\"ready\"}"
                    : r == -ENOENT ? "broker_provisions_total{result=\"gone\"}"
                                   : "broker_provisions_total{result=\"failed\"}", 1);
        if (r == 0)
                log_info(LOG_KV({ "LEASE_ID", j->lease_id }),
                         "sandbox ready for a lease (%lld ms queued, %lld ms made)",
                         (long long)(t0 - j->queued_at), (long long)(timeutil_mono_ms() - t0));
        else if (r != -ENOENT)
                log_err(LOG_KV({ "LEASE_ID", j->lease_id }), "sandbox for a lease failed: %s",
                        err[0] ? err : strerror(-r));
}

static void *worker_main(void *arg)
{
        struct worker *w = arg;
        struct sup_provision *p = w->p;

        pthread_mutex_lock(&p->mu);
        for (;;) {
                while (!p->stop && p->len == 0)
                        pthread_cond_wait(&p->cond, &p->mu);
                if (p->stop)
                        break;
                struct job j = p->queue[p->head];
                p->head = (p->head + 1) % SUP_PROVISION_QUEUE;
                p->len--;
                snprintf(w->lease_id, sizeof(w->lease_id), "%s", j.lease_id);
                pthread_mutex_unlock(&p->mu);
                make(w, &j);
                pthread_mutex_lock(&p->mu);
                w->lease_id[0] = '\0';
                p->freed = true;
        }
        pthread_mutex_unlock(&p->mu);
        return NULL;
}

/* Queue lease_id as if it had been queued at queued_at (monotonic ms): an
 * intent's wait in Redis counts as queueing. */
static int submit_at(struct sup *s, const char *lease_id, int64_t queued_at)
{
        struct sup_provision *p = s->provision;
        int r = 0;

        if (!p)
                return -ENOTCONN;
        if (strlen(lease_id) >= sizeof(p->queue[0].lease_id))
                return -EINVAL;
        pthread_mutex_lock(&p->mu);
        if (known(p, lease_id)) {
                r = -EALREADY;
        } else if (p->len >= SUP_PROVISION_QUEUE) {
                r = -ENOSPC; /* it stays 'provisioning': the recovery offers it again */
        } else {
                struct job *j = &p->queue[(p->head + p->len) % SUP_PROVISION_QUEUE];
                snprintf(j->lease_id, sizeof(j->lease_id), "%s", lease_id);
                j->queued_at = queued_at;
                p->len++;
                pthread_cond_signal(&p->cond);
        }
        pthread_mutex_unlock(&p->mu);
        return r;
}

int sup_provision_submit(struct sup *s, const char *lease_id)
{
        return submit_at(s, lease_id, timeutil_mono_ms());
}

struct intake {
        struct sup *s;
        int taken;
};

static void intake_one(void *ud, const char *lease_id, int64_t waited_ms)
{
        struct intake *in = ud;
        int64_t at = timeutil_mono_ms();

        if (waited_ms > 0)
                at -= waited_ms;
        if (submit_at(in->s, lease_id, at) == 0)
                in->taken++;
}

int sup_provision_intake(struct sup *s, bool woken)
{
        struct sup_provision *p = s->provision;
        struct intake in = { s, 0 };
        int idle, busy = 0, r;

        if (!p)
                return 0;
        pthread_mutex_lock(&p->mu);
        if (p->freed)
                woken = true;
        p->freed = false;
        for (int i = 0; i < p->n; i++)
                busy += p->w[i].lease_id[0] != '\0';
        idle = p->n - busy - p->len;
        pthread_mutex_unlock(&p->mu);
        /* Take only what idle workers start now: the rest stays in Redis for
         * another supervisor's idle workers, or ours when one frees. */
        if (!woken || idle <= 0)
                return 0;
        r = lease_intents_take(s->redis, idle, intake_one, &in);
        return r < 0 ? r : in.taken;
}

void sup_provision_load(struct sup *s, int *queued, int *busy)
{
        struct sup_provision *p = s->provision;

        *queued = *busy = 0;
        if (!p)
                return;
        pthread_mutex_lock(&p->mu);
        *queued = p->len;
        for (int i = 0; i < p->n; i++)
                *busy += p->w[i].lease_id[0] != '\0';
        pthread_mutex_unlock(&p->mu);
}

static void provision_free(struct sup_provision *p)
{
        for (int i = 0; i < PROVISION_WORKERS_MAX; i++)
                sup_conns_close(p->w[i].provider, p->w[i].redis);
        pthread_cond_destroy(&p->cond);
        pthread_mutex_destroy(&p->mu);
        free(p);
}

static void provision_join(struct sup_provision *p)
{
        pthread_mutex_lock(&p->mu);
        p->stop = true;
        pthread_cond_broadcast(&p->cond);
        pthread_mutex_unlock(&p->mu);
        for (int i = 0; i < p->n; i++)
                if (p->w[i].started)
                        pthread_join(p->w[i].thread, NULL);
}

int sup_provision_start(struct sup *s)
{
        struct sup_provision *p;

        if (!s->provider)
                return 0;
        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->cfg = s->cfg;
        pthread_mutex_init(&p->mu, NULL);
        pthread_cond_init(&p->cond, NULL);
        for (int i = 0; i < s->cfg.provision_workers; i++) {
                struct worker *w = &p->w[i];

                w->p = p;
                if (sup_conns_open(&p->cfg, &w->provider, &w->redis) < 0)
                        goto fail;
                p->n = i + 1;
                if (pthread_create(&w->thread, NULL, worker_main, w) != 0)
                        goto fail;
                w->started = true;
        }
        log_info(NULL, "provisioning: %d worker(s), up to %d leases queued", p->n, SUP_PROVISION_QUEUE);
        s->provision = p;
        return 0;
fail:
        log_err(NULL, "provisioning: cannot start worker %d of %d", p->n, s->cfg.provision_workers);
        provision_join(p);
        provision_free(p);
        return -EIO;
}

void sup_provision_stop(struct sup *s)
{
        struct sup_provision *p = s->provision;
        int left;

        if (!p)
                return;
        /* Workers finish the sandbox in hand (bounded by the provider's
         * deadline); what is still queued stays 'provisioning' in Redis. */
        provision_join(p);
        left = p->len; /* the workers are gone: nobody takes from it now */
        if (left)
                log_info(NULL, "provisioning: %d queued lease(s) left to the next supervisor's recovery",
                         left);
        provision_free(p);
        s->provision = NULL;
}

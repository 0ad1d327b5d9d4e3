/* sandboxes: the supervisor's side of sandbox life: teardown of released
 * sandboxes, the recovery of leases left 'provisioning' (handed to the
 * provisioning workers, provision.c), and the reconciler that heals crashes
 * (docs/ARCHITECTURE.md §5: no container outlives its record, and no
 * snapshot image its snapshot).
 *
 * Teardowns and the reconciler wait for the provider (a docker stop takes
 * seconds; a reconcile lists every container), so they run on a thread of
 * their own with its own provider and Redis connection: grants, intents
 * and reaping on the main loop never wait behind them. The recovery only
 * reads Redis and stays on the loop. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "queue/audit.h"
#include "store/lease.h"
#include "core/log.h"
#include "core/metrics.h"
#include "sandbox/snapshot_store.h"
#include "providers/provider_factory.h"
#include "sandbox/sandbox.h"
#include "supervisor.h"
#include "core/timeutil.h"

#define TEARDOWN_BATCH 8     /* between checks of the stop flag and the reconciler */
#define HOUSEKEEP_IDLE_MS 50 /* sleep when no teardown waits */

struct sup_sandboxes {
        struct broker_config cfg;
        struct provider *provider;
        struct redis_conn *redis;
        struct kafka_producer *events; /* the supervisor's (thread-safe) */
        pthread_t thread;
        atomic_bool stop;
        int64_t next_reconcile; /* monotonic ms */
};

/* A sandbox the teardown removed because its lease or its parking expired
 * gets a sandbox.expired event (removals a client asked for are the
 * handler's sandbox.deleted; parking a sandbox is no event). */
static void audit_teardown(struct sup_sandboxes *s, const char *sid)
{
        struct sandbox_owner o;
        char tenant[AUDIT_TENANT_MAX];
        const char *bare;

        if (sandbox_owner_get(s->redis, &s->cfg, sid, &o) < 0 || strcmp(o.state, "Terminated") ||
            (strcmp(o.reason, "LEASE_EXPIRED") && strcmp(o.reason, "IDLE_EXPIRED")))
                return;
        (void)audit_split_user(o.user_id, tenant, sizeof(tenant), &bare);
        audit_emit(s->events, &(struct audit_event){ .type = AUDIT_SANDBOX_EXPIRED,
                                                     .tenant = o.tenant[0] ? o.tenant : tenant,
                                                     .user_id = bare,
                                                     .sandbox_id = sid,
                                                     .reason = o.reason });
}

/* Up to TEARDOWN_BATCH teardowns; returns how many were done (0: none
 * waits, or Redis or the provider failed: try again after a pause). */
static int teardown(struct sup_sandboxes *s)
{
        char sid[33], err[SANDBOX_ERR_MAX];
        int i;

        for (i = 0; i < TEARDOWN_BATCH; i++) {
                int r = sandbox_teardown_next(s->redis, s->provider, &s->cfg, sid, err);
                if (r == 0)
                        break;
                if (r < 0) {
                        if (sid[0])
                                log_err(LOG_KV({ "SANDBOX_ID", sid }),
                                        "teardown failed (the reconciler retries): %s", err);
                        break;
                }
                log_info(LOG_KV({ "SANDBOX_ID", sid }), "sandbox torn down");
                audit_teardown(s, sid);
        }
        return i;
}

static void recover_one(void *ud, const char *lease_id, int64_t waited_ms)
{
        (void)waited_ms;
        if (sup_provision_submit(ud, lease_id) == 0)
                log_info(LOG_KV({ "LEASE_ID", lease_id }),
                         "a lease left provisioning (by a process that stopped, or a full queue) "
                         "goes to the workers");
}

void sup_sandboxes_recover(struct sup *s)
{
        int r;

        if (!s->provider)
                return;
        r = lease_stale(s->redis, SUP_RECOVER_AGE_MS, SUP_RECOVER_LIMIT, recover_one, s);
        if (r < 0)
                log_warn(NULL, "recovery of abandoned provisioning: %s", strerror(-r));
}

/* Snapshot images nobody's (snapshot_store_reap): a commit cut short by
 * its process's death, or one that landed after its snapshot failed. */
static void reconcile_snapshots(struct sup_sandboxes *s)
{
        char err[SNAPSHOT_ERR_MAX];
        int removed = 0, r;

        r = snapshot_store_reap(s->redis, s->provider, &s->cfg, &removed, err);
        if (r < 0)
                log_warn(NULL, "reconciler: snapshot images: %s%s%s", strerror(-r),
                         err[0] ? ": " : "", err);
        if (removed > 0) {
                metrics_add("broker_snapshot_images_reaped_total", removed);
                log_info(NULL, "reconciler: %d image(s) of failed or deleted snapshots removed",
                         removed);
        }
}

/* What a round did to one sandbox or lease, logged here (lib/ reports, the
 * boundary logs). */
static void reconcile_log(void *ctx, const struct sandbox_reconcile_item *it)
{
        (void)ctx;
        switch (it->kind) {
        case SANDBOX_RECONCILE_ORPHAN_REMOVED:
                log_info(LOG_KV({ "SANDBOX_ID", it->id }),
                         "reconciler: removed orphan container %.12s (record %s)", it->ref,
                         it->state);
                break;
        case SANDBOX_RECONCILE_CONTAINER_GONE:
                log_warn(LOG_KV({ "SANDBOX_ID", it->id }),
                         "reconciler: container of a %s sandbox is gone; marked Failed", it->state);
                break;
        case SANDBOX_RECONCILE_LEASE_RECOVERED:
                log_info(LOG_KV({ "LEASE_ID", it->id }),
                         "reconciler: finished a lease left provisioning");
                break;
        }
}

static void reconcile(struct sup_sandboxes *s)
{
        static const struct sandbox_reconcile_report report = { reconcile_log, NULL };
        struct sandbox_reconcile_stats st;
        char err[SANDBOX_ERR_MAX];
        int r;

        reconcile_snapshots(s);
        r = sandbox_reconcile(s->redis, s->provider, &s->cfg, &st, &report, err);
        if (r < 0) {
                log_warn(NULL, "reconciler: %s%s%s", strerror(-r), err[0] ? ": " : "", err);
                return;
        }
        if (st.orphans_removed || st.records_failed || st.records_followed || st.leases_recovered ||
            st.teardowns_requeued || st.host_orphans)
                log_info(
                        NULL,
                        "reconciler: %d orphan(s) removed, %d record(s) failed, %d record(s) "
                        "paused or "
                        "unpaused after their container, %d lease(s) recovered, %d teardown(s) "
                        "requeued, "
                        "%d host leftover(s) of removed containers reaped (run directories, disks)",
                        st.orphans_removed, st.records_failed, st.records_followed,
                        st.leases_recovered, st.teardowns_requeued, st.host_orphans);
}

static void *housekeep_main(void *arg)
{
        struct sup_sandboxes *s = arg;

        while (!atomic_load(&s->stop)) {
                int64_t now = timeutil_mono_ms();

                if (now >= s->next_reconcile) {
                        s->next_reconcile = now + s->cfg.reconcile_ms;
                        reconcile(s);
                }
                if (teardown(s) == 0)
                        nanosleep(&(struct timespec){ 0, HOUSEKEEP_IDLE_MS * 1000 * 1000 }, NULL);
        }
        return NULL;
}

int sup_sandboxes_start(struct sup *s)
{
        struct sup_sandboxes *h;

        if (!s->provider)
                return 0;
        h = calloc(1, sizeof(*h));
        if (!h)
                return -ENOMEM;
        h->cfg = s->cfg;
        h->events = s->events;
        if (sup_conns_open(&h->cfg, &h->provider, &h->redis) < 0 ||
            pthread_create(&h->thread, NULL, housekeep_main, h) != 0) {
                log_err(NULL, "sandboxes: cannot start the teardown and reconcile thread");
                sup_conns_close(h->provider, h->redis);
                free(h);
                return -EIO;
        }
        s->sandboxes = h;
        return 0;
}

void sup_sandboxes_stop(struct sup *s)
{
        struct sup_sandboxes *h = s->sandboxes;

        if (!h)
                return;
        /* the teardown in hand finishes (bounded by the provider's
         * deadline); what waits stays in Redis for the next supervisor */
        atomic_store(&h->stop, true);
        pthread_join(h->thread, NULL);
        sup_conns_close(h->provider, h->redis);
        free(h);
        s->sandboxes = NULL;
}

/* sandboxes: the supervisor's side of sandbox life: sandboxes for the
 * leases it granted from the queue, teardown of released ones, and the
 * reconciler that heals crashes (docs/ARCHITECTURE.md §5: no container outlives its record). */
#include <errno.h>
#include <string.h>

#include "audit.h"
#include "log.h"
#include "sandbox.h"
#include "supervisor.h"

#define TEARDOWN_BATCH 8 /* per loop turn, so grants are not starved */

void sup_sandboxes_provision(struct sup *s)
{
        char err[SANDBOX_ERR_MAX];

        for (int i = 0; i < s->n_granted; i++) {
                const char *id = s->granted[i];
                int r = sandbox_lease_ready(s->redis, s->provider, &s->cfg, id, NULL, err);
                sup_notify_progress(); /* each sandbox made is progress; a batch may be long */
                if (r == 0)
                        log_info(LOG_KV({ "LEASE_ID", id }), "sandbox ready for a lease granted from the queue");
                else if (r != -ENOENT)
                        log_err(LOG_KV({ "LEASE_ID", id }), "sandbox for a queued lease failed: %s", err);
        }
        s->n_granted = 0;
}

/* A sandbox the teardown removed because its lease or its parking expired
 * gets a sandbox.expired event (removals a client asked for are the
 * handler's sandbox.deleted; parking a sandbox is no event). */
static void audit_teardown(struct sup *s, const char *sid)
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
                                                     .user_id = bare, .sandbox_id = sid,
                                                     .reason = o.reason });
}

void sup_sandboxes_teardown(struct sup *s)
{
        char sid[33], err[SANDBOX_ERR_MAX];

        if (!s->provider)
                return;
        for (int i = 0; i < TEARDOWN_BATCH; i++) {
                int r = sandbox_teardown_next(s->redis, s->provider, &s->cfg, sid, err);
                if (r == 0)
                        return;
                if (r < 0) {
                        if (sid[0])
                                log_err(LOG_KV({ "SANDBOX_ID", sid }),
                                        "teardown failed (the reconciler retries): %s", err);
                        return;
                }
                log_info(LOG_KV({ "SANDBOX_ID", sid }), "sandbox torn down");
                audit_teardown(s, sid);
        }
}

void sup_sandboxes_recover(struct sup *s)
{
        int r;

        if (!s->provider)
                return;
        r = sandbox_recover_provisioning(s->redis, s->provider, &s->cfg, SUP_RECOVER_AGE_MS,
                                         SUP_GRANTED_MAX);
        if (r < 0)
                log_warn(NULL, "recovery of abandoned provisioning: %s", strerror(-r));
}

void sup_sandboxes_reconcile(struct sup *s)
{
        struct sandbox_reconcile_stats st;
        char err[SANDBOX_ERR_MAX];
        int r;

        if (!s->provider)
                return;
        r = sandbox_reconcile(s->redis, s->provider, &s->cfg, &st, err);
        if (r < 0) {
                log_warn(NULL, "reconciler: %s%s%s", strerror(-r), err[0] ? ": " : "", err);
                return;
        }
        if (st.orphans_removed || st.records_failed || st.leases_recovered || st.teardowns_requeued)
                log_info(NULL, "reconciler: %d orphan(s) removed, %d record(s) failed, %d lease(s) recovered, %d teardown(s) requeued",
                         st.orphans_removed, st.records_failed, st.leases_recovered, st.teardowns_requeued);
}

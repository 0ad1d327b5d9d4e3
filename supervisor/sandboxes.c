/* sandboxes: the supervisor's side of sandbox life: teardown of released
 * sandboxes, the recovery of leases left 'provisioning' (handed to the
 * provisioning workers, provision.c), and the reconciler that heals crashes (docs/ARCHITECTURE.md §5: no container outlives its record). */
#include <errno.h>
#include <string.h>

#include "audit.h"
#include "lease.h"
#include "log.h"
#include "sandbox.h"
#include "supervisor.h"

#define TEARDOWN_BATCH 8 /* per loop turn, so grants are not starved */

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
        redisReply *rep = NULL;
        int r;

        if (!s->provider)
                return;
        r = lease_stale(s->redis, SUP_RECOVER_AGE_MS, SUP_RECOVER_LIMIT, &rep);
        if (r < 0) {
                log_warn(NULL, "recovery of abandoned provisioning: %s", strerror(-r));
                return;
        }
        for (size_t i = 0; i < rep->elements; i++) {
                const redisReply *id = rep->element[i];

                if (id->type != REDIS_REPLY_STRING)
                        continue;
                r = sup_provision_submit(s, id->str);
                if (r == 0)
                        log_info(LOG_KV({ "LEASE_ID", id->str }),
                                 "a lease left provisioning (by a process that stopped, or a full queue) goes to the workers");
        }
        reply_free(rep);
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

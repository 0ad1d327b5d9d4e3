/* reaper: frees the slots of leases whose heartbeats stopped, skips
 * tickets nobody polls any more, and ends OpenSandbox sandboxes whose
 * create's answer reached nobody (osb_store_reap_unanswered). Runs every
 * SUPERVISOR_TICK_MS in every supervisor; the scripts are atomic, so
 * concurrent reapers never double-free. */
#include "queue/audit.h"
#include "store/lease.h"
#include "core/log.h"
#include "core/metrics.h"
#include "sandbox/osb_store.h"
#include "sandbox/sandbox.h"
#include "supervisor.h"

#define REAP_BATCH 500

static void on_reaped(void *ud, const char *lease, const char *user, const char *session)
{
        struct sup *s = ud;
        char tenant[AUDIT_TENANT_MAX];
        const char *bare;

        metrics_add("broker_leases_reaped_total", 1);
        log_info(LOG_KV({ "LEASE_ID", lease }, { "USER_ID", user }, { "SESSION_ID", session }),
                 "lease expired: no heartbeat within LEASE_TTL_MS; released");
        (void)audit_split_user(user, tenant, sizeof(tenant), &bare);
        audit_emit(s->events, &(struct audit_event){ .type = AUDIT_LEASE_EXPIRED, .tenant = tenant,
                                                     .user_id = bare, .session_id = session,
                                                     .lease_id = lease, .reason = "LEASE_EXPIRED" });
}

static void on_expired(void *ud, const char *ticket)
{
        sup_ticket_expired(ud, ticket);
}

static void on_unanswered(void *ud, const char *sid, const char *tenant)
{
        struct sup *s = ud;

        metrics_add("broker_sandboxes_unanswered_total", 1);
        log_warn(LOG_KV({ "SANDBOX_ID", sid }, { "TENANT", tenant }),
                 "sandbox removed: no client got its create's answer within %d s "
                 "(OPENSANDBOX_UNANSWERED_S) and no request named it since",
                 s->cfg.osb_unanswered_s);
        audit_emit(s->events, &(struct audit_event){ .type = AUDIT_SANDBOX_EXPIRED, .tenant = tenant,
                                                     .sandbox_id = sid, .reason = "CREATE_UNANSWERED" });
}

int sup_reap_expired(struct sup *s)
{
        const struct lease_grant_hooks hooks = { NULL, on_expired, on_reaped, s };
        int freed = 0, total = 0, r;

        do {
                r = lease_reap(s->redis, &s->cfg, REAP_BATCH,
                               s->provider ? sandbox_provision_max_ms(&s->cfg) : 0, &hooks, &freed);
                if (r < 0)
                        return r;
                total += freed;
        } while (freed == REAP_BATCH);
        /* their slots free through their leases' release, counted next round */
        if (s->provider && (r = osb_store_reap_unanswered(s->redis, &s->cfg, REAP_BATCH, on_unanswered, s)) < 0)
                return r;
        return total;
}

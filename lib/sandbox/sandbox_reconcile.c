/* sandbox_reconcile: the reconciler's round (sandbox.h,
 * sandbox_reconcile): interrupted teardowns requeued, orphan containers
 * removed, records whose container vanished failed, pause states the event
 * stream missed followed, leases a crashed process left provisioning
 * finished, the backend's host leftovers reaped. */
#include "sandbox/sandbox.h"
#include "sandbox/sandbox_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/timeutil.h"

#define SCAN_LIMIT 10000

struct managed_list {
        struct sandbox_info *items;
        size_t len, cap;
        int oom;
};

static void collect_managed(void *ud, const struct sandbox_info *info)
{
        struct managed_list *l = ud;

        if (l->len == l->cap) {
                size_t cap = l->cap ? 2 * l->cap : 64;
                struct sandbox_info *n = realloc(l->items, cap * sizeof(*n));
                if (!n) {
                        l->oom = 1;
                        return;
                }
                l->items = n;
                l->cap = cap;
        }
        l->items[l->len++] = *info;
}

static int requeue_teardowns(struct redis_conn *rc, const struct broker_config *cfg, int *count)
{
        char src[96], dst[96];
        int r = 0;

        snprintf(src, sizeof(src), "%steardown:busy", cfg->key_prefix);
        snprintf(dst, sizeof(dst), "%steardown", cfg->key_prefix);
        for (;;) {
                redisReply *rep = NULL;
                const char *argv[] = { "LMOVE", src, dst, "LEFT", "RIGHT" };
                r = redis_conn_command(rc, 5, argv, &rep);
                if (r < 0)
                        return r;
                int moved = reply_is_str(rep, NULL);
                reply_free(rep);
                if (!moved)
                        return 0;
                (*count)++;
        }
}

static bool pool_is_member(struct redis_conn *rc, const char *sid)
{
        redisReply *rep = NULL;
        const char *argv[] = { "member", sid };
        bool yes;

        if (redis_conn_script(rc, LUA_WPOOL, 2, argv, &rep) < 0)
                return true; /* unknown: keep it, the next round decides */
        yes = rep->type == REDIS_REPLY_INTEGER && rep->integer == 1;
        reply_free(rep);
        return yes;
}

static void report_item(const struct sandbox_reconcile_report *report,
                        enum sandbox_reconcile_kind kind, const char *id, const char *ref,
                        const char *state)
{
        const struct sandbox_reconcile_item it = { kind, id, ref, state };

        if (report && report->item)
                report->item(report->ctx, &it);
}

/* See sandbox_internal.h. The pool is asked first: a claim turns a member
 * into a record with the same id in one script (common.lua wpool_take), so
 * "no longer a member" read first means the record, if the claim made one,
 * is there when it is read next. The other order read "no record" before
 * the claim and "not a member" after it, and removed the claimed sandbox's
 * container (two supervisors, a claim storm). */
int sandbox_orphan_check(struct redis_conn *rc, const struct broker_config *cfg, const char *sid,
                         char *state, size_t size)
{
        int r;

        state[0] = '\0';
        if (pool_is_member(rc, sid))
                return 0; /* a warm pool member (pool.h keeps those) */
        r = sandbox_record_state(rc, cfg, sid, state, size, NULL);
        if (r < 0)
                return r;
        return !state[0] || !strcmp(state, "Terminated") || !strcmp(state, "Failed");
}

int sandbox_reconcile(struct redis_conn *rc, struct provider *pv, const struct broker_config *cfg,
                      struct sandbox_reconcile_stats *st,
                      const struct sandbox_reconcile_report *report, char *err)
{
        struct managed_list l = { 0 };
        redisReply *rep = NULL, *boxes, *stale;
        char older[16], limit[16], state[16], ignored[PROVIDER_ERR_MAX];
        int64_t listed;
        int r;

        memset(st, 0, sizeof(*st));
        err[0] = '\0';
        r = requeue_teardowns(rc, cfg, &st->teardowns_requeued);
        if (r < 0)
                return r;
        listed = timeutil_mono_ms();
        r = provider_list_managed(pv, collect_managed, &l, err);
        if (r < 0 || l.oom) {
                free(l.items);
                return r < 0 ? r : -ENOMEM;
        }
        /* Containers of ours whose record is gone or finished are orphans. */
        for (size_t i = 0; i < l.len; i++) {
                const struct sandbox_info *c = &l.items[i];
                if (strcmp(c->prefix, cfg->key_prefix) != 0)
                        continue; /* another broker's (or test's) sandbox */
                r = sandbox_orphan_check(rc, cfg, c->sandbox_id, state, sizeof(state));
                if (r < 0)
                        goto out;
                if (r == 0)
                        continue;
                if (provider_remove(pv, c->ref, ignored) == 0) {
                        st->orphans_removed++;
                        report_item(report, SANDBOX_RECONCILE_ORPHAN_REMOVED, c->sandbox_id, c->ref,
                                    state[0] ? state : "missing");
                }
        }
        /* Records whose container vanished; leases a crash left provisioning. */
        snprintf(older, sizeof(older), "%d", sandbox_provision_max_ms(cfg));
        snprintf(limit, sizeof(limit), "%d", SCAN_LIMIT);
        const char *argv[] = { older, limit };
        r = redis_conn_script(rc, LUA_SANDBOX_SCAN, 2, argv, &rep);
        if (r < 0)
                goto out;
        if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 2) {
                r = -EPROTO;
                goto out;
        }
        boxes = rep->element[0];
        stale = rep->element[1];
        for (size_t i = 0; i < boxes->elements; i++) {
                const redisReply *b = boxes->element[i];
                bool live = false;
                if (b->type != REDIS_REPLY_ARRAY || b->elements != 4 ||
                    !reply_is_str(b->element[0], NULL) || !reply_is_str(b->element[1], NULL))
                        continue;
                const char *sid = b->element[0]->str, *bstate = b->element[1]->str;
                if (strcmp(bstate, "Running") && strcmp(bstate, "Paused") && strcmp(bstate, "Stopped"))
                        continue;
                const struct sandbox_info *seen = NULL;
                for (size_t j = 0; j < l.len && !seen; j++)
                        if (strcmp(l.items[j].sandbox_id, sid) == 0)
                                seen = &l.items[j];
                live = seen != NULL;
                /* an exit the event stream missed (a restart, a broken stream) */
                if (seen && seen->state == SANDBOX_RUN_EXITED && !strcmp(bstate, "Running") &&
                    sandbox_exited(rc, sid, -1, false) == 1)
                        st->records_failed++;
                /* a pause or unpause the stream missed. Only for a record
                 * unmoved since before the listing (a second of margin): one
                 * moved since may be the broker's own pause or resume, of
                 * a container the listing saw before it */
                if (seen && b->element[3]->type == REDIS_REPLY_INTEGER &&
                    b->element[3]->integer > timeutil_mono_ms() - listed + 1000 &&
                    sandbox_pause_follow(rc, sid, bstate, "", seen->state) == 1)
                        st->records_followed++;
                if (live)
                        continue;
                if (sandbox_transition(rc, sid, bstate, "Failed", "CONTAINER_MISSING",
                                       "the sandbox's container disappeared", "") == 0) {
                        st->records_failed++;
                        report_item(report, SANDBOX_RECONCILE_CONTAINER_GONE, sid, NULL, bstate);
                }
        }
        /* what the backend keeps on the host for containers gone (the
         * containers' orphans above are gone by now too) */
        if (provider_reap_orphans(pv, &st->host_orphans, ignored) < 0)
                st->host_orphans = 0;
        for (size_t i = 0; i < stale->elements; i++) {
                char why[SANDBOX_ERR_MAX];
                if (!reply_is_str(stale->element[i], NULL))
                        continue;
                if (sandbox_lease_ready(rc, pv, cfg, stale->element[i]->str, NULL, why) == 0) {
                        st->leases_recovered++;
                        report_item(report, SANDBOX_RECONCILE_LEASE_RECOVERED,
                                    stale->element[i]->str, NULL, NULL);
                }
        }
        r = 0;
out:
        reply_free(rep);
        free(l.items);
        return r;
}

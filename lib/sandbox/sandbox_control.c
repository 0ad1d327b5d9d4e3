/* sandbox_control: start, stop, pause, resume and delete of a sandbox that
 * exists. See sandbox_control.h. */
#include "sandbox/sandbox_control.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "store/lease.h"
#include "sandbox/osb_store.h"
#include "sandbox/volume.h"

static void outcome_init(struct sandbox_control_outcome *ret)
{
        memset(ret, 0, sizeof(*ret));
        ret->kind = SANDBOX_CONTROL_DONE;
}

static void refused(struct sandbox_control_outcome *ret, const char *state)
{
        ret->kind = SANDBOX_CONTROL_REFUSED;
        snprintf(ret->state, sizeof(ret->state), "%s", state);
}

static void provider_failed(struct sandbox_control_outcome *ret, int r)
{
        ret->kind = SANDBOX_CONTROL_PROVIDER;
        ret->provider_r = r;
}

int sandbox_control_start(struct redis_conn *rc, struct provider *pv, const char *sid,
                          const char *state, const char *ref, struct sandbox_control_outcome *ret)
{
        int r;

        outcome_init(ret);
        if (strcmp(state, "Running") == 0) {
                ret->kind = SANDBOX_CONTROL_ALREADY;
                return 0;
        }
        if (strcmp(state, "Stopped") != 0) {
                refused(ret, state);
                return 0;
        }
        r = provider_start(pv, ref, ret->err);
        if (r < 0) {
                provider_failed(ret, r);
                return 0;
        }
        r = sandbox_transition(rc, sid, "Stopped", "Running", "STARTED", "", "");
        return r == -EBUSY ? 0 : r; /* moved meanwhile: the start itself worked */
}

int sandbox_control_stop(struct redis_conn *rc, struct provider *pv, const char *sid,
                         const char *state, const char *ref, struct sandbox_control_outcome *ret)
{
        int r;

        outcome_init(ret);
        if (strcmp(state, "Stopped") == 0) {
                ret->kind = SANDBOX_CONTROL_ALREADY;
                return 0;
        }
        if (strcmp(state, "Running") != 0) {
                refused(ret, state);
                return 0;
        }
        /* Leave Running before the provider sees the stop: the supervisor's
         * watch takes a Running sandbox that stops for an ended entrypoint. */
        r = sandbox_transition(rc, sid, "Running", "Stopping", "STOPPING",
                               "stopping at its lease holder's request", "");
        if (r == -EBUSY) {
                ret->kind = SANDBOX_CONTROL_RACED;
                return 0;
        }
        if (r < 0)
                return r;
        r = provider_stop(pv, ref, ret->err);
        if (r < 0) {
                (void)sandbox_transition(rc, sid, "Stopping", "Running", "", "", "");
                provider_failed(ret, r);
                return 0;
        }
        r = sandbox_transition(rc, sid, "Stopping", "Stopped", "STOPPED",
                               "stopped by its lease holder", "");
        return r == -EBUSY ? 0 : r;
}

static int pause_resume(struct redis_conn *rc, struct provider *pv, const char *sid,
                        const char *state, const char *ref, bool pause,
                        struct sandbox_control_outcome *ret)
{
        const char *from = pause ? "Running" : "Paused", *to = pause ? "Paused" : "Running";
        const char *why = pause ? "user_pause" : "user_resume";
        int r;

        outcome_init(ret);
        if (strcmp(state, from) != 0 || !ref || !*ref) {
                refused(ret, state);
                return 0;
        }
        r = pause ? provider_pause(pv, ref, ret->err) : provider_resume(pv, ref, ret->err);
        if (r < 0) {
                provider_failed(ret, r);
                return 0;
        }
        r = sandbox_transition(rc, sid, from, to, why, "", "");
        /* the supervisor's watch may have seen the container move first
         * (CONTAINER_PAUSED): the reason is still ours */
        if (r == -EBUSY)
                r = sandbox_transition(rc, sid, to, to, why, "", "");
        return r == -EBUSY ? 0 : r; /* moved meanwhile (e.g. deleted): the call itself worked */
}

int sandbox_control_pause(struct redis_conn *rc, struct provider *pv, const char *sid,
                          const char *state, const char *ref, struct sandbox_control_outcome *ret)
{
        return pause_resume(rc, pv, sid, state, ref, true, ret);
}

int sandbox_control_resume(struct redis_conn *rc, struct provider *pv, const char *sid,
                           const char *state, const char *ref, struct sandbox_control_outcome *ret)
{
        return pause_resume(rc, pv, sid, state, ref, false, ret);
}

int sandbox_control_delete(struct redis_conn *rc, const struct broker_config *cfg, const char *tenant,
                           const struct sandbox_access *a, struct sandbox_control_outcome *ret)
{
        struct lease_outcome out = { 0 };
        int r;

        outcome_init(ret);
        r = sandbox_slot_refs(rc, cfg, a->slot);
        if (r < 0)
                return r;
        if (r > 1) {
                ret->kind = SANDBOX_CONTROL_SHARED;
                ret->others = r - 1;
                return 0;
        }
        r = lease_release(rc, cfg, tenant, a->user_id, a->session_id, "deleted", &out);
        if (r == 0 && out.kind != LEASE_RELEASED)
                ret->kind = SANDBOX_CONTROL_GONE;
        lease_outcome_clear(&out);
        return r;
}

int sandbox_control_osb_delete(struct redis_conn *rc, struct provider *pv, const char *sid,
                               const char *tenant, const struct sandbox_record *rec,
                               struct sandbox_control_outcome *ret)
{
        int r;

        outcome_init(ret);
        r = osb_store_delete(rc, sid, tenant, NULL);
        if (r == -EALREADY || r == -ENOENT) {
                ret->kind = SANDBOX_CONTROL_GONE;
                return 0;
        }
        if (r < 0)
                return r;
        if (!rec->ref[0] && rec->volumes && rec->volumes[0] && provider_has_volumes(pv))
                (void)volume_release(pv, rec->volumes);
        return 0;
}

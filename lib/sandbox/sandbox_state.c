/* sandbox_state: the sandbox record's state machine (sandbox.h): a
 * transition through sandbox_state.lua, a container that stopped (exited,
 * killed, out of memory) failing its record, and a record following its
 * container's pause state as the provider reports it. */
#include "sandbox/sandbox.h"
#include "sandbox/sandbox_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "store/sandbox_record.h"

/* One transition; seen ("" = any) is the lastTransitionAt the caller read:
 * a record moved since is a conflict. *ret_ended (may be NULL) gets the
 * number of leases the transition ended (a lease sandbox that failed). */
static int transition_seen(struct redis_conn *rc, const char *sid, const char *from, const char *to,
                           const char *reason, const char *message, const char *ref, const char *seen,
                           long long *ret_ended)
{
        redisReply *rep = NULL;
        const char *argv[] = { sid, from, to, reason, message, ref ? ref : "", seen };
        int r = redis_conn_script(rc, LUA_SANDBOX_STATE, 7, argv, &rep);

        if (ret_ended)
                *ret_ended = 0;
        if (r < 0)
                return r;
        if (rep->type != REDIS_REPLY_ARRAY || rep->elements < 1 || !reply_is_str(rep->element[0], NULL))
                r = -EPROTO;
        else if (strcmp(rep->element[0]->str, "notfound") == 0)
                r = -ENOENT;
        else if (strcmp(rep->element[0]->str, "conflict") == 0)
                r = -EBUSY;
        else if (ret_ended && rep->elements == 3 && rep->element[2]->type == REDIS_REPLY_INTEGER)
                *ret_ended = rep->element[2]->integer;
        reply_free(rep);
        return r;
}

int sandbox_transition(struct redis_conn *rc, const char *sid, const char *from, const char *to,
                       const char *reason, const char *message, const char *ref)
{
        return transition_seen(rc, sid, from, to, reason, message, ref, "", NULL);
}

/* A record in `from` (NULL: Running, else Paused), last moved at seen
 * ("" = any), goes Failed: its container stopped with exit_code (-1 unknown) */
static int exited_seen(struct redis_conn *rc, const char *sid, const char *from, const char *seen,
                       int exit_code, bool oom)
{
        const char *reason = oom ? SANDBOX_REASON_OOM : SANDBOX_REASON_EXITED;
        char msg[128], code[16] = "";
        long long ended = 0;
        int r;

        if (exit_code >= 0)
                snprintf(code, sizeof(code), "%d", exit_code);
        if (oom)
                snprintf(msg, sizeof(msg),
                         "the sandbox ran out of memory (its memory limit) and stopped%s%s",
                         code[0] ? " with code " : "", code);
        else if (exit_code >= 0)
                snprintf(msg, sizeof(msg), "the sandbox's entrypoint exited with code %d", exit_code);
        else
                snprintf(msg, sizeof(msg), "the sandbox stopped running");
        r = transition_seen(rc, sid, from ? from : "Running", "Failed", reason, msg, "", seen, &ended);
        if (r == -EBUSY && !from) /* killed while paused */
                r = transition_seen(rc, sid, "Paused", "Failed", reason, msg, "", seen, &ended);
        if (r == -EBUSY || r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        if (ended > 0)
                log_warn(LOG_KV({ "SANDBOX_ID", sid }, { "EXIT_CODE", code }),
                         "%s; marked Failed, %lld lease(s) on it ended, its container to be removed",
                         msg, ended);
        else
                log_warn(LOG_KV({ "SANDBOX_ID", sid }, { "EXIT_CODE", code }),
                         "%s; marked Failed", msg);
        return 1;
}

int sandbox_exited(struct redis_conn *rc, const char *sid, int exit_code, bool oom)
{
        return exited_seen(rc, sid, NULL, "", exit_code, oom);
}

/* See sandbox_internal.h. */
int sandbox_pause_follow(struct redis_conn *rc, const char *sid, const char *state, const char *seen,
                         enum sandbox_run_state run)
{
        bool paused = run == SANDBOX_RUN_PAUSED;
        int r;

        if (run != SANDBOX_RUN_PAUSED && run != SANDBOX_RUN_RUNNING)
                return 0; /* an exit is the die event's (or the reconciler's) */
        if (strcmp(state, paused ? "Running" : "Paused") != 0)
                return 0; /* in step already */
        r = paused ? transition_seen(rc, sid, "Running", "Paused", "CONTAINER_PAUSED",
                                     "the sandbox's container was paused", "", seen, NULL)
                   : transition_seen(rc, sid, "Paused", "Running", "CONTAINER_UNPAUSED",
                                     "the sandbox's container was unpaused", "", seen, NULL);
        if (r == -EBUSY || r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        log_warn(LOG_KV({ "SANDBOX_ID", sid }), "the sandbox's container was %s; marked %s",
                 paused ? "paused" : "unpaused", paused ? "Paused" : "Running");
        return 1;
}
/* See sandbox_internal.h. */
int sandbox_record_state(struct redis_conn *rc, const struct broker_config *cfg, const char *sid,
                         char *state, size_t size, char *seen)
{
        struct sandbox_record rec;
        int r = sandbox_record_read(rc, cfg, sid, 0, &rec);

        state[0] = '\0';
        if (seen)
                seen[0] = '\0';
        if (r == -ENOENT || r == -EPROTO)
                return 0; /* as no record: nothing to follow */
        if (r < 0)
                return r;
        (void)snprintf(state, size, "%s", rec.state);
        if (seen)
                (void)snprintf(seen, SANDBOX_SEEN_MAX, "%s", rec.last_transition_at);
        sandbox_record_clear(&rec);
        return 0;
}

int sandbox_follow(struct redis_conn *rc, struct provider *pv, const struct broker_config *cfg,
                   const char *sid, const char *ref, int exit_code, bool oom)
{
        char state[16], seen[SANDBOX_SEEN_MAX], err[PROVIDER_ERR_MAX];
        struct sandbox_info info;
        int r;

        r = sandbox_record_state(rc, cfg, sid, state, sizeof(state), seen);
        if (r < 0)
                return r;
        if (strcmp(state, "Running") && strcmp(state, "Paused"))
                return 0; /* gone, finished, or in the broker's hands */
        /* read before the container: a pause, resume or restart of the
         * broker's own that lands in between moves the record, and seen no
         * longer holds */
        r = provider_inspect(pv, ref, &info, err);
        if (r == -ENOENT) {
                memset(&info, 0, sizeof(info));
                info.state = SANDBOX_RUN_MISSING;
                info.exit_code = -1;
        } else if (r < 0) {
                return r;
        }
        if (info.state == SANDBOX_RUN_EXITED || info.state == SANDBOX_RUN_MISSING) {
                /* Docker usually sends "oom" before "die", but the order is
                 * not promised: a 137 with no oom seen asks the container */
                oom = oom || (info.state == SANDBOX_RUN_EXITED && info.oom_killed &&
                              (exit_code < 0 ? info.exit_code : exit_code) == 137);
                return exited_seen(rc, sid, state, seen, exit_code >= 0 ? exit_code : info.exit_code, oom);
        }
        return sandbox_pause_follow(rc, sid, state, seen, info.state);
}

/* sandbox_control: what a holder does to a sandbox that exists, each one
 * use-case with an outcome struct (as lease.h's operations), so that a
 * handler parses, calls one function and maps its outcome, never
 * sequencing the record and the provider itself:
 *   start, stop    the runtime API's (a lease's sandbox: Stopped <-> Running)
 *   pause, resume  the OpenSandbox API's (Running <-> Paused)
 *   delete         the runtime API's DELETE (release of the one lease on it)
 *   osb_delete     the OpenSandbox API's DELETE
 *
 * The caller has read the sandbox (its state and provider ref) and checked
 * that the caller may act on it (sandbox_access, osb_store_get); a state
 * that changed since is found by the transition scripts, which move a
 * record only from the state they expect. No logging here: the outcome
 * says what happened, the caller logs.
 *
 * Errors (returned, with *ret's kind left SANDBOX_CONTROL_DONE): those of
 * sandbox_transition and the lease scripts (-EIO, -EPROTO, -ENOENT,
 * -ENOMEM). A provider's failure is an outcome, not an error. */
#pragma once
#include <stdbool.h>

#include "core/config.h"
#include "providers/provider.h"
#include "store/redis_conn.h"
#include "sandbox/sandbox.h"
#include "store/sandbox_record.h"

enum sandbox_control_kind {
        SANDBOX_CONTROL_DONE,     /* moved to the asked state (delete: the lease released) */
        SANDBOX_CONTROL_ALREADY,  /* it was in that state already: nothing done */
        SANDBOX_CONTROL_REFUSED,  /* its state (state) forbids it: nothing done */
        SANDBOX_CONTROL_RACED,    /* it changed state since the caller read it: nothing done */
        SANDBOX_CONTROL_PROVIDER, /* the provider failed (provider_r, err); the record as before */
        SANDBOX_CONTROL_SHARED,   /* delete: others more leases share it: nothing done */
        SANDBOX_CONTROL_GONE,     /* delete: the lease was released meanwhile */
};

struct sandbox_control_outcome {
        enum sandbox_control_kind kind;
        char state[24];             /* REFUSED: the state that forbids it */
        int provider_r;             /* PROVIDER: the provider's negative errno */
        char err[PROVIDER_ERR_MAX]; /* PROVIDER: its message */
        int others;                 /* SHARED */
};

/* Start sandbox sid (state: its record's, ref: its container) of the
 * runtime API: Running is ALREADY, any state but Stopped REFUSED; else the
 * provider starts it and the record goes Stopped -> Running (reason
 * STARTED; a record moved meanwhile is left as it is). */
int sandbox_control_start(struct redis_conn *rc, struct provider *pv, const char *sid,
                          const char *state, const char *ref, struct sandbox_control_outcome *ret);

/* Stop sandbox sid: Stopped is ALREADY, any state but Running REFUSED. The
 * record leaves Running (Stopping) before the provider sees the stop, since
 * the supervisor's watch fails a Running sandbox whose container stops
 * (a record that moved first is RACED); a provider failure puts it back
 * Running; then Stopping -> Stopped (reason STOPPED). */
int sandbox_control_stop(struct redis_conn *rc, struct provider *pv, const char *sid,
                         const char *state, const char *ref, struct sandbox_control_outcome *ret);

/* Pause (Running -> Paused, reason user_pause) or resume (Paused ->
 * Running, user_resume) OpenSandbox sandbox sid: REFUSED unless the record
 * is in the state it leaves and has a container (ref not ""). The reason is
 * ours also when the supervisor's watch moved the record first
 * (CONTAINER_PAUSED); a record moved elsewhere meanwhile (deleted) is left
 * as it is, the call itself having worked (DONE). */
int sandbox_control_pause(struct redis_conn *rc, struct provider *pv, const char *sid,
                          const char *state, const char *ref, struct sandbox_control_outcome *ret);
int sandbox_control_resume(struct redis_conn *rc, struct provider *pv, const char *sid,
                           const char *state, const char *ref, struct sandbox_control_outcome *ret);

/* Delete the sandbox a (sandbox_access of tenant's lease) holds: SHARED
 * while other leases are on its slot; else its lease is released with
 * reason "deleted" (the sandbox removed by the teardown): DONE, or GONE when
 * the lease was released meanwhile. */
int sandbox_control_delete(struct redis_conn *rc, const struct broker_config *cfg, const char *tenant,
                           const struct sandbox_access *a, struct sandbox_control_outcome *ret);

/* Delete OpenSandbox sandbox sid of tenant, whose record (osb_store_get)
 * is rec: osb_store_delete (its lease released or its ticket taken out, the
 * container handed to the teardown); GONE when it is already Terminated or
 * gone. A sandbox that never had a container (rec->ref "") has no teardown
 * to release its deleteOnSandboxTermination volumes: they are released
 * here (one still being made keeps its volume, in use, for DELETE
 * /v1/volumes). */
int sandbox_control_osb_delete(struct redis_conn *rc, struct provider *pv, const char *sid,
                               const char *tenant, const struct sandbox_record *rec,
                               struct sandbox_control_outcome *ret);

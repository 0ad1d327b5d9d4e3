/* exec_tracked: a command run with its record kept (exec_store.h), what
 * POST /v1/sandboxes/{id}/exec does with an execId (docs/API.md, "Exec
 * records"): the record is made first (nothing runs when it cannot be),
 * the command streamed (provider_exec_stream; at its end on a backend
 * without streaming) with the last EXEC_STORE_TAIL_MAX bytes of its
 * stdout+stderr written to the record at most every EXEC_TRACKED_WRITE_MS
 * (none for a command that ends sooner), and its end recorded before the
 * caller answers, so a client that went away finds it there.
 *
 * No logging here: ret says what failed, the caller logs it. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "core/config.h"
#include "store/exec_store.h"
#include "providers/provider.h"

struct redis_conn;

#define EXEC_TRACKED_WRITE_MS 500

struct exec_tracked {
        /* CREATED: the command ran (r, err, res); IN_USE, FULL (running),
         * NOT_FOUND (the lease is gone): nothing ran */
        enum exec_store_kind kind;
        long long running;
        int r;                      /* the provider's 0 or negative errno */
        char err[PROVIDER_ERR_MAX]; /* its message when r < 0 */
        struct exec_result res;     /* r == 0: as provider_exec would give it (owned) */
        int64_t duration_ms;
        int store_r;            /* the first failure to write the record, 0 if none */
        const char *store_what; /* which write failed: "progress" or "finish" */
        bool record_gone;       /* the end found no running record (expired, lease gone) */
};

/* Release what *t owns and zero it. */
void exec_tracked_clear(struct exec_tracked *t);

/* Make k's record, run spec in sandbox ref (spec->max_output per stream in
 * ret->res, as provider_exec), and record its end ('done' with the result,
 * or 'failed' with the provider's error as provider_api_error words it).
 * Returns 0 with the outcome in *ret (clear it either way), or the error
 * of the create (Redis): nothing ran. k NULL (a request without execId):
 * no record, the command run by provider_exec (not streamed), kind
 * CREATED with r, err, res and duration_ms as above. */
int exec_tracked_run(struct redis_conn *c, struct provider *p, const struct broker_config *cfg,
                     const struct exec_store_key *k, const char *ref, const struct exec_spec *spec,
                     struct exec_tracked *ret);

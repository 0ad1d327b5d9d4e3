/* sandbox_internal: what the files of the sandbox module (sandbox_*.c, one
 * per job: sandbox_state.c, sandbox_provision.c, sandbox_teardown.c,
 * sandbox_lookup.c, sandbox_reconcile.c) share with each other. Nothing
 * outside lib/sandbox/sandbox_*.c includes it; the module's contract is
 * sandbox.h. */
#pragma once
#include <errno.h>
#include <string.h>

#include "sandbox/sandbox.h"

/* A reply's string into buf (size bytes); -EPROTO when it is none or
 * does not fit. */
static inline int copy_str(const redisReply *r, char *buf, size_t size)
{
        if (!reply_is_str(r, NULL) || r->len >= size)
                return -EPROTO;
        memcpy(buf, r->str, r->len + 1);
        return 0;
}

/* sid's state into state ("" when there is no record) and, if seen is not
 * NULL, its lastTransitionAt into seen (SANDBOX_SEEN_MAX). */
#define SANDBOX_SEEN_MAX 24
int sandbox_record_state(struct redis_conn *rc, const struct broker_config *cfg, const char *sid,
                         char *state, size_t size, char *seen);

/* The reconciler's orphan test for a container of ours labelled sid: 1 when
 * nothing owns it (no record, or a Terminated or Failed one, and no warm pool
 * member of that id), 0 when a record or the pool does (state then holds the
 * record's state, "" for a member), or a Redis error. */
int sandbox_orphan_check(struct redis_conn *rc, const struct broker_config *cfg, const char *sid,
                         char *state, size_t size);

/* The record of a Running or Paused sid (last moved at seen; "" = any)
 * follows its container's pause state: Running -> Paused (CONTAINER_PAUSED)
 * when it is frozen, Paused -> Running (CONTAINER_UNPAUSED) when it runs.
 * Returns 1 when the record moved, 0 when not, or a Redis error. */
int sandbox_pause_follow(struct redis_conn *rc, const char *sid, const char *state,
                         const char *seen,
                         enum sandbox_run_state run);

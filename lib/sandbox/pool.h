/* pool: the warm pool of ready sandboxes (POOL=image:size,...; docs/CONFIGURATION.md,
 * "Warm pool"). Members are created, started (agent up) and unassigned;
 * they carry the usual managed labels with their own sandbox id and are
 * recorded in Redis (lib/store/lua/wpool.lua), so the reconciler keeps
 * them. A lease claim takes a ready member (the oldest made with its
 * limits, else the oldest) in its sandbox_claim
 * script (the member's id and container become the sandbox's); an empty
 * pool is a cold create. pool_step() is the supervisor's side: one bounded
 * step of upkeep (drop stale members, make at most one new member). */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "core/config.h"
#include "providers/provider.h"
#include "store/redis_conn.h"

struct pool_state {
        int failures[CONFIG_POOLS_MAX];          /* consecutive failed refills per image */
        int64_t backoff_until[CONFIG_POOLS_MAX]; /* epoch ms */
        int64_t next_scan;                       /* monotonic ms */
        int64_t next_check;                      /* monotonic ms: members' containers */
        char owner[33];                          /* this refiller's id (its members' owner) */
        int64_t hold_since[CONFIG_POOLS_MAX];    /* monotonic ms a refill began to wait; 0 = not */
};

/* What pool_step() did, item by item, handed to its caller to log
 * (library code does not log): the supervisor's pool thread logs each. */
enum pool_event_kind {
        POOL_EVENT_HOLD,    /* image's refill waits for its cold creates; ms: the bound */
        POOL_EVENT_RESUME,  /* image's refill goes on; ms: how long it waited */
        POOL_EVENT_REMOVED, /* sid left the pool, its container removed; why */
        POOL_EVENT_FAILED,  /* a member of image could not be made; ms: retry in; why: error */
        POOL_EVENT_READY,   /* sid, a new member of image, is ready */
};

struct pool_event {
        enum pool_event_kind kind;
        const char *image; /* HOLD, RESUME, FAILED, READY; else NULL */
        const char *sid;   /* REMOVED, READY; else NULL */
        const char *why;   /* REMOVED, FAILED; else NULL */
        long long ms;      /* HOLD, RESUME, FAILED */
};

/* Where pool_step() reports: event(ctx, ev) once per item, in order, ev and
 * its strings valid for the call only. */
struct pool_report {
        void (*event)(void *ctx, const struct pool_event *ev);
        void *ctx;
};

/* Why pool_member_lost() dropped a member (the REMOVED event's why). */
#define POOL_WHY_WATCH "the watch saw its container end or go"

/* Drop members that are too old (POOL_MAX_AGE_MS), of an image no longer
 * pooled, left 'creating' by a crash, or (checked every POOL_CHECK_MS, and
 * at a supervisor's first step: members outlive a broker restart) whose
 * container is gone or has ended; then make one member for the
 * first pool below its size that is not backing off and not holding its
 * refill (cold creates of its image in flight, at most POOL_REFILL_HOLD_MS).
 * A member is made with the limits of the pool's latest claim when none
 * is below the configured default, else with the defaults. Returns 1 if a member
 * was made or dropped (call again soon), 0 if nothing was to do, or a
 * negative errno. Each member dropped or made, each failure to make one and
 * each refill that starts or stops waiting goes to report (NULL: none). */
int pool_step(struct redis_conn *rc, struct provider *pv, const struct broker_config *cfg,
              struct pool_state *ps, const struct pool_report *report);

/* The watch saw sid's container end or go (supervisor/watch.c): when sid is
 * a pool member whose container is lost (inspected through pv, as the
 * periodic check does), it leaves the pool now, not at the next check
 * (POOL_CHECK_MS), so that no claim takes it meanwhile. Returns 1 if it was
 * dropped (why: POOL_WHY_WATCH, for the caller to log), 0 if sid is no member or its container lives, or a negative
 * errno (Redis). */
int pool_member_lost(struct redis_conn *rc, struct provider *pv, const char *sid);

/* The default limits a pool member is made with (the config's), as the
 * record's poolLimits string ("nanoCpus,memoryBytes,pids"). */
void pool_limits_string(const struct broker_config *cfg, char *buf, size_t size);

/* A cold create of sid's image is in flight / has ended (made or failed):
 * while one is, the image's pool holds its refill, so that the containers
 * of a burst that emptied the pool are not slowed by new members. Entries
 * end on their own after the provisioning bound (a crash leaves none for
 * good). begin returns 1 when sid was marked (image pooled), else 0 or a
 * negative errno; end is for a marked one. */
int pool_cold_begin(struct redis_conn *rc, const struct broker_config *cfg, const char *image,
                    const char *sid);
void pool_cold_end(struct redis_conn *rc, const struct broker_config *cfg, const char *image,
                   const char *sid);

/* Can lease claims take members of pool i (cfg->pools)? Only exclusive and
 * user_shared claims do, for SANDBOX_IMAGE (compared as Docker means it),
 * when their mode's runtime is the members' (SANDBOX_RUNTIME). When not,
 * returns false with why (size bytes) saying what: then only OpenSandbox
 * creates naming the pool's image take its members. */
bool pool_serves_leases(const struct broker_config *cfg, int i, char *why, size_t size);

/* Pool state of image as JSON fields into *obj (size, members, ready, warm,
 * cold, lastRefillAt, refillMs, error, failures, backoffUntil, healthy,
 * servesLeases, and warning: "" or why nothing has ever taken a member, for
 * a pool no lease claim can take from while no create has asked for its
 * image yet). */
struct json_object;
int pool_status(struct redis_conn *rc, const struct broker_config *cfg, const char *image,
                struct json_object *obj);

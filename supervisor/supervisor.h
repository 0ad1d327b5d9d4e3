/* supervisor: the long-running daemon that grants queued tickets in order,
 * reaps expired leases and abandoned tickets, and (later) drives sandboxes.
 * Every exclusive decision is an atomic Redis script, so several
 * supervisors can run at once; only the one holding the Kafka partition
 * consumes the queue, all of them reap. */
#pragma once
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <hiredis/hiredis.h>

#include "core/config.h"
#include "queue/kafka.h"
#include "providers/provider.h"
#include "store/redis_conn.h"

#define SUP_FIFO_MAX 1024 /* Kafka messages held before pausing the partition */
#define SUP_PROVISION_QUEUE 256 /* leases waiting for a provisioning worker */
#define SUP_RECOVER_LIMIT 64     /* abandoned leases offered to the workers per check */

struct sup_fifo_entry {
        struct kafka_msg *msg;
        char ticket_id[33];
};

struct sup {
        struct broker_config cfg;
        struct redis_conn *redis;
        struct kafka_consumer *consumer;
        struct kafka_producer *events; /* audit events (lib/queue/audit.h); made at start */
        redisContext *sub;       /* SUBSCRIBE <prefix>wake */
        int64_t sub_retry_at;    /* monotonic ms of the next reconnect attempt */
        /* Tickets consumed from Kafka, oldest first; each is committed only
         * once its ticket has left the queue (granted, expired or gone). */
        struct sup_fifo_entry fifo[SUP_FIFO_MAX];
        int fifo_head, fifo_len;
        bool paused;
        unsigned generation;
        int64_t last_offset;     /* highest offset taken into the fifo, -1 none */
        bool redis_down;         /* to log a Redis outage once, not per tick */
        bool redis_loading;      /* ... and that it is loading its dataset, once */
        struct provider *provider; /* NULL: SANDBOX_PROVIDER=none */
        int64_t next_recover;    /* monotonic ms: abandoned provisioning (SUP_RECOVER_MS) */
        struct sup_watch *watch; /* watch.c; NULL: none */
        struct sup_pool *pool;   /* pool.c; NULL: no POOL */
        struct sup_provision *provision; /* provision.c; NULL: no provider */
        struct sup_sandboxes *sandboxes; /* sandboxes.c; NULL: no provider */
        bool granted;            /* a grant since the last intake (its intent waits) */
};

/* queue.c: take messages from Kafka and grant in order. */
int sup_queue_fetch(struct sup *s, int timeout_ms);
int sup_queue_grant(struct sup *s);
void sup_queue_clear(struct sup *s);

/* The user ("tenant/user" when the message names a tenant) and session of
 * a ticket whose Kafka message this supervisor holds, for its audit event;
 * "" each when it holds none. */
void sup_queue_ticket_user(struct sup *s, const char *ticket_id, char *user, size_t usersz,
                           char *session, size_t sessionsz);

/* reaper.c: release expired leases, expire abandoned tickets. Returns the
 * number of slots freed, or a negative errno. */
int sup_reap_expired(struct sup *s);

/* The audit event of a ticket that expired (queue.c and reaper.c both
 * expire tickets). */
void sup_ticket_expired(struct sup *s, const char *ticket_id);

/* main.c: a thread's own provider and Redis connection (neither is shared
 * between threads): 0 with both, or -EIO with neither. sup_conns_close()
 * frees what is there (NULL is fine). */
int sup_conns_open(const struct broker_config *cfg, struct provider **pv, struct redis_conn **rc);
void sup_conns_close(struct provider *pv, struct redis_conn *rc);

/* sandboxes.c: a thread running teardowns and reconciling records with
 * the provider (every RECONCILE_MS, and once at start), with a provider and
 * Redis connection of its own, so the loop never waits behind them.
 * sup_sandboxes_stop() lets it finish the teardown in hand. No-ops without
 * a provider. */
int sup_sandboxes_start(struct sup *s);
void sup_sandboxes_stop(struct sup *s);
/* Leases another process left 'provisioning' (a supervisor killed between a
 * grant and its sandbox): finished within seconds, not at the reconciler's
 * lease-age bound. Checked every SUP_RECOVER_MS; a lease counts once it is
 * SUP_RECOVER_AGE_MS old and its sandbox lock is free, and is handed to the
 * provisioning workers (those it waits for already are skipped). */
#define SUP_RECOVER_MS 1000
#define SUP_RECOVER_AGE_MS 3000
void sup_sandboxes_recover(struct sup *s);

/* watch.c: a thread following the provider's events, so that a sandbox
 * that exits, is killed, paused, unpaused or OOM-killed behind the broker's
 * back shows it in its record at once (not at the next reconcile). No-op
 * without a provider or a backend without events. */
int sup_watch_start(struct sup *s);
void sup_watch_stop(struct sup *s);

/* provision.c: PROVISION_WORKERS threads making the sandboxes of granted
 * leases (their intents, and the leases the recovery finds), fed by a
 * bounded queue, so the loop never waits for the provider.
 * sup_provision_submit() queues a lease id: 0, -EALREADY (queued or being
 * made here already), -ENOSPC (queue full: the lease stays 'provisioning'
 * and sup_sandboxes_recover() offers it again), -ENOTCONN (no workers).
 * sup_provision_stop() lets each worker finish the sandbox in hand and
 * leaves the queued leases to the next supervisor's recovery.
 * sup_provision_load() reads the queue length and the busy workers. */
int sup_provision_start(struct sup *s);
/* Take provisioning intents (the lease of a direct acquire or of a grant,
 * lib/store/lease.h) for this supervisor's idle workers, when woken (the
 * wake channel, a tick, or a grant of its own) or a worker went idle since
 * the last call; returns the number taken or a negative errno. */
int sup_provision_intake(struct sup *s, bool woken);
int sup_provision_submit(struct sup *s, const char *lease_id);
void sup_provision_load(struct sup *s, int *queued, int *busy);
void sup_provision_stop(struct sup *s);

/* pool.c: a thread keeping the warm pools (POOL) filled. No-op without a
 * provider or a pool. */
int sup_pool_start(struct sup *s);
void sup_pool_stop(struct sup *s);

/* wake.c: the "a slot was freed" channel. sup_wake_wait() waits up to
 * timeout_ms and returns 1 if woken, 0 otherwise (reconnecting as needed). */
int sup_wake_wait(struct sup *s, int timeout_ms);
void sup_wake_close(struct sup *s);

/* notify.c: systemd's service protocol. sup_notify_wait_ready() waits (until
 * *stop) for Redis and the provider to answer, then sends READY=1; returns 0
 * or -ECANCELED. sup_notify_turn() once per loop turn feeds the watchdog and
 * refreshes STATUS=; sup_notify_progress() only feeds the watchdog (long
 * steps inside a turn); sup_notify_stopping() sends STOPPING=1. */
int sup_notify_wait_ready(struct sup *s, volatile sig_atomic_t *stop);
void sup_notify_turn(struct sup *s);
void sup_notify_progress(void);
void sup_notify_stopping(void);

/* Log a Redis failure once per outage; log recovery once. */
void sup_redis_status(struct sup *s, int r, const char *what);

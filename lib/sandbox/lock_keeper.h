/* lock_keeper: short-lived provisioning locks, kept alive while their
 * holder lives.
 *
 * A sandbox is made under a Redis lock (P..lock:sandbox:<id>). With a
 * lock as long as the longest create, a process killed mid-create (a
 * supervisor SIGKILLed, a FastCGI worker OOM-killed) blocked every other
 * process from finishing that sandbox for a minute. Instead the lock lives
 * LOCK_KEEPER_TTL_MS and a thread of the holder's process renews every lock
 * it holds each LOCK_KEEPER_EVERY_MS (its own Redis connection, so a
 * thread blocked in a Docker call does not stop it): a dead holder's locks
 * are free within seconds, a live holder keeps its locks however long its
 * call takes. If the keeper cannot renew (Redis away for longer than the
 * TTL), a lock can lapse under a live holder; provisioning is safe to
 * repeat, so the cost is double work, never a wrong state. */
#pragma once
#include "core/config.h"

#define LOCK_KEEPER_TTL_MS 6000
#define LOCK_KEEPER_EVERY_MS 1000
#define LOCK_KEEPER_MAX 128 /* locks one process keeps at once */

/* Keep (name, token) alive from now on (starting the keeper thread on first
 * use, with a Redis connection made from cfg). Returns 0, or -ENOSPC when
 * LOCK_KEEPER_MAX are kept already (the caller then takes a long lock). */
int lock_keeper_add(const struct broker_config *cfg, const char *name, const char *token);

/* Stop keeping it (before the lock is dropped). */
void lock_keeper_remove(const char *name, const char *token);

/* auth_cache: a handler process's memory of API keys it has authenticated,
 * so that a request with a known key costs no Redis call (auth_lookup).
 *
 * Revocation still ends a key at once: key_revoke.lua and key_rotate.lua
 * PUBLISH the revoked key's hash on <prefix>apikey:revoked in the same atomic
 * step as the revocation, and a subscriber thread of each process empties
 * the cache on every such message. The cache is used only while that
 * subscription is up: until it is confirmed, after it drops, or when its
 * keep-alive PING goes unanswered for REDIS_TIMEOUT_MS, the cache is emptied
 * and every request is looked up in Redis. An entry inserted by a lookup
 * that raced with a revocation is never kept (a generation count: any
 * emptying in between makes the insert a no-op). A safety net bounds an
 * entry's life to AUTH_CACHE_TTL_MS whatever happens (a key record deleted
 * by hand, FLUSHALL); AUTH_CACHE_MAX entries at most (direct-mapped by the
 * hash: a new key evicts the one in its slot). Only keys Redis accepted are
 * kept, by their SHA-256, never the plaintext; an unknown key always costs
 * a Redis lookup. AUTH_CACHE_TTL_MS=0 turns the cache off.
 *
 * Counters: broker_auth_cache_hits_total, broker_auth_cache_misses_total,
 * broker_auth_cache_flushes_total (emptied: a revocation or the
 * subscription lost or regained). */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "store/auth.h"
#include "core/config.h"

/* Start the cache and its subscriber thread for this process (copies cfg).
 * Without it (or with AUTH_CACHE_TTL_MS=0) the functions below find nothing
 * and keep nothing. Returns 0, -ENOMEM or -EAGAIN (no thread). */
int auth_cache_start(const struct broker_config *cfg);

/* Stop the thread and free the cache; safe without a start. */
void auth_cache_stop(void);

/* The generation to pass to auth_cache_put, read before the Redis lookup
 * whose answer is to be kept. */
uint64_t auth_cache_gen(void);

/* Is the key with this hash (64 hex) cached? Fills *ret on a hit. */
bool auth_cache_get(const char *hash, struct auth_principal *ret);

/* Keep p for hash, unless the cache was emptied (or the subscription lost)
 * since gen was read. */
void auth_cache_put(uint64_t gen, const char *hash, const struct auth_principal *p);

/* Empty the cache (what a revocation message does). */
void auth_cache_flush(void);

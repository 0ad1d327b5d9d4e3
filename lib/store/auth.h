/* auth: API keys and the tenants they stand for.
 *
 * A key is a bearer secret ("sbk_" + 48 hex from auth_key_generate, or any
 * printable string an operator seeded through OPENSANDBOX_API_KEYS). Redis
 * keeps only its SHA-256 (lib/store/keystore.c manages the records; the schema
 * is in lib/store/lua/key_lookup.lua), so a key is looked up by its hash and a
 * leaked dump of Redis authenticates nothing. Seeds are compared with the
 * presented key's hash in constant time, every seed every time. */
#pragma once
#include <stdbool.h>

#include "core/config.h"
#include "store/redis_conn.h"

#define AUTH_KEY_MAX 80    /* buffer for a generated key, NUL included */
#define AUTH_KEY_LEN_MAX 256 /* longest key a client may present */
#define AUTH_TENANT_MAX 129

/* Who a request acts for. */
struct auth_principal {
        char tenant[AUTH_TENANT_MAX];
        char key_id[17]; /* first 16 hex of the key's SHA-256: safe to log */
        bool admin;      /* may list and act across tenants */
};

/* SHA-256 of key as 64 lowercase hex chars + NUL into out (65 bytes).
 * Returns 0 or -EINVAL (NULL key)/-ENOMEM. */
int auth_key_hash(const char *key, char out[65]);

/* A new random key "sbk_" + 48 lowercase hex (192 bits from getrandom)
 * into out. Returns 0 or -EIO. */
int auth_key_generate(char out[AUTH_KEY_MAX]);

/* True when key has the shape of a key a client may present: 1 to
 * AUTH_KEY_LEN_MAX printable ASCII characters, no spaces. */
bool auth_key_well_formed(const char *key);

/* The tenant of a seed key of cfg->osb_api_keys ("key:tenant,..."):
 * hash_hex is the presented key's hash; every seed is hashed and compared
 * in constant time. Returns 0 with tenant (AUTH_TENANT_MAX) filled, or
 * -ENOENT. Pure: no I/O. */
int auth_seed_tenant(const struct broker_config *cfg, const char *hash_hex, char *tenant);

/* Authenticate key: 0 with *ret filled; -EACCES for a malformed, unknown
 * or revoked key; -EIO (Redis unreachable) or -EPROTO. A seed key that Redis
 * does not know yet is stored on first use (never one that was revoked).
 * In a process that started lib/store/auth_cache.h, a key found there costs
 * no Redis call, and a key Redis accepted is kept there. */
int auth_lookup(struct redis_conn *c, const struct broker_config *cfg, const char *key,
                struct auth_principal *ret);

/* Store every seed key of cfg that Redis does not know yet (revoked ones
 * stay revoked). Returns the number stored, or -EIO/-EPROTO. */
int auth_seed_all(struct redis_conn *c, const struct broker_config *cfg);

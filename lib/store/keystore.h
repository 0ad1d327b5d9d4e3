/* keystore: tenants and their API keys in Redis, for the operator
 * (admin/broker-admin.c). Each operation is one atomic Redis script
 * (lib/store/lua/key_*.lua, tenant_*.lua; the schema is in lib/store/lua/key_create.lua).
 *
 * Only a key's SHA-256 is stored (auth_key_hash); the plaintext exists in
 * the caller's buffer only, which keystore_key_create wipes on failure. A
 * revoked key's record is kept as a tombstone and never authenticates again.
 *
 * Tenant and key names are identifiers (json_input_id_valid); a key is named
 * by its id, the first 16 hex characters of its hash, which is safe to log.
 *
 * Errors of every function, besides those listed: -EINVAL (a bad argument:
 * nothing was sent to Redis), -EIO (Redis unreachable or timed out),
 * -EPROTO (script error or a reply of an unexpected shape), -ENOMEM. */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "store/auth.h"
#include "store/redis_conn.h"

#define KEYSTORE_ID_LEN 16        /* characters of a key id */
#define KEYSTORE_NAME_MAX 129     /* tenant or key name, NUL included */
#define KEYSTORE_CAP_MAX 1000000  /* largest maxSlots / maxSandboxes */

/* A tenant cap argument: >= 0 sets it, or one of these. */
enum {
        KEYSTORE_CAP_KEEP = -1,    /* leave the stored value as it is */
        KEYSTORE_CAP_DEFAULT = -2, /* remove it: the broker's default applies */
};

enum keystore_tenant_op {
        KEYSTORE_TENANT_CREATE, /* a new tenant: -EEXIST if it exists */
        KEYSTORE_TENANT_UPDATE, /* an existing tenant: -ENOENT if it does not */
};

struct keystore_tenant {
        char name[KEYSTORE_NAME_MAX];
        long long max_slots;     /* -1: absent, the broker's default */
        long long max_sandboxes; /* -1: absent, the broker's default */
        long long max_disk_mb;   /* -1: absent, SANDBOX_DISK_MAX_MB */
        long long created_at_ms; /* -1: unknown */
        long long live_keys;     /* keys not revoked */
};

struct keystore_key {
        char id[KEYSTORE_ID_LEN + 1];
        char tenant[KEYSTORE_NAME_MAX];
        char name[KEYSTORE_NAME_MAX]; /* "" for none */
        bool admin;
        bool revoked;
        long long created_at_ms; /* -1: unknown */
        long long revoked_at_ms; /* -1: not revoked or unknown */
};

/* What keystore_key_revoke found. */
enum keystore_revoke_result {
        KEYSTORE_REVOKED,         /* the key was live and is revoked now */
        KEYSTORE_ALREADY_REVOKED, /* nothing changed */
};

/* True if s is a key id: KEYSTORE_ID_LEN lowercase hex characters. */
bool keystore_id_valid(const char *s);

/* Create (op KEYSTORE_TENANT_CREATE) or update a tenant's caps; each cap is
 * a value in 0..KEYSTORE_CAP_MAX, KEYSTORE_CAP_KEEP or KEYSTORE_CAP_DEFAULT;
 * max_disk_mb (the largest disk of its sandboxes, and their disk when it is
 * below SANDBOX_DISK_MB; docs/OPERATIONS.md, "Host bounds") a value in
 * CONFIG_DISK_MIN_MB..CONFIG_DISK_MAX_MB (a tenant cannot be given
 * unbounded disks), KEEP or DEFAULT. Errors: -EEXIST (create, exists),
 * -ENOENT (update, no such tenant). */
int keystore_tenant_set(struct redis_conn *c, const char *tenant, enum keystore_tenant_op op,
                        long long max_slots, long long max_sandboxes, long long max_disk_mb);

/* Every tenant, in creation order, with its caps and live key count.
 * *ret (NULL when *ret_n is 0) is an array owned by the caller (free()). */
int keystore_tenant_list(struct redis_conn *c, struct keystore_tenant **ret, size_t *ret_n);

/* Store key (plaintext, not kept) for tenant: name ("" or an id) and the
 * admin flag; create_tenant makes the tenant if it does not exist. For a
 * key chosen elsewhere (keystore_key_create makes a new one). On success
 * *ret_key (may be NULL) is filled. Errors: -ENOENT (no such tenant and
 * !create_tenant), -EEXIST (a record, live or revoked, has this hash or id). */
int keystore_key_add(struct redis_conn *c, const char *key, const char *tenant, const char *name,
                     bool admin, bool create_tenant, struct keystore_key *ret_key);

/* A new random key (auth_key_generate) stored as keystore_key_add does.
 * On success ret_secret holds the plaintext, for the caller to show once
 * and wipe (explicit_bzero); on failure it is zeroed. Same errors. */
int keystore_key_create(struct redis_conn *c, const char *tenant, const char *name, bool admin,
                        bool create_tenant, char ret_secret[AUTH_KEY_MAX],
                        struct keystore_key *ret_key);

/* Revoke the key with this id; idempotent. *ret_result says whether it was
 * live. Errors: -ENOENT (no key with this id). */
int keystore_key_revoke(struct redis_conn *c, const char *id,
                        enum keystore_revoke_result *ret_result);

/* Replace the live key `id` by a new random key of the same tenant, name
 * and admin flag, revoking the old one in the same step. ret_secret and
 * *ret_key as keystore_key_create. Errors: -ENOENT (no key with this id),
 * -EKEYREVOKED (it is already revoked), -EEXIST (the new key's id exists). */
int keystore_key_rotate(struct redis_conn *c, const char *id, char ret_secret[AUTH_KEY_MAX],
                        struct keystore_key *ret_key);

/* Every key (tenant NULL or "") or a tenant's, revoked ones included, in
 * creation order; never a hash. *ret (NULL when *ret_n is 0) is owned by
 * the caller (free()). */
int keystore_key_list(struct redis_conn *c, const char *tenant, struct keystore_key **ret,
                      size_t *ret_n);

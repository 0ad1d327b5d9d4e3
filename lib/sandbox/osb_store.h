/* osb_store: the records of OpenSandbox sandboxes in Redis, each operation
 * one script of lib/store/lua/osb_*.lua (atomic), so the lifecycle handlers
 * (fcgi/h_opensandbox.c) never speak Redis or a provider themselves.
 *
 * Records are flat HGETALL arrays (rendered by osb_sandbox_json() of
 * opensandbox.h). tenant is always the owner's: the scripts answer
 * -ENOENT for a sandbox of another tenant, exactly as for an unknown one.
 * Errors of every function, besides those listed: -EIO (Redis unreachable),
 * -EPROTO (unexpected reply), -ENOMEM. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <hiredis/hiredis.h>

#include "config.h"
#include "provider.h"
#include "redis_conn.h"

#define OSB_LIST_SCAN_MAX 10000 /* records a filtered list looks at, newest first */

/* List filters: states (any of) and metadata key=value pairs (all of). */
struct osb_list_filter {
        char states[8][24];
        int n_states;
        char md_keys[16][128];
        char md_vals[16][128];
        int n_md;
};

/* The record of sid into *ret (caller frees with reply_free); an unknown
 * sandbox is an empty array, not an error. */
int osb_store_get(struct redis_conn *c, const struct broker_config *cfg, const char *sid,
                  redisReply **ret);

/* Store a new Pending record of tenant: timeout_ms "" means manual cleanup;
 * fields are n name/value pairs. With pool_image (NULL or "": none), the
 * oldest ready member of that image's warm pool is taken in the same
 * script (never by two creates): the record then has the member's id and
 * container (*ret_warm true); an empty pool leaves sid (*ret_warm false).
 * Its disk (field diskMb): disk_mb (>= 0, asked by the create) or the
 * default, SANDBOX_DISK_MB, both within the tenant's cap (its maxDiskMb,
 * else SANDBOX_DISK_MAX_MB); only a record with the default disk takes a
 * member. *ret_sid (33 bytes) gets the record's id. -EDQUOT when the tenant
 * already has its maximum of live sandboxes (*ret_n gets their number);
 * -EFBIG when disk_mb is over the tenant's cap (*ret_n gets the cap): both
 * before anything is stored. */
int osb_store_create(struct redis_conn *c, const struct broker_config *cfg, const char *sid,
                     const char *tenant, const char *timeout_ms, const char *pool_image,
                     long long disk_mb, const char **fields, int n, char *ret_sid, bool *ret_warm,
                     long long *ret_n);

/* Delete: release its lease or take its ticket out of the queue, and hand
 * the container to the teardown. -ENOENT, or -EALREADY when it is already
 * Terminated. */
int osb_store_delete(struct redis_conn *c, const char *sid, const char *tenant);

/* Move the expiry to new_ms (not beyond latest_ms). -ENOENT; -EINVAL with
 * the reason in why (256 bytes); -EBUSY when the state forbids it (the
 * state in why). */
int osb_store_renew(struct redis_conn *c, const struct broker_config *cfg, const char *sid,
                    const char *tenant, long long new_ms, long long latest_ms, char *why);

/* Apply a JSON Merge Patch (patch: an object of strings or nulls, already
 * checked) to the metadata, atomically (concurrent patches both land), and
 * return the new record in *ret. -ENOENT; -E2BIG when the result would be
 * larger than max bytes. */
int osb_store_metadata_patch(struct redis_conn *c, const char *sid, const char *tenant,
                             const char *patch, size_t max, redisReply **ret);

/* One page (1-based) of tenant's sandboxes ("" = every tenant's live ones:
 * an admin key), newest first: *ret is {totalItems, record...}. */
int osb_store_list(struct redis_conn *c, const char *tenant, long page, long size,
                   const struct osb_list_filter *f, redisReply **ret);

/* Pause (Running -> Paused) or resume (Paused -> Running) the sandbox sid
 * whose backend reference is ref. -ECONNREFUSED (provider unreachable) or
 * another provider error with a message in err (PROVIDER_ERR_MAX). */
int osb_store_pause_resume(struct redis_conn *c, struct provider *pv, const char *sid,
                           const char *ref, bool pause, char *err);

/* The data-plane access token (X-EXECD-ACCESS-TOKEN) of sandbox sid for
 * the API key key_id (auth_principal.key_id) of tenant ("" for an admin
 * key: any tenant's sandbox), into ret_token (OSB_TOKEN_MAX): the key's own
 * token, made on its first request and the same after, until rotated. It is
 * good as long as that key is live (sandbox_execd_lookup checks both on
 * every use). -ENOENT: no such OpenSandbox sandbox of tenant. */
#define OSB_TOKEN_MAX 65
int osb_store_token_issue(struct redis_conn *c, const char *sid, const char *tenant,
                          const char *key_id, char ret_token[OSB_TOKEN_MAX]);

/* Replace every data-plane token of sid (every key's: they are refused
 * from the next request on) and issue a new one for key_id into ret_token;
 * *ret_revoked (may be NULL) gets the number of tokens that stopped
 * working. -ENOENT as osb_store_token_issue. */
int osb_store_token_rotate(struct redis_conn *c, const char *sid, const char *tenant,
                           const char *key_id, char ret_token[OSB_TOKEN_MAX], long long *ret_revoked);

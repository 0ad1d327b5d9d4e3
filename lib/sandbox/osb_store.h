/* osb_store: the records of OpenSandbox sandboxes in Redis, each operation
 * one script of lib/store/lua/osb_*.lua (atomic), so the lifecycle handlers
 * (fcgi/h_opensandbox.c) never speak Redis or a provider themselves.
 *
 * A record is answered as a struct osb_sandbox (the sandbox record's fields
 * the handlers decide on, sandbox_record.h, and the spec's Sandbox object,
 * osb_sandbox_json() of opensandbox.h) or as Sandbox objects alone: no
 * hiredis reply leaves this module. tenant is always the owner's: the scripts answer
 * -ENOENT for a sandbox of another tenant, exactly as for an unknown one.
 * Errors of every function, besides those listed: -EIO (Redis unreachable),
 * -EPROTO (unexpected reply), -ENOMEM. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <json-c/json.h>

#include "core/config.h"
#include "providers/provider.h"
#include "store/redis_conn.h"
#include "store/sandbox_record.h"

#define OSB_LIST_SCAN_MAX 10000 /* records a filtered list looks at, newest first */

/* List filters: states (any of) and metadata key=value pairs (all of). */
struct osb_list_filter {
        char states[8][24];
        int n_states;
        char md_keys[16][128];
        char md_vals[16][128];
        int n_md;
};

/* An OpenSandbox sandbox as the handlers see it. */
struct osb_sandbox {
        struct sandbox_record rec; /* core, owner, volumes and status groups */
        struct json_object *json;  /* the spec's Sandbox object (full or not, as asked) */
};

/* The record of sid (any tenant's: the caller checks rec.tenant) into *ret,
 * its Sandbox object full, or the create's answer's subset (!full). Release
 * with osb_sandbox_clear, on failure too. -ENOENT: no record; -EPROTO: one
 * that does not render. */
int osb_store_get(struct redis_conn *c, const struct broker_config *cfg, const char *sid, bool full,
                  struct osb_sandbox *ret);

/* Free what osb_store_get filled and zero s; accepts NULL and a zeroed s. */
void osb_sandbox_clear(struct osb_sandbox *s);

/* A new create, as osb_store_create stores it. */
struct osb_store_new {
        const char *sid;        /* a fresh id (a warm member's replaces it) */
        const char *tenant;
        const char *timeout_ms; /* "" = manual cleanup */
        const char *pool_image; /* NULL or "": take no warm-pool member */
        long long disk_mb;      /* asked by the create; -1: the default */
        const char *idem_key;   /* Idempotency-Key; NULL or "": none */
        const char *fingerprint; /* of the body (osb_create_fingerprint), with idem_key */
        const char **fields;    /* n name/value pairs of the record */
        int n;
};

/* What osb_store_create did. */
enum osb_store_created {
        OSB_STORE_CREATED,      /* a new record, Pending */
        OSB_STORE_REPLAY,       /* idem_key made sid before: nothing stored */
        OSB_STORE_LIMIT,        /* the tenant has its maximum of live sandboxes (n of them) */
        OSB_STORE_DISK,         /* disk_mb is over the tenant's cap (n MiB) */
        OSB_STORE_KEY_MISMATCH, /* idem_key made sid from another body */
        OSB_STORE_KEY_SPENT,    /* idem_key made sid, whose record is gone */
};

struct osb_store_outcome {
        enum osb_store_created kind;
        char sid[33];    /* the record's: sid, a warm member's, or the key's */
        bool warm;       /* CREATED/REPLAY: a warm member (its container exists) */
        bool admit;      /* REPLAY: it never asked for a slot: the caller admits it */
        long long n;     /* LIMIT, DISK */
};

/* Store a new Pending record of req->tenant, unless req->idem_key names one
 * it made before (within OPENSANDBOX_IDEMPOTENCY_TTL_S): that one is the
 * answer, and nothing is stored (or refused: a replay is never over a
 * limit). The key is stored with the record in one script, so a crash
 * cannot part them; a tenant keeps at most OPENSANDBOX_IDEMPOTENCY_MAX keys
 * (the oldest are forgotten first). With pool_image, the oldest ready
 * member of that image's warm pool is taken in the same script (never by
 * two creates): the record then has the member's id and container (warm);
 * an empty pool leaves sid. Its disk (field diskMb): disk_mb (>= 0, asked
 * by the create) or the default, SANDBOX_DISK_MB, both within the tenant's
 * cap (its maxDiskMb, else SANDBOX_DISK_MAX_MB); only a record with the
 * default disk takes a member. A new record waits for its answer:
 * osb_store_answered, else osb_store_reap_unanswered ends it after
 * OPENSANDBOX_UNANSWERED_S. Returns 0 with *out filled (LIMIT, DISK and the
 * KEY_ kinds store nothing). */
int osb_store_create(struct redis_conn *c, const struct broker_config *cfg,
                     const struct osb_store_new *req, struct osb_store_outcome *out);

/* A client has sandbox sid (the create's or a replay's answer was written,
 * or a request of its tenant named it): it is no longer ended unanswered. */
int osb_store_answered(struct redis_conn *c, const char *sid);

/* End up to limit sandboxes whose create's answer reached nobody within
 * OPENSANDBOX_UNANSWERED_S (as a DELETE would, reason CREATE_UNANSWERED),
 * calling fn(ud, sid, tenant) for each. Returns the number ended. */
int osb_store_reap_unanswered(struct redis_conn *c, const struct broker_config *cfg, int limit,
                              void (*fn)(void *ud, const char *sid, const char *tenant), void *ud);

/* Delete: release its lease or take its ticket out of the queue, and hand
 * the container to the teardown. idem_key (NULL or "": none): a create
 * undoing itself before it answers; the key no longer names sid, so the
 * client's retry is a new create. -ENOENT, or -EALREADY when it is already
 * Terminated. */
int osb_store_delete(struct redis_conn *c, const char *sid, const char *tenant,
                     const char *idem_key);

/* Move the expiry to new_ms (not beyond latest_ms). -ENOENT; -EINVAL with
 * the reason in why (256 bytes); -EBUSY when the state forbids it (the
 * state in why). */
int osb_store_renew(struct redis_conn *c, const struct broker_config *cfg, const char *sid,
                    const char *tenant, long long new_ms, long long latest_ms, char *why);

/* Apply a JSON Merge Patch (patch: an object of strings or nulls, already
 * checked) to the metadata, atomically (concurrent patches both land), and
 * return the sandbox after it as the spec's Sandbox object (full) in *ret,
 * the caller's. -ENOENT; -E2BIG when the result would be larger than max
 * bytes. */
int osb_store_metadata_patch(struct redis_conn *c, const char *sid, const char *tenant,
                             const char *patch, size_t max, struct json_object **ret);

/* One page (1-based) of tenant's sandboxes ("" = every tenant's live ones:
 * an admin key), newest first: *ret_items a JSON array of Sandbox objects
 * (full; the caller's; a record that does not render is left out),
 * *ret_total the number of all that match. */
int osb_store_list(struct redis_conn *c, const char *tenant, long page, long size,
                   const struct osb_list_filter *f, long long *ret_total, struct json_object **ret_items);

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

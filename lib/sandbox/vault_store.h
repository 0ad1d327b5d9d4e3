/* vault_store: a sandbox's Credential Vault (vault.h) in Redis, the field
 * `vault` (the stored form as JSON) of its record <prefix>sandbox:<sid>.
 * It lives and dies with the record: common.lua's sandbox_finish deletes the
 * field when the sandbox ends (Terminated or Failed), before the record's
 * last hour of readability; pause and resume keep it.
 *
 * With VAULT_KEY_FILE set the values are sealed (vault_seal.h) before they
 * are written, else kept in clear (docs/EGRESS.md, "Credential Vault").
 * No function here logs, and none
 * hands a value to a caller except through the stored form it reads.
 *
 * Changes are read-change-write in C with a compare-and-set script
 * (lib/store/lua/vault_cas.lua), retried on conflict, so concurrent PATCHes
 * all land or fail cleanly. Errors of every function, besides those
 * listed: -ENOENT (no such sandbox, or it has ended), -EIO (Redis), -EPROTO
 * (an unexpected reply or a stored vault that does not parse), -ENOMEM. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

#include "store/redis_conn.h"

/* sid's vault (stored form, caller json_put()s it) into *ret. -ENODATA: the
 * sandbox has no vault. */
int vault_store_get(struct redis_conn *rc, const char *sid, struct json_object **ret);

/* Store v as sid's vault, its values sealed with key first (vault_seal.h;
 * NULL: kept in clear). -EEXIST: it has one already; -EIO (libcrypto). */
int vault_store_create(struct redis_conn *rc, const uint8_t *key, const char *sid,
                       struct json_object *v);

/* Apply the PATCH body json[0..len) (vault_apply_patch) to sid's vault,
 * atomically, new values sealed with key as above; *ret gets the new vault. -ENODATA; -EINVAL (message in err);
 * -ESTALE (expectedRevision differs; message in err); -EAGAIN when it kept
 * losing races. */
int vault_store_patch(struct redis_conn *rc, const uint8_t *key, const char *sid, const char *json,
                      size_t len, struct json_object **ret, char *err, size_t errlen);

/* Remove sid's vault. -ENODATA: it has none. */
int vault_store_delete(struct redis_conn *rc, const char *sid);

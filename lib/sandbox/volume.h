/* volume: OpenSandbox volumes (sandbox-lifecycle.yml, Volume) on the
 * broker's provider (docs/OPENSANDBOX.md, "Volumes").
 *
 * - host: a host directory under VOLUME_HOST_ALLOW, resolved with
 *   realpath(3) (symlinks included, subPath joined first) and mounted by
 *   its resolved path; read-only unless its allowlist entry says ":rw".
 *   A path that does not resolve and one outside the allowlist get the
 *   same answer, so the broker is no oracle of what exists on the host.
 * - pvc: a named volume of the tenant. Its backend name is the broker's,
 *   sbv-<16 hex of SHA-256(key prefix, tenant)>-<claimName>, never the
 *   client's string, and it carries the tenant's labels (provider.h):
 *   another tenant's same claimName is another volume. Made on first use
 *   (createIfNotExists), at most VOLUME_MAX_PER_TENANT per tenant.
 *
 * At create time the request's volumes become the record's `volumes`
 * field (JSON, made here, read back by volume_mounts_parse when the
 * sandbox is made): resolved sources, targets, read-only flags, and which
 * volumes this create made and must remove at teardown
 * (deleteOnSandboxTermination). */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "core/config.h"
#include "providers/provider.h"
#include "core/volume_spec.h"

struct json_object;

#define VOLUME_BACKEND_NAME_MAX 96
#define VOLUME_RECORD_MAX 24576 /* bytes of the record's volumes JSON (VOLUME_MAX entries) */

/* The backend name of tenant's volume `name` (a DNS label) into buf.
 * Returns 0, -EINVAL (buf too small), -ENOMEM. */
int volume_backend_name(const struct broker_config *cfg, const char *tenant, const char *name,
                        char *buf, size_t size);

/* Parse the create body's `volumes` (volume_spec_parse) and make them
 * usable for sandbox sid of tenant: host paths resolved and checked,
 * named volumes found or made. *ret_record (malloc'ed, free()) gets the
 * record's `volumes` JSON, NULL when the body has none. On failure
 * nothing this call made is left. Errors, with err (VOLUME_ERR_MAX):
 *   -EINVAL       a malformed volume (400)
 *   -EPERM        a host path not allowed / not there, or not a directory (400)
 *   -EOPNOTSUPP   the provider has no volumes (400)
 *   -ENOENT       a pvc with createIfNotExists false that does not exist (400)
 *   -EDQUOT       VOLUME_MAX_PER_TENANT reached (409)
 *   -EEXIST       the backend name is held by a volume not the tenant's (409)
 *   other         a provider error (provider_api_error) */
int volume_for_create(struct provider *pv, const struct broker_config *cfg, const char *tenant,
                      const char *sid, struct json_object *body, char **ret_record, char *err);

/* Remove the volumes a create made (the record's "made" ones): the undo of
 * volume_for_create when the create fails after it. Errors are ignored. */
void volume_undo(struct provider *pv, const char *record);

/* Teardown of a removed sandbox: remove the volumes its create made with
 * deleteOnSandboxTermination. One still in use (by a sandbox that mounted
 * it since) stays. Returns how many were removed. */
int volume_release(struct provider *pv, const char *record);

/* The record's volumes as mounts for sandbox_spec. The strings borrow
 * from ret->owner (volume_mounts_free). record "" or NULL: none.
 * Errors: -EPROTO (not the JSON volume_for_create makes). */
struct volume_mounts {
        size_t n;
        struct sandbox_mount m[VOLUME_MAX];
        struct json_object *owner;
};
int volume_mounts_parse(const char *record, struct volume_mounts *ret);
void volume_mounts_free(struct volume_mounts *m);

/* Just before the container is made: are m's named volumes still there
 * (Docker would make a missing one anew, unlabelled: a volume the tenant
 * deleted while its sandbox waited for a slot fails the sandbox instead),
 * and does every host directory still resolve to itself (no component
 * turned into a symlink since it was checked)? -ENOENT when not; err
 * PROVIDER_ERR_MAX bytes. The mount itself follows later: a window of one
 * create call remains (docs/OPENSANDBOX.md, "Volumes"). */
int volume_mounts_check(struct provider *pv, const struct volume_mounts *m, char *err);

/* GET /v1/volumes: tenant's named volumes as {"items": [{name, createdAt,
 * createdBySandbox}]} into *ret. Errors: provider errors, -ENOMEM. */
int volume_list_json(struct provider *pv, const struct broker_config *cfg, const char *tenant,
                     struct json_object **ret, char *err);

/* DELETE /v1/volumes/{name}: remove tenant's named volume `name`.
 * Errors: -EINVAL (not a DNS label), -ENOENT (the tenant has none of that
 * name), -EBUSY (a sandbox mounts it), -EOPNOTSUPP, provider errors. */
int volume_delete(struct provider *pv, const struct broker_config *cfg, const char *tenant,
                  const char *name, char *err);

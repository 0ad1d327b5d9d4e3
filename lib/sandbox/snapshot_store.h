/* snapshot_store: OpenSandbox snapshots of the Docker provider's sandboxes
 * (docs/OPENSANDBOX.md, "Snapshots"): their records in Redis, each change
 * one script of lib/store/lua/snapshot_*.lua (atomic), and the provider
 * calls that make and remove their images, so that the handlers
 * (fcgi/h_snapshots.c) never speak Redis or a provider themselves.
 *
 * A snapshot belongs to the tenant that made it: every function takes the
 * caller's tenant and answers -ENOENT for another tenant's snapshot exactly
 * as for an unknown one. States (the spec's SnapshotState): Creating ->
 * Ready | Failed; Ready -> Deleting -> gone (or back to Ready when the image
 * could not be removed). A Failed record holds no image and expires after
 * a day. Errors of every function, besides those listed: -EIO (Redis),
 * -EPROTO (unexpected reply), -ENOMEM. */
#pragma once
#include <stdint.h>
#include <json-c/json.h>

#include "core/config.h"
#include "providers/provider.h"
#include "store/redis_conn.h"
#include "sandbox/snapshot.h"

#define SNAPSHOT_STATE_MAX 16

/* Record snapshot id (Creating) of tenant's sandbox sid, named name ("" =
 * unnamed), its image to be SNAPSHOT_IMAGE_REPO:id. -ENOENT: no such
 * sandbox of tenant; -EBUSY: the sandbox is not Running (its state in
 * ret_state, SNAPSHOT_STATE_MAX bytes); -EDQUOT: tenant already has
 * SNAPSHOT_MAX_PER_TENANT snapshots that are not Failed (their number in
 * *ret_n). */
int snapshot_store_begin(struct redis_conn *rc, const struct broker_config *cfg, const char *id,
                         const char *tenant, const char *sid, const char *name, char *ret_state,
                         long long *ret_n);

/* Make the image of snapshot id (recorded by snapshot_store_begin) and
 * settle its state: Ready, or Failed with the reason in its message (also
 * in err, SNAPSHOT_ERR_MAX) when the commit failed or the image is larger
 * than SNAPSHOT_MAX_BYTES (then removed). Takes up to SNAPSHOT_TIMEOUT_MS.
 * Returns 0 (Ready), -EFBIG (too large), or the provider's error. */
int snapshot_store_commit(struct redis_conn *rc, struct provider *pv,
                          const struct broker_config *cfg, const char *id, char *err);

/* Tenant's snapshot id as the spec's Snapshot object (snapshot_json) into
 * *ret, the caller's (json_object_put). A record Creating for longer than
 * SNAPSHOT_TIMEOUT_MS (its commit was lost) turns Failed. -ENOENT. */
int snapshot_store_get(struct redis_conn *rc, const struct broker_config *cfg, const char *id,
                       const char *tenant, struct json_object **ret);

/* The image of tenant's snapshot id into image (SNAPSHOT_IMAGE_MAX bytes),
 * to make a sandbox from. -ENOENT; -EBUSY when it is not Ready (its state
 * in ret_state, SNAPSHOT_STATE_MAX bytes). */
int snapshot_store_image(struct redis_conn *rc, const struct broker_config *cfg, const char *id,
                         const char *tenant, char *image, char *ret_state);

/* One page (1-based) of tenant's snapshots, newest first, filtered by
 * source sandbox (sid "" = any), exact name ("" = any) and states (n of
 * them, at most 8, any of; 0 = all): *ret_items a JSON array of Snapshot
 * objects (the caller's; a record that does not render is left out),
 * *ret_total the number of all that match. -EINVAL (n). */
int snapshot_store_list(struct redis_conn *rc, const char *tenant, long page, long size,
                        const char *sid, const char *name, const char *const *states, int n,
                        long long *ret_total, struct json_object **ret_items);

/* Delete tenant's snapshot id: its image (untagged only while a sandbox
 * still runs from it) and its record. A snapshot left Deleting (a delete
 * cut short) is deleted again. -ENOENT; -EBUSY when it is Creating (the
 * state in ret_state); a provider error (message in err, SNAPSHOT_ERR_MAX;
 * a backend conflict as -EREMOTEIO) leaves it Ready. */
int snapshot_store_delete(struct redis_conn *rc, struct provider *pv, const struct broker_config *cfg,
                          const char *id, const char *tenant, char *ret_state, char *err);

/* The reconciler's part (every RECONCILE_MS): remove the images the
 * provider holds for this broker's snapshots (PROVIDER_LABEL_SNAPSHOT and
 * PROVIDER_LABEL_PREFIX, and no other name than the broker's) whose
 * snapshot is Failed or gone: a commit whose process died (the record
 * Creating past SNAPSHOT_TIMEOUT_MS + 30 s turns Failed here), or one that
 * landed after its snapshot failed. Images of Creating, Ready and Deleting
 * snapshots are never touched; one a sandbox still uses stays until it is
 * gone. *ret_removed gets the number removed. 0 (also for a provider
 * without snapshots), or the provider's error with err (SNAPSHOT_ERR_MAX). */
#define SNAPSHOT_REAP_BATCH 256 /* ids per script call */
int snapshot_store_reap(struct redis_conn *rc, struct provider *pv, const struct broker_config *cfg,
                        int *ret_removed, char *err);

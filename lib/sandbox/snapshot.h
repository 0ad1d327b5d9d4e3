/* snapshot: the OpenSandbox snapshot contract (sandbox-lifecycle.yml of
 * the OpenSandbox project: CreateSnapshotRequest, Snapshot, SnapshotState)
 * as data: ids, the create body, the image name, and records rendered as
 * the spec's Snapshot object. No I/O (snapshot_store.h does the rest). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <json-c/json.h>

#define SNAPSHOT_ID_LEN 32    /* lowercase hex, like sandbox ids */
#define SNAPSHOT_NAME_MAX 128 /* bytes of a name, NUL excluded */
#define SNAPSHOT_ERR_MAX 256
/* Images of snapshots: this repository, the snapshot id as the tag. The
 * name is the broker's, never a client's. */
#define SNAPSHOT_IMAGE_REPO "sandbox-broker/snapshot"
#define SNAPSHOT_IMAGE_MAX (sizeof(SNAPSHOT_IMAGE_REPO) + SNAPSHOT_ID_LEN + 1)

/* Is id a snapshot id (exactly 32 lowercase hex characters)? NULL: no. */
bool snapshot_id_valid(const char *id);

/* The image name of snapshot id into buf (SNAPSHOT_IMAGE_MAX bytes):
 * "sandbox-broker/snapshot:<id>". -EINVAL for an invalid id. */
int snapshot_image_name(const char *id, char *buf, size_t size);

/* Validate a CreateSnapshotRequest (body may be NULL: no body, no name):
 * an object whose only field is name, a string of 1 to SNAPSHOT_NAME_MAX
 * printable bytes (no control characters). The name goes into ret_name
 * (SNAPSHOT_NAME_MAX + 1 bytes; "" when absent). Returns 0, or -EINVAL
 * with err (SNAPSHOT_ERR_MAX) explaining. */
int snapshot_create_parse(struct json_object *body, char *ret_name, char *err);

/* The spec's spelling of a snapshot state in any letter case
 * ("ready" -> "Ready"), or NULL for none of Creating, Deleting, Ready,
 * Failed. */
const char *snapshot_state_canonical(const char *s);

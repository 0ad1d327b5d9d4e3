/* snapshot_reply: a snapshot record as Redis answers it, rendered
 * (lib/sandbox/snapshot.c). Not a public header: only snapshot.c,
 * snapshot_store.c and the unit tests include it; handlers get the JSON of
 * snapshot_store.h, never a redisReply. */
#pragma once

#include <hiredis/hiredis.h>
#include <json-c/json.h>

#include "sandbox/snapshot.h"

/* Render a record (flat HGETALL array, snapshot_store.h) as the spec's
 * Snapshot object into *ret (owned by the caller). Returns 0, -ENOENT
 * (empty), -EPROTO (no id or state), -ENOMEM. */
int snapshot_json(const redisReply *rec, struct json_object **ret);

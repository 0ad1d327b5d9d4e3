/* opensandbox_reply: the OpenSandbox model's rendering of a record as
 * Redis answers it (lib/sandbox/opensandbox.c). Not a public header: only
 * opensandbox.c, osb_store.c and the unit tests include it; handlers get
 * the structs and JSON of opensandbox.h and osb_store.h, never a
 * redisReply. */
#pragma once

#include <stdbool.h>
#include <hiredis/hiredis.h>
#include <json-c/json.h>

#include "sandbox/opensandbox.h"

/* Render a record (flat HGETALL array) as the spec's Sandbox object; with
 * !full, the create response's subset (no image, no updatedAt).
 * Returns 0, -ENOENT (empty), -EPROTO. */
int osb_sandbox_json(const redisReply *hash, bool full, struct json_object **ret);

/* lease_reply: how lib/store/lease.c reads the replies of its scripts.
 * Not a public header: only lease.c and its unit tests
 * (tests/unit/test_lease_mapping.c) include it; everyone else gets the
 * outcome structs and JSON of lease.h, never a redisReply. */
#pragma once

#include <hiredis/hiredis.h>
#include <json-c/json.h>

#include "store/lease.h"

/* Map a flat HGETALL array of a lease hash to the API's lease object. */
int lease_json_from_hash(const redisReply *arr, struct json_object **ret);

/* Map the reply of acquire/poll/heartbeat/release scripts to *o. */
int lease_outcome_from_reply(const redisReply *r, struct lease_outcome *o);

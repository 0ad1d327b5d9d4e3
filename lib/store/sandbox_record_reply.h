/* sandbox_record_reply: the sandbox record read from a hash Redis already
 * answered (lib/store/sandbox_record.c). Not a public header: only
 * sandbox_record.c, lib/sandbox/osb_store.c and the unit tests include it;
 * handlers, the supervisor and the egress helper get the struct of
 * sandbox_record.h, never a redisReply. */
#pragma once

#include <hiredis/hiredis.h>
#include <json-c/json.h>

#include "store/sandbox_record.h"

/* sandbox_record_read from a record already fetched whole: h, the flat
 * field/value array of an HGETALL (or of a script that answers one).
 * Same fields, same errors but those of Redis; an empty h is -ENOENT. */
int sandbox_record_from_hash(const redisReply *h, unsigned groups, struct sandbox_record *ret);

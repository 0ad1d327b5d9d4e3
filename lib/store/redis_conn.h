/* redis_conn: one hiredis connection with timeouts and the broker's scripts.
 *
 * Not thread-safe: each worker thread owns one. A call that fails with an
 * I/O error drops the connection; the next call reconnects. */
#pragma once
#include <stdbool.h>
#include <hiredis/hiredis.h>

#include "core/config.h"
#include "store/lua_scripts.h"

struct redis_conn;

/* A server still loading its dataset (AOF or RDB, after a start) answers
 * every command "LOADING Redis is loading the dataset in memory": the
 * calls below then fail with -EIO, as while it is down (retry later), and
 * the connection notes it for callers that say so (503 with Retry-After,
 * one log line). */

/* Create a connection object for cfg (copied). Connecting happens lazily on
 * the first call, so a handler starts even while Redis is down.
 * Returns 0 or -ENOMEM. */
int redis_conn_new(const struct broker_config *cfg, struct redis_conn **ret);

/* Close and free; accepts NULL. */
void redis_conn_free(struct redis_conn *c);

/* Run script `id` with argv[0..argc) as ARGV (no KEYS). The first ARGV is
 * always the key prefix and is added here. On success *ret owns the reply
 * (release with reply_free). Errors: -EIO (connection, or the server is
 * loading its dataset), -EPROTO (script error,
 * message in the log at debug), -ENOMEM. */
int redis_conn_script(struct redis_conn *c, enum lua_script_id id, int argc, const char **argv,
                      redisReply **ret);

/* redis_conn_script with binary-safe arguments: argv[i] is lens[i] bytes
 * (which may hold NUL), not a C string. Same errors and ownership. */
int redis_conn_script_bin(struct redis_conn *c, enum lua_script_id id, int argc, const char **argv,
                          const size_t *lens, redisReply **ret);

/* redis_conn_script for scripts whose reply is an array starting with a tag
 * string ("ok", "limit", ...): anything else is -EPROTO (*ret NULL). */
int redis_conn_script_tagged(struct redis_conn *c, enum lua_script_id id, int argc,
                             const char **argv, redisReply **ret);

/* Is r a string (or status) reply, equal to s when s is not NULL? */
bool reply_is_str(const redisReply *r, const char *s);

/* The value of field name in h, a flat field/value array (HGETALL, or a
 * script's list of pairs), or NULL when h is NULL or no array, or lacks
 * the field, or its value is no string. Points into h. */
const char *reply_hash_get(const redisReply *h, const char *name);

/* reply_hash_get's value element itself (any type; its len counts bytes
 * past a NUL), or NULL. */
const redisReply *reply_hash_find(const redisReply *h, const char *name);

/* Run one raw command (argv[0] is the command name; keys are the caller's,
 * prefix included). Same errors and ownership as redis_conn_script. */
int redis_conn_command(struct redis_conn *c, int argc, const char **argv, redisReply **ret);

/* PING the server. Returns 0 or -EIO. */
int redis_conn_ping(struct redis_conn *c);

/* How many LOADING answers c has met so far (0 for NULL): a caller that
 * compares two readings knows whether its calls in between met a server
 * still loading its dataset. */
unsigned long redis_conn_loading_seen(const struct redis_conn *c);

/* Was the server's last answer on c LOADING? (false for NULL) */
bool redis_conn_loading(const struct redis_conn *c);

/* The underlying context for callers that need raw commands (subscriber).
 * Connects if needed; NULL on failure. Owned by c. */
redisContext *redis_conn_context(struct redis_conn *c);

/* freeReplyObject that accepts NULL. */
void reply_free(redisReply *r);

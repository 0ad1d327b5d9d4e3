/* json_input: parsing and validating untrusted JSON request bodies.
 *
 * Every function writes a client-facing explanation into err on failure, so
 * handlers can pass it straight to reply_error(). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <json-c/json.h>

#define JSON_INPUT_MAX_DEPTH 8
#define JSON_INPUT_ID_MAX 128

/* Parse buf[0..len) as exactly one JSON object nested at most max_depth deep.
 * On success *ret owns a new reference (release with json_put()).
 * Errors: -EINVAL (not JSON, trailing garbage, not an object, too deep). */
int json_input_parse_object(const char *buf, size_t len, int max_depth, struct json_object **ret,
                            char *err, size_t errsz);

/* True if s is 1..JSON_INPUT_ID_MAX characters of [A-Za-z0-9._@-]. */
bool json_input_id_valid(const char *s);

/* Read string field `name` of obj as an identifier (json_input_id_valid).
 * Absent: *ret = NULL and 0 when !required, -ENOENT when required.
 * Present but not a valid id string: -EINVAL. *ret borrows from obj. */
int json_input_get_id(struct json_object *obj, const char *name, bool required,
                      const char **ret, char *err, size_t errsz);

/* Read optional string field `name` which must be one of the NULL-terminated
 * `allowed` values; absent gives *ret = NULL. Errors: -EINVAL. */
int json_input_get_enum(struct json_object *obj, const char *name, const char *const *allowed,
                        const char **ret, char *err, size_t errsz);

/* Parse a trusted-shape text (a backend's answer); NULL for NULL or bad
 * JSON. The caller owns the result (json_put). */
struct json_object *json_parse_or_null(const char *text);

/* The string member `key` of o, or NULL (o NULL, key absent, not a string).
 * Borrows from o. */
const char *json_get_str(struct json_object *o, const char *key);

/* Add v (owned; NULL means its allocation failed) to o under key; on
 * failure v is released. Returns 0 or -ENOMEM. For building JSON bodies. */
int json_add(struct json_object *o, const char *key, struct json_object *v);

/* json_add of a new string. */
int json_add_str(struct json_object *o, const char *key, const char *s);

/* Release a json-c reference; accepts NULL. */
void json_put(struct json_object *obj);

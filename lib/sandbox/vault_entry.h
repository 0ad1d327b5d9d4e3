/* vault_entry: one credential or binding of a Credential Vault request
 * (OpenSandbox 1.1.1 egress-api.yaml) checked against the bounds of vault.h
 * and turned into its stored form, and the small JSON helpers vault.c and
 * vault_view.c share. Pure code, no I/O; for lib/sandbox/vault*.c only.
 * Every err is a client-facing message that never quotes a value. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

/* Member key of o with json type t: 0 with *ret (borrowed), -ENOENT when
 * absent or null (-EINVAL with a message in err if required), -EINVAL when
 * of another type. where names the object in the message. */
int vault_json_member(struct json_object *o, const char *where, const char *key, json_type t,
                      bool required, struct json_object **ret, char *err, size_t errlen);

/* Add a string / an integer member to o: 0 or -ENOMEM. */
int vault_add_str(struct json_object *o, const char *key, const char *s);
int vault_add_int(struct json_object *o, const char *key, int64_t n);

/* A request's Credential c -> *ret, its stored form at revision rev
 * (caller json_put()s it). 0, -EINVAL (message in err) or -ENOMEM. */
int vault_entry_credential(struct json_object *c, int64_t rev, struct json_object **ret, char *err,
                           size_t errlen);

/* A request's CredentialBinding b -> *ret, its stored form at revision
 * rev (caller json_put()s it); whether its credentials exist is checked by
 * vault.c over the whole vault. 0, -EINVAL (message in err) or -ENOMEM. */
int vault_entry_binding(struct json_object *b, int64_t rev, struct json_object **ret, char *err,
                        size_t errlen);

/* Index of the entry named name in the array arr (NULL: none), or -1. */
int vault_entry_find(struct json_object *arr, const char *name);

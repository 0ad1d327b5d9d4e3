/* vault: a sandbox's Credential Vault (OpenSandbox 1.1.1 egress-api.yaml,
 * `/credential-vault`): named secrets and the bindings that say to which
 * hosts, and how (bearer, basic, apiKey, customHeaders, passthrough
 * substitutions of a placeholder), the egress path may inject them.
 *
 * Pure code: parsing and validating untrusted request JSON and applying a
 * PATCH (vault.c, over the entry parsers of vault_entry.h); the sanitized
 * views are vault_view.h. No I/O; storage lives in vault_store.c.
 *
 * The vault is held as a json-c object of the stored (normalized) form:
 *   {"revision":N,
 *    "credentials":[{"name","sourceType":"inline","revision","value"}],
 *    "bindings":[{"name","revision","match":{hosts,schemes?,methods?,paths?},
 *                 "auth":{type,credential?,name?,headers?,substitutions?}}]}
 * `value` is the secret: only vault_store.c and the injector read it; no
 * view function of this module ever copies it out.
 *
 * Bounds (all client input; 400 when exceeded): VAULT_CREDENTIALS_MAX
 * credentials and VAULT_BINDINGS_MAX bindings per vault, names of 1 to
 * VAULT_NAME_MAX characters of [A-Za-z0-9._-] starting with a letter or
 * digit, values of 1 to VAULT_VALUE_MAX bytes without NUL, CR or LF (a value
 * with a line break could split a header), VAULT_HOSTS_MAX hosts and
 * VAULT_LIST_MAX methods, paths, headers and substitutions per binding,
 * placeholders of 1 to VAULT_PLACEHOLDER_MAX printable ASCII characters
 * without spaces. Hosts are egress_policy.h targets (exact or "*.suffix"). */
#pragma once
#include <stddef.h>
#include <json-c/json.h>

#define VAULT_CREDENTIALS_MAX 32
#define VAULT_BINDINGS_MAX 32
#define VAULT_NAME_MAX 64
#define VAULT_VALUE_MAX 4096
#define VAULT_HOSTS_MAX 16
#define VAULT_LIST_MAX 16
#define VAULT_PLACEHOLDER_MAX 256
#define VAULT_PATH_MAX 256
#define VAULT_HEADER_NAME_MAX 128
/* Cap on a request body of the vault routes. */
#define VAULT_JSON_MAX (256 * 1024)
/* A PATCH's substitution surfaces sit 8 levels deep. */
#define VAULT_JSON_DEPTH 10

/* POST /credential-vault: {credentials: [Credential], bindings: [Binding]}
 * -> *ret, the stored form at revision 1 (caller json_put()s it).
 * Returns 0, -EINVAL with a client-facing message in err (never quoting a
 * value), or -ENOMEM. */
int vault_parse_create(const char *json, size_t len, struct json_object **ret, char *err,
                       size_t errlen);

/* PATCH /credential-vault: {expectedRevision?, credentials?: {add, replace,
 * delete}, bindings?: {add, replace, delete}} applied to the stored form
 * *cur, all or nothing: on success *ret is the new vault at revision + 1
 * (deletes first, then replaces, then adds; every binding's credentials
 * must exist afterwards). Errors: -EINVAL (message in err), -ESTALE
 * (expectedRevision is not the current revision), -ENOMEM. cur is not
 * changed. */
int vault_apply_patch(struct json_object *cur, const char *json, size_t len,
                      struct json_object **ret, char *err, size_t errlen);

/* Check a stored form read back (bounds, references): 0 or -EINVAL. */
int vault_check(struct json_object *v);

/* Whether name is a valid credential or binding name (see above). */
int vault_name_valid(const char *name);

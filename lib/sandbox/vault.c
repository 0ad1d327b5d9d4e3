/* vault: see vault.h. Messages name members and valid names, never a value. */
#include "sandbox/vault.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "core/json_input.h"
#include "sandbox/vault_entry.h"

int vault_name_valid(const char *s)
{
        size_t n = s ? strlen(s) : 0;

        if (n < 1 || n > VAULT_NAME_MAX || !isalnum((unsigned char)s[0]))
                return 0;
        for (size_t i = 0; i < n; i++)
                if (!isalnum((unsigned char)s[i]) && !strchr("._-", s[i]))
                        return 0;
        return 1;
}

static bool has_credential(struct json_object *creds, const char *name)
{
        return !name || vault_entry_find(creds, name) >= 0;
}

/* Bounds and references of a vault in stored form. */
static int check(struct json_object *v, char *err, size_t errlen)
{
        struct json_object *creds, *binds;

        if (!json_object_object_get_ex(v, "credentials", &creds) ||
            !json_object_object_get_ex(v, "bindings", &binds) ||
            !json_object_is_type(creds, json_type_array) ||
            !json_object_is_type(binds, json_type_array)) {
                snprintf(err, errlen, "the vault is malformed");
                return -EINVAL;
        }
        if (json_object_array_length(creds) > VAULT_CREDENTIALS_MAX ||
            json_object_array_length(binds) > VAULT_BINDINGS_MAX) {
                snprintf(err, errlen, "a vault holds at most %d credentials and %d bindings",
                         VAULT_CREDENTIALS_MAX, VAULT_BINDINGS_MAX);
                return -EINVAL;
        }
        for (size_t i = 0; i < json_object_array_length(binds); i++) {
                struct json_object *b = json_object_array_get_idx(binds, i), *a, *l;
                const char *bn = json_get_str(b, "name");

                if (!json_object_object_get_ex(b, "auth", &a)) {
                        snprintf(err, errlen, "the vault is malformed");
                        return -EINVAL;
                }
                bool ok = has_credential(creds, json_get_str(a, "credential"));
                for (int k = 0; k < 2; k++) {
                        if (!json_object_object_get_ex(a, k ? "substitutions" : "headers", &l))
                                continue;
                        for (size_t j = 0; ok && j < json_object_array_length(l); j++)
                                ok = has_credential(creds,
                                                    json_get_str(json_object_array_get_idx(l, j),
                                                                 "credential"));
                }
                if (!ok) {
                        snprintf(err, errlen, "binding %s uses a credential the vault does not hold",
                                 bn ? bn : "?");
                        return -EINVAL;
                }
        }
        return 0;
}

int vault_check(struct json_object *v)
{
        char err[160];

        return check(v, err, sizeof(err));
}

/* Parse items of array member key of o (absent: nothing) into dst by name:
 * replace ? each must exist and is replaced : each must be new and is
 * appended. Duplicate names within one request are refused. */
static int merge_items(struct json_object *dst, struct json_object *o, const char *what,
                       const char *key, bool replace, int64_t rev, char *err, size_t errlen)
{
        struct json_object *a;
        size_t n;
        int r = vault_json_member(o, what, key, json_type_array, false, &a, err, errlen);

        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        n = json_object_array_length(a);
        size_t max = strcmp(what, "credentials") ? VAULT_BINDINGS_MAX : VAULT_CREDENTIALS_MAX;
        if (n > max) {
                snprintf(err, errlen, "a vault holds at most %zu %s", max, what);
                return -EINVAL;
        }
        for (size_t i = 0; i < n; i++) {
                struct json_object *e = NULL;
                const char *name;
                int at;

                r = strcmp(what, "credentials")
                            ? vault_entry_binding(json_object_array_get_idx(a, i), rev, &e, err,
                                                  errlen)
                            : vault_entry_credential(json_object_array_get_idx(a, i), rev, &e, err,
                                                     errlen);
                if (r < 0)
                        return r;
                name = json_get_str(e, "name");
                at = vault_entry_find(dst, name);
                if (replace ? at < 0 : at >= 0) {
                        snprintf(err, errlen, "%s.%s: %s %s %s", what, key, what, name,
                                 replace ? "does not exist" : "exists already (replace it)");
                        json_put(e);
                        return -EINVAL;
                }
                r = replace ? json_object_array_put_idx(dst, (size_t)at, e)
                            : json_object_array_add(dst, e);
                if (r < 0) {
                        json_put(e);
                        return -ENOMEM;
                }
        }
        return 0;
}

static int delete_items(struct json_object *dst, struct json_object *o, const char *what, char *err,
                        size_t errlen)
{
        struct json_object *a;
        int r = vault_json_member(o, what, "delete", json_type_array, false, &a, err, errlen);

        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        for (size_t i = 0; i < json_object_array_length(a); i++) {
                const char *name = json_object_get_string(json_object_array_get_idx(a, i));
                int at;

                if (!json_object_is_type(json_object_array_get_idx(a, i), json_type_string) ||
                    !vault_name_valid(name)) {
                        snprintf(err, errlen, "%s.delete[%zu] must be a valid name", what, i);
                        return -EINVAL;
                }
                if ((at = vault_entry_find(dst, name)) < 0) {
                        snprintf(err, errlen, "%s.delete: %s %s does not exist", what, what, name);
                        return -EINVAL;
                }
                if (json_object_array_del_idx(dst, (size_t)at, 1) < 0)
                        return -ENOMEM;
        }
        return 0;
}

static int parse_body(const char *json, size_t len, struct json_object **ret, char *err, size_t errlen)
{
        if (len > VAULT_JSON_MAX) {
                snprintf(err, errlen, "the body exceeds %d bytes", VAULT_JSON_MAX);
                return -EINVAL;
        }
        return json_input_parse_object(json, len, VAULT_JSON_DEPTH, ret, err, errlen);
}

int vault_parse_create(const char *json, size_t len, struct json_object **ret, char *err,
                       size_t errlen)
{
        struct json_object *in = NULL, *v = NULL, *creds = NULL, *binds = NULL, *a;
        int r;

        *ret = NULL;
        if ((r = parse_body(json, len, &in, err, errlen)) < 0)
                return r;
        r = -ENOMEM;
        if (!(v = json_object_new_object()) || vault_add_int(v, "revision", 1) < 0 ||
            json_add(v, "credentials", creds = json_object_new_array()) < 0 ||
            json_add(v, "bindings", binds = json_object_new_array()) < 0)
                goto out;
        if ((r = vault_json_member(in, "vault", "credentials", json_type_array, true, &a, err,
                                   errlen)) < 0 ||
            (r = vault_json_member(in, "vault", "bindings", json_type_array, true, &a, err, errlen)) <
                    0)
                goto out;
        if ((r = merge_items(creds, in, "credentials", "credentials", false, 1, err, errlen)) < 0 ||
            (r = merge_items(binds, in, "bindings", "bindings", false, 1, err, errlen)) < 0 ||
            (r = check(v, err, errlen)) < 0)
                goto out;
        *ret = v;
        v = NULL;
out:
        json_put(in);
        json_put(v);
        return r;
}

int vault_apply_patch(struct json_object *cur, const char *json, size_t len,
                      struct json_object **ret, char *err, size_t errlen)
{
        struct json_object *in = NULL, *v = NULL, *exp, *set, *dst;
        int64_t rev = json_object_get_int64(json_object_object_get_ex(cur, "revision", &exp) ? exp
                                                                                             : NULL);
        int r;

        *ret = NULL;
        if ((r = parse_body(json, len, &in, err, errlen)) < 0)
                return r;
        r = vault_json_member(in, "vault", "expectedRevision", json_type_int, false, &exp, err,
                              errlen);
        if (r == -EINVAL)
                goto out;
        if (r == 0 && json_object_get_int64(exp) != rev) {
                snprintf(err, errlen, "expectedRevision %lld is not the vault's revision %lld",
                         (long long)json_object_get_int64(exp), (long long)rev);
                r = -ESTALE;
                goto out;
        }
        r = -ENOMEM;
        if (json_object_deep_copy(cur, &v, NULL) < 0 || !v)
                goto out;
        for (int k = 0; k < 2; k++) {
                const char *what = k ? "bindings" : "credentials";

                r = vault_json_member(in, "vault", what, json_type_object, false, &set, err, errlen);
                if (r == -ENOENT)
                        continue;
                if (r < 0 || (r = json_object_object_get_ex(v, what, &dst) ? 0 : -EINVAL) < 0)
                        goto out;
                if ((r = delete_items(dst, set, what, err, errlen)) < 0 ||
                    (r = merge_items(dst, set, what, "replace", true, rev + 1, err, errlen)) < 0 ||
                    (r = merge_items(dst, set, what, "add", false, rev + 1, err, errlen)) < 0)
                        goto out;
        }
        if ((r = check(v, err, errlen)) < 0)
                goto out;
        r = json_object_object_add(v, "revision", json_object_new_int64(rev + 1)) < 0 ? -ENOMEM : 0;
        if (r < 0)
                goto out;
        *ret = v;
        v = NULL;
out:
        json_put(in);
        json_put(v);
        return r;
}

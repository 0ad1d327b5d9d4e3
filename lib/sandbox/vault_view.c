/* vault_view: see vault_view.h. Every member is copied by name, so no
 * credential's value is ever copied out. */
#include "sandbox/vault_view.h"

#include <errno.h>
#include <stdbool.h>

#include "core/json_input.h"
#include "sandbox/vault_entry.h"

/* The sanitized copy of one stored credential or binding. */
static int meta(struct json_object *e, bool binding, struct json_object **ret)
{
        struct json_object *o = json_object_new_object(), *x, *a, *l;
        int r = -ENOMEM;

        *ret = NULL;
        if (!o || vault_add_str(o, "name", json_get_str(e, "name") ?: "") < 0 ||
            vault_add_int(o, "revision",
                          json_object_get_int64(
                                  json_object_object_get_ex(e, "revision", &x) ? x : NULL)) < 0)
                goto out;
        if (!binding) {
                if (vault_add_str(o, "sourceType", json_get_str(e, "sourceType") ?: "inline") < 0)
                        goto out;
        } else {
                struct json_object *m = NULL, *ao = json_object_new_object();

                if (!ao ||
                    json_object_deep_copy(json_object_object_get_ex(e, "match", &x) ? x : NULL, &m,
                                          NULL) < 0 ||
                    json_add(o, "match", m) < 0) {
                        json_put(ao);
                        goto out;
                }
                if (json_add(o, "auth", ao) < 0 || !json_object_object_get_ex(e, "auth", &a))
                        goto out;
                /* Everything of auth but values: they live in credentials only,
                 * so copying auth's members by name copies no secret. */
                static const char *const keys[] = { "type", "name", "credential", "headers",
                                                    "substitutions" };
                for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
                        if (!json_object_object_get_ex(a, keys[i], &l))
                                continue;
                        if (json_add(ao, keys[i], json_object_get(l)) < 0)
                                goto out;
                }
        }
        *ret = o;
        o = NULL;
        r = 0;
out:
        json_put(o);
        return r;
}

static int view_list(struct json_object *v, bool binding, struct json_object **ret)
{
        struct json_object *arr, *out = json_object_new_array();

        *ret = NULL;
        if (!out)
                return -ENOMEM;
        (void)json_object_object_get_ex(v, binding ? "bindings" : "credentials", &arr);
        for (size_t i = 0; arr && i < json_object_array_length(arr); i++) {
                struct json_object *m;

                if (meta(json_object_array_get_idx(arr, i), binding, &m) < 0 ||
                    json_object_array_add(out, m) < 0) {
                        json_put(out);
                        return -ENOMEM;
                }
        }
        *ret = out;
        return 0;
}

int vault_view(struct json_object *v, enum vault_view what, struct json_object **ret)
{
        struct json_object *o = json_object_new_object(), *l = NULL, *x;

        *ret = NULL;
        if (!o || vault_add_int(o, "revision",
                                json_object_get_int64(
                                        json_object_object_get_ex(v, "revision", &x) ? x : NULL)) < 0)
                goto fail;
        if (what != VAULT_VIEW_BINDINGS &&
            (view_list(v, false, &l) < 0 || json_add(o, "credentials", l) < 0))
                goto fail;
        if (what != VAULT_VIEW_CREDENTIALS &&
            (view_list(v, true, &l) < 0 || json_add(o, "bindings", l) < 0))
                goto fail;
        *ret = o;
        return 0;
fail:
        json_put(o);
        return -ENOMEM;
}

int vault_view_one(struct json_object *v, enum vault_view what, const char *name,
                   struct json_object **ret)
{
        struct json_object *arr = NULL;
        bool binding = what == VAULT_VIEW_BINDINGS;
        int at;

        *ret = NULL;
        (void)json_object_object_get_ex(v, binding ? "bindings" : "credentials", &arr);
        if ((at = vault_entry_find(arr, name)) < 0)
                return -ENOENT;
        return meta(json_object_array_get_idx(arr, (size_t)at), binding, ret);
}

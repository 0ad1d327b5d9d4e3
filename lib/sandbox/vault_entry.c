/* vault_entry: see vault_entry.h. Messages name members and valid names,
 * never a value. */
#include "sandbox/vault_entry.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/egress_policy.h"
#include "core/json_input.h"
#include "sandbox/vault.h"

static const char *const auth_types[] = { "bearer",        "basic",       "apiKey",
                                          "customHeaders", "passthrough", NULL };
static const char *const surfaces[] = { "path", "query", "header", "body", NULL };
/* Headers the injector must never set: they frame the request. */
static const char *const framing_headers[] = {
        "host", "content-length", "transfer-encoding", "connection", "upgrade",
        "te",   "trailer",        "proxy-connection",  "keep-alive", NULL
};

static bool in_list(const char *const *list, const char *s)
{
        for (size_t i = 0; list[i]; i++)
                if (!strcasecmp(list[i], s))
                        return true;
        return false;
}

/* Enums of the spec are case-sensitive. */
static bool one_of(const char *const *list, const char *s)
{
        for (size_t i = 0; list[i]; i++)
                if (!strcmp(list[i], s))
                        return true;
        return false;
}

/* Member key of o with json type t: 0 with *ret (borrowed), -ENOENT when
 * absent or null (error if required), -EINVAL when of another type. */
int vault_json_member(struct json_object *o, const char *where, const char *key, json_type t,
                      bool required, struct json_object **ret, char *err, size_t errlen)
{
        static const char *const tname[] = { [json_type_array] = "an array",
                                             [json_type_object] = "an object",
                                             [json_type_string] = "a string",
                                             [json_type_int] = "an integer" };

        *ret = NULL;
        if (!json_object_object_get_ex(o, key, ret) || json_object_is_type(*ret, json_type_null)) {
                *ret = NULL;
                if (required)
                        snprintf(err, errlen, "%s: %s is required", where, key);
                return required ? -EINVAL : -ENOENT;
        }
        if (!json_object_is_type(*ret, t)) {
                snprintf(err, errlen, "%s: %s must be %s", where, key, tname[t]);
                *ret = NULL;
                return -EINVAL;
        }
        return 0;
}

/* A string member that must be a valid name. */
static int name_member(struct json_object *o, const char *where, const char *key, bool required,
                       const char **ret, char *err, size_t errlen)
{
        struct json_object *v;
        int r = vault_json_member(o, where, key, json_type_string, required, &v, err, errlen);

        *ret = NULL;
        if (r < 0)
                return r;
        if (!vault_name_valid(json_object_get_string(v))) {
                snprintf(err, errlen,
                         "%s: %s must be 1 to %d characters of [A-Za-z0-9._-] starting with a "
                         "letter or digit",
                         where, key, VAULT_NAME_MAX);
                return -EINVAL;
        }
        *ret = json_object_get_string(v);
        return 0;
}

int vault_add_str(struct json_object *o, const char *key, const char *s)
{
        return json_add_str(o, key, s);
}

int vault_add_int(struct json_object *o, const char *key, int64_t n)
{
        return json_add(o, key, json_object_new_int64(n));
}

/* An array member of 1..max strings, each checked by ok (which may rewrite
 * it into buf) into a new array *ret (NULL when absent and optional). */
static int str_list(struct json_object *o, const char *where, const char *key, bool required,
                    size_t max, int (*ok)(const char *s, char *buf, size_t size),
                    struct json_object **ret, char *err, size_t errlen)
{
        struct json_object *a, *out = NULL;
        char buf[VAULT_PLACEHOLDER_MAX + 1];
        int r = vault_json_member(o, where, key, json_type_array, required, &a, err, errlen);
        size_t n;

        *ret = NULL;
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        n = json_object_array_length(a);
        if (n < 1 || n > max) {
                snprintf(err, errlen, "%s: %s must hold 1 to %zu items", where, key, max);
                return -EINVAL;
        }
        if (!(out = json_object_new_array()))
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                struct json_object *s = json_object_array_get_idx(a, i);
                size_t len = json_object_get_string_len(s);

                if (!json_object_is_type(s, json_type_string) ||
                    strlen(json_object_get_string(s)) != len || len >= sizeof(buf) ||
                    ok(json_object_get_string(s), buf, sizeof(buf)) < 0) {
                        snprintf(err, errlen, "%s: %s[%zu] is not valid", where, key, i);
                        json_put(out);
                        return -EINVAL;
                }
                bool dup = false;
                for (size_t j = 0; j < json_object_array_length(out) && !dup; j++)
                        dup = !strcmp(json_object_get_string(json_object_array_get_idx(out, j)), buf);
                if (!dup && json_object_array_add(out, json_object_new_string(buf)) < 0) {
                        json_put(out);
                        return -ENOMEM;
                }
        }
        *ret = out;
        return 0;
}

static int ok_host(const char *s, char *buf, size_t size)
{
        char e[128], out[EGRESS_TARGET_MAX + 1];

        if (egress_target_normalize(s, out, e, sizeof(e)) < 0 || strlen(out) >= size)
                return -EINVAL;
        snprintf(buf, size, "%s", out);
        return 0;
}

static int ok_scheme(const char *s, char *buf, size_t size)
{
        if (strcmp(s, "http") && strcmp(s, "https"))
                return -EINVAL;
        snprintf(buf, size, "%s", s);
        return 0;
}

static int ok_method(const char *s, char *buf, size_t size)
{
        size_t n = strlen(s);

        if (n < 1 || n > 16 || n >= size)
                return -EINVAL;
        for (size_t i = 0; i <= n; i++) {
                if (i < n && !isalpha((unsigned char)s[i]))
                        return -EINVAL;
                buf[i] = (char)toupper((unsigned char)s[i]);
        }
        return 0;
}

/* Printable ASCII without spaces, 1..max. */
static bool printable(const char *s, size_t max)
{
        size_t n = strlen(s);

        if (n < 1 || n > max)
                return false;
        for (size_t i = 0; i < n; i++)
                if (s[i] < 0x21 || s[i] > 0x7e)
                        return false;
        return true;
}

static int ok_path(const char *s, char *buf, size_t size)
{
        if (s[0] != '/' || !printable(s, VAULT_PATH_MAX))
                return -EINVAL;
        snprintf(buf, size, "%s", s);
        return 0;
}

static int ok_surface(const char *s, char *buf, size_t size)
{
        if (!one_of(surfaces, s))
                return -EINVAL;
        snprintf(buf, size, "%s", s);
        return 0;
}

static bool header_name_ok(const char *s)
{
        size_t n = strlen(s);

        if (n < 1 || n > VAULT_HEADER_NAME_MAX || in_list(framing_headers, s))
                return false;
        for (size_t i = 0; i < n; i++)
                if (!isalnum((unsigned char)s[i]) && !strchr("!#$%&'*+-.^_`|~", s[i]))
                        return false;
        return true;
}

int vault_entry_credential(struct json_object *c, int64_t rev, struct json_object **ret, char *err,
                           size_t errlen)
{
        struct json_object *src, *val, *out = NULL;
        const char *name, *type;
        char where[96];
        size_t len;
        int r;

        *ret = NULL;
        if (!json_object_is_type(c, json_type_object)) {
                snprintf(err, errlen, "credentials: each item must be an object {name, source}");
                return -EINVAL;
        }
        if ((r = name_member(c, "credential", "name", true, &name, err, errlen)) < 0)
                return r;
        snprintf(where, sizeof(where), "credential %s", name);
        if ((r = vault_json_member(c, where, "source", json_type_object, true, &src, err, errlen)) < 0)
                return r;
        type = json_get_str(src, "type");
        if (json_object_object_get_ex(src, "type", NULL) && (!type || strcmp(type, "inline"))) {
                snprintf(err, errlen, "%s: source.type must be \"inline\"", where);
                return -EINVAL;
        }
        if ((r = vault_json_member(src, where, "value", json_type_string, true, &val, err, errlen)) <
            0)
                return r;
        len = json_object_get_string_len(val);
        if (len < 1 || len > VAULT_VALUE_MAX || strlen(json_object_get_string(val)) != len ||
            strpbrk(json_object_get_string(val), "\r\n")) {
                snprintf(err, errlen, "%s: source.value must be 1 to %d bytes without NUL, CR or LF",
                         where, VAULT_VALUE_MAX);
                return -EINVAL;
        }
        if (!(out = json_object_new_object()) || vault_add_str(out, "name", name) < 0 ||
            vault_add_str(out, "sourceType", "inline") < 0 ||
            vault_add_int(out, "revision", rev) < 0 ||
            vault_add_str(out, "value", json_object_get_string(val)) < 0) {
                json_put(out);
                return -ENOMEM;
        }
        *ret = out;
        return 0;
}

static int parse_match(struct json_object *b, const char *where, struct json_object **ret,
                       char *err, size_t errlen)
{
        struct json_object *m, *out = NULL, *l = NULL, *ports;
        int r;

        *ret = NULL;
        if ((r = vault_json_member(b, where, "match", json_type_object, true, &m, err, errlen)) < 0)
                return r;
        r = vault_json_member(m, where, "ports", json_type_array, false, &ports, err, errlen);
        if (r == -EINVAL)
                return r;
        /* Deprecated: the port follows the scheme; 80 and 443 are accepted and ignored. */
        for (size_t i = 0; ports && i < json_object_array_length(ports); i++) {
                struct json_object *p = json_object_array_get_idx(ports, i);
                int64_t v = json_object_get_int64(p);

                if (i >= VAULT_LIST_MAX || !json_object_is_type(p, json_type_int) ||
                    (v != 80 && v != 443)) {
                        snprintf(err, errlen, "%s: match.ports may only hold 80 or 443", where);
                        return -EINVAL;
                }
        }
        if (!(out = json_object_new_object()))
                return -ENOMEM;
        static const struct {
                const char *key;
                bool required;
                size_t max;
                int (*ok)(const char *, char *, size_t);
        } lists[] = {
                { "hosts", true, VAULT_HOSTS_MAX, ok_host },
                { "schemes", false, 2, ok_scheme },
                { "methods", false, VAULT_LIST_MAX, ok_method },
                { "paths", false, VAULT_LIST_MAX, ok_path },
        };
        for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
                char w[128];

                snprintf(w, sizeof(w), "%s: match", where);
                r = str_list(m, w, lists[i].key, lists[i].required, lists[i].max, lists[i].ok, &l,
                             err, errlen);
                if (r < 0)
                        goto fail;
                if (l && (r = json_add(out, lists[i].key, l)) < 0)
                        goto fail;
                l = NULL;
        }
        *ret = out;
        return 0;
fail:
        json_put(out);
        return r;
}

static int parse_substitutions(struct json_object *a, const char *where, struct json_object **ret,
                               char *err, size_t errlen)
{
        struct json_object *subs, *out = NULL, *in = NULL, *e = NULL;
        size_t n;
        int r = vault_json_member(a, where, "substitutions", json_type_array, false, &subs, err,
                                  errlen);

        *ret = NULL;
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        n = json_object_array_length(subs);
        if (n > VAULT_LIST_MAX) {
                snprintf(err, errlen, "%s: auth.substitutions may hold at most %d items", where,
                         VAULT_LIST_MAX);
                return -EINVAL;
        }
        if (!(out = json_object_new_array()))
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                struct json_object *s = json_object_array_get_idx(subs, i), *ph;
                const char *cred;
                char w[160];

                snprintf(w, sizeof(w), "%s: auth.substitutions[%zu]", where, i);
                r = -EINVAL;
                if (!json_object_is_type(s, json_type_object)) {
                        snprintf(err, errlen, "%s must be an object {credential, placeholder, in}",
                                 w);
                        goto fail;
                }
                if ((r = name_member(s, w, "credential", true, &cred, err, errlen)) < 0 ||
                    (r = vault_json_member(s, w, "placeholder", json_type_string, true, &ph, err,
                                           errlen)) < 0)
                        goto fail;
                if (strlen(json_object_get_string(ph)) != (size_t)json_object_get_string_len(ph) ||
                    !printable(json_object_get_string(ph), VAULT_PLACEHOLDER_MAX)) {
                        snprintf(err, errlen,
                                 "%s: placeholder must be 1 to %d printable ASCII characters "
                                 "without spaces",
                                 w, VAULT_PLACEHOLDER_MAX);
                        r = -EINVAL;
                        goto fail;
                }
                if ((r = str_list(s, w, "in", true, 4, ok_surface, &in, err, errlen)) < 0)
                        goto fail;
                r = -ENOMEM;
                if (!(e = json_object_new_object()) || vault_add_str(e, "credential", cred) < 0 ||
                    vault_add_str(e, "placeholder", json_object_get_string(ph)) < 0 ||
                    json_add(e, "in", in) < 0)
                        goto fail;
                in = NULL;
                if (json_object_array_add(out, e) < 0)
                        goto fail;
                e = NULL;
        }
        *ret = out;
        return 0;
fail:
        json_put(in);
        json_put(e);
        json_put(out);
        return r;
}

static int parse_auth(struct json_object *b, const char *where, struct json_object **ret, char *err,
                      size_t errlen)
{
        struct json_object *a, *out = NULL, *hs, *subs = NULL, *ho = NULL;
        const char *type, *cred = NULL, *hname = NULL;
        char w[128];
        int r;

        *ret = NULL;
        snprintf(w, sizeof(w), "%s: auth", where);
        if ((r = vault_json_member(b, where, "auth", json_type_object, true, &a, err, errlen)) < 0)
                return r;
        type = json_get_str(a, "type");
        if (!type || !one_of(auth_types, type)) {
                snprintf(err, errlen,
                         "%s.type must be one of bearer, basic, apiKey, customHeaders, passthrough",
                         w);
                return -EINVAL;
        }
        bool needs_cred = !strcmp(type, "bearer") || !strcmp(type, "basic") ||
                          !strcmp(type, "apiKey");
        if (needs_cred && (r = name_member(a, w, "credential", true, &cred, err, errlen)) < 0)
                return r;
        if (!strcmp(type, "apiKey")) {
                hname = json_get_str(a, "name");
                if (!hname || !header_name_ok(hname)) {
                        snprintf(err, errlen,
                                 "%s.name must be a header name (1 to %d token characters, not a "
                                 "framing header such as Host or Content-Length)",
                                 w, VAULT_HEADER_NAME_MAX);
                        return -EINVAL;
                }
        }
        if ((r = parse_substitutions(a, where, &subs, err, errlen)) < 0)
                return r;
        r = -ENOMEM;
        if (!(out = json_object_new_object()) || vault_add_str(out, "type", type) < 0 ||
            (cred && vault_add_str(out, "credential", cred) < 0) ||
            (hname && vault_add_str(out, "name", hname) < 0))
                goto fail;
        if (!strcmp(type, "customHeaders")) {
                size_t n;

                if ((r = vault_json_member(a, w, "headers", json_type_array, true, &hs, err,
                                           errlen)) < 0)
                        goto fail;
                n = json_object_array_length(hs);
                r = -EINVAL;
                if (n < 1 || n > VAULT_LIST_MAX) {
                        snprintf(err, errlen, "%s.headers must hold 1 to %d items", w,
                                 VAULT_LIST_MAX);
                        goto fail;
                }
                r = -ENOMEM;
                if (!(ho = json_object_new_array()))
                        goto fail;
                for (size_t i = 0; i < n; i++) {
                        struct json_object *h = json_object_array_get_idx(hs, i), *e = NULL;
                        const char *hn = json_get_str(h, "name"), *hc;
                        char hw[160];

                        snprintf(hw, sizeof(hw), "%s.headers[%zu]", w, i);
                        r = -EINVAL;
                        if (!hn || !header_name_ok(hn)) {
                                snprintf(err, errlen,
                                         "%s.name must be a header name (not a framing header)", hw);
                                goto fail;
                        }
                        if ((r = name_member(h, hw, "credential", true, &hc, err, errlen)) < 0)
                                goto fail;
                        r = -ENOMEM;
                        if (!(e = json_object_new_object()) || vault_add_str(e, "name", hn) < 0 ||
                            vault_add_str(e, "credential", hc) < 0 ||
                            json_object_array_add(ho, e) < 0) {
                                json_put(e);
                                goto fail;
                        }
                }
                if ((r = json_add(out, "headers", ho)) < 0) {
                        ho = NULL;
                        goto fail;
                }
                ho = NULL;
        }
        if (!strcmp(type, "passthrough") && !subs) {
                snprintf(err, errlen, "%s: passthrough needs substitutions", w);
                r = -EINVAL;
                goto fail;
        }
        if (subs && (r = json_add(out, "substitutions", subs)) < 0) {
                subs = NULL;
                goto fail;
        }
        *ret = out;
        return 0;
fail:
        json_put(ho);
        json_put(subs);
        json_put(out);
        return r;
}

int vault_entry_binding(struct json_object *b, int64_t rev, struct json_object **ret, char *err,
                        size_t errlen)
{
        struct json_object *out = NULL, *m = NULL, *a = NULL;
        const char *name;
        char where[96];
        int r;

        *ret = NULL;
        if (!json_object_is_type(b, json_type_object)) {
                snprintf(err, errlen, "bindings: each item must be an object {name, match, auth}");
                return -EINVAL;
        }
        if ((r = name_member(b, "binding", "name", true, &name, err, errlen)) < 0)
                return r;
        snprintf(where, sizeof(where), "binding %s", name);
        if ((r = parse_match(b, where, &m, err, errlen)) < 0 ||
            (r = parse_auth(b, where, &a, err, errlen)) < 0)
                goto fail;
        r = -ENOMEM;
        if (!(out = json_object_new_object()) || vault_add_str(out, "name", name) < 0 ||
            vault_add_int(out, "revision", rev) < 0)
                goto fail;
        r = json_add(out, "match", m);
        m = NULL;
        if (r < 0)
                goto fail;
        r = json_add(out, "auth", a);
        a = NULL;
        if (r < 0)
                goto fail;
        *ret = out;
        return 0;
fail:
        json_put(m);
        json_put(a);
        json_put(out);
        return r;
}

/* Index of the entry named name in array arr, or -1. */

int vault_entry_find(struct json_object *arr, const char *name)
{
        for (size_t i = 0; arr && i < json_object_array_length(arr); i++)
                if (!strcmp(json_get_str(json_object_array_get_idx(arr, i), "name") ?: "", name))
                        return (int)i;
        return -1;
}

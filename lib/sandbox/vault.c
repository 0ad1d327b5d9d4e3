/* vault: see vault.h. Messages name members and valid names, never a value. */
#include "vault.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "egress_policy.h"
#include "json_input.h"

static const char *const auth_types[] = { "bearer",        "basic",       "apiKey",
                                          "customHeaders", "passthrough", NULL };
static const char *const surfaces[] = { "path", "query", "header", "body", NULL };
/* Headers the injector must never set: they frame the request. */
static const char *const framing_headers[] = {
        "host", "content-length", "transfer-encoding", "connection", "upgrade",
        "te",   "trailer",        "proxy-connection",  "keep-alive", NULL
};

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
static int member(struct json_object *o, const char *where, const char *key, json_type t,
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
        int r = member(o, where, key, json_type_string, required, &v, err, errlen);

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

static int add_str(struct json_object *o, const char *key, const char *s)
{
        return json_add_str(o, key, s);
}

static int add_int(struct json_object *o, const char *key, int64_t n)
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
        int r = member(o, where, key, json_type_array, required, &a, err, errlen);
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

static int parse_credential(struct json_object *c, int64_t rev, struct json_object **ret, char *err,
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
        if ((r = member(c, where, "source", json_type_object, true, &src, err, errlen)) < 0)
                return r;
        type = json_get_str(src, "type");
        if (json_object_object_get_ex(src, "type", NULL) && (!type || strcmp(type, "inline"))) {
                snprintf(err, errlen, "%s: source.type must be \"inline\"", where);
                return -EINVAL;
        }
        if ((r = member(src, where, "value", json_type_string, true, &val, err, errlen)) < 0)
                return r;
        len = json_object_get_string_len(val);
        if (len < 1 || len > VAULT_VALUE_MAX || strlen(json_object_get_string(val)) != len ||
            strpbrk(json_object_get_string(val), "\r\n")) {
                snprintf(err, errlen, "%s: source.value must be 1 to %d bytes without NUL, CR or LF",
                         where, VAULT_VALUE_MAX);
                return -EINVAL;
        }
        if (!(out = json_object_new_object()) || add_str(out, "name", name) < 0 ||
            add_str(out, "sourceType", "inline") < 0 || add_int(out, "revision", rev) < 0 ||
            add_str(out, "value", json_object_get_string(val)) < 0) {
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
        if ((r = member(b, where, "match", json_type_object, true, &m, err, errlen)) < 0)
                return r;
        r = member(m, where, "ports", json_type_array, false, &ports, err, errlen);
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
        int r = member(a, where, "substitutions", json_type_array, false, &subs, err, errlen);

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
                    (r = member(s, w, "placeholder", json_type_string, true, &ph, err, errlen)) < 0)
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
                if (!(e = json_object_new_object()) || add_str(e, "credential", cred) < 0 ||
                    add_str(e, "placeholder", json_object_get_string(ph)) < 0 ||
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
        if ((r = member(b, where, "auth", json_type_object, true, &a, err, errlen)) < 0)
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
        if (!(out = json_object_new_object()) || add_str(out, "type", type) < 0 ||
            (cred && add_str(out, "credential", cred) < 0) ||
            (hname && add_str(out, "name", hname) < 0))
                goto fail;
        if (!strcmp(type, "customHeaders")) {
                size_t n;

                if ((r = member(a, w, "headers", json_type_array, true, &hs, err, errlen)) < 0)
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
                        if (!(e = json_object_new_object()) || add_str(e, "name", hn) < 0 ||
                            add_str(e, "credential", hc) < 0 || json_object_array_add(ho, e) < 0) {
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

static int parse_binding(struct json_object *b, int64_t rev, struct json_object **ret, char *err,
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
        if (!(out = json_object_new_object()) || add_str(out, "name", name) < 0 ||
            add_int(out, "revision", rev) < 0)
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
static int find(struct json_object *arr, const char *name)
{
        for (size_t i = 0; arr && i < json_object_array_length(arr); i++)
                if (!strcmp(json_get_str(json_object_array_get_idx(arr, i), "name") ?: "", name))
                        return (int)i;
        return -1;
}

static bool has_credential(struct json_object *creds, const char *name)
{
        return !name || find(creds, name) >= 0;
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
        int r = member(o, what, key, json_type_array, false, &a, err, errlen);

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
                            ? parse_binding(json_object_array_get_idx(a, i), rev, &e, err, errlen)
                            : parse_credential(json_object_array_get_idx(a, i), rev, &e, err, errlen);
                if (r < 0)
                        return r;
                name = json_get_str(e, "name");
                at = find(dst, name);
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
        int r = member(o, what, "delete", json_type_array, false, &a, err, errlen);

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
                if ((at = find(dst, name)) < 0) {
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
        if (!(v = json_object_new_object()) || add_int(v, "revision", 1) < 0 ||
            json_add(v, "credentials", creds = json_object_new_array()) < 0 ||
            json_add(v, "bindings", binds = json_object_new_array()) < 0)
                goto out;
        if ((r = member(in, "vault", "credentials", json_type_array, true, &a, err, errlen)) < 0 ||
            (r = member(in, "vault", "bindings", json_type_array, true, &a, err, errlen)) < 0)
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
        r = member(in, "vault", "expectedRevision", json_type_int, false, &exp, err, errlen);
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

                r = member(in, "vault", what, json_type_object, false, &set, err, errlen);
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

/* The sanitized copy of one stored credential or binding. */
static int meta(struct json_object *e, bool binding, struct json_object **ret)
{
        struct json_object *o = json_object_new_object(), *x, *a, *l;
        int r = -ENOMEM;

        *ret = NULL;
        if (!o || add_str(o, "name", json_get_str(e, "name") ?: "") < 0 ||
            add_int(o, "revision",
                    json_object_get_int64(json_object_object_get_ex(e, "revision", &x) ? x : NULL)) <
                    0)
                goto out;
        if (!binding) {
                if (add_str(o, "sourceType", json_get_str(e, "sourceType") ?: "inline") < 0)
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
        if (!o || add_int(o, "revision",
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
        if ((at = find(arr, name)) < 0)
                return -ENOENT;
        return meta(json_object_array_get_idx(arr, (size_t)at), binding, ret);
}

/* vault_inject: see vault_inject.h. */
#include "sandbox/vault_inject.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <openssl/crypto.h>

#include "core/egress_policy.h"
#include "core/json_input.h"
#include "sandbox/vault_seal.h"

void vault_http_clear(struct vault_http *h)
{
        free(h->method);
        free(h->uri);
        free(h->version);
        for (size_t i = 0; i < h->n; i++) {
                free(h->name[i]);
                if (h->value[i])
                        OPENSSL_cleanse(h->value[i], strlen(h->value[i]));
                free(h->value[i]);
        }
        if (h->body)
                OPENSSL_cleanse(h->body, h->body_len);
        free(h->body);
        memset(h, 0, sizeof(*h));
}

static bool clean(const char *s, size_t n)
{
        for (size_t i = 0; i < n; i++)
                if (s[i] == '\r' || s[i] == '\n' || s[i] == '\0')
                        return false;
        return true;
}

/* The length of uri's "http://" or "https://" (any case), 0 for anything
 * else: the scheme of an absolute URI a proxy gets (a request Squid
 * decrypted from a bumped CONNECT has https). */
static size_t scheme_len(const char *uri)
{
        return !strncasecmp(uri, "http://", 7) ? 7 : !strncasecmp(uri, "https://", 8) ? 8 : 0;
}

int vault_http_parse(const char *head, size_t len, struct vault_http *h)
{
        const char *p = head, *end = head + len, *eol, *sp1, *sp2;
        int r = -EINVAL;

        memset(h, 0, sizeof(*h));
        if (len > VAULT_HTTP_HEAD_MAX || len < 4 || memcmp(end - 4, "\r\n\r\n", 4))
                return -EINVAL;
        eol = memmem(p, (size_t)(end - p), "\r\n", 2);
        sp1 = memchr(p, ' ', (size_t)(eol - p));
        sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)) : NULL;
        if (!sp1 || !sp2 || !clean(p, (size_t)(eol - p)) || sp1 == p || sp2 == sp1 + 1)
                return -EINVAL;
        if (!(h->method = strndup(p, (size_t)(sp1 - p))) ||
            !(h->uri = strndup(sp1 + 1, (size_t)(sp2 - sp1 - 1))) ||
            !(h->version = strndup(sp2 + 1, (size_t)(eol - sp2 - 1)))) {
                r = -ENOMEM;
                goto fail;
        }
        if (!scheme_len(h->uri) || strchr(h->uri, ' '))
                goto fail;
        for (p = eol + 2; p < end - 2; p = eol + 2) {
                const char *colon, *v;

                eol = memmem(p, (size_t)(end - p), "\r\n", 2);
                colon = memchr(p, ':', (size_t)(eol - p));
                if (!colon || colon == p || h->n >= VAULT_HTTP_HEADERS_MAX ||
                    !clean(p, (size_t)(eol - p)) || memchr(p, ' ', (size_t)(colon - p)))
                        goto fail;
                for (v = colon + 1; v < eol && (*v == ' ' || *v == '\t'); v++)
                        ;
                h->name[h->n] = strndup(p, (size_t)(colon - p));
                h->value[h->n] = strndup(v, (size_t)(eol - v));
                h->n++;
                if (!h->name[h->n - 1] || !h->value[h->n - 1]) {
                        r = -ENOMEM;
                        goto fail;
                }
        }
        return 0;
fail:
        vault_http_clear(h);
        return r;
}

int vault_http_format(const struct vault_http *h, char **ret, size_t *ret_len)
{
        size_t n = strlen(h->method) + strlen(h->uri) + strlen(h->version) +
                   6 /* two spaces, two CRLF */,
               off;
        char *out;

        for (size_t i = 0; i < h->n; i++)
                n += strlen(h->name[i]) + strlen(h->value[i]) + 4;
        if (!(out = malloc(n + 1)))
                return -ENOMEM;
        off = (size_t)sprintf(out, "%s %s %s\r\n", h->method, h->uri, h->version);
        for (size_t i = 0; i < h->n; i++)
                off += (size_t)sprintf(out + off, "%s: %s\r\n", h->name[i], h->value[i]);
        off += (size_t)sprintf(out + off, "\r\n");
        *ret = out;
        *ret_len = off;
        return 0;
}

static const char *header_get(const struct vault_http *h, const char *name)
{
        for (size_t i = 0; i < h->n; i++)
                if (!strcasecmp(h->name[i], name))
                        return h->value[i];
        return NULL;
}

/* Set name: value, replacing every field of that name. */
static int header_set(struct vault_http *h, const char *name, const char *value)
{
        size_t j = 0;
        char *n, *v;

        for (size_t i = 0; i < h->n; i++) {
                if (!strcasecmp(h->name[i], name)) {
                        free(h->name[i]);
                        OPENSSL_cleanse(h->value[i], strlen(h->value[i]));
                        free(h->value[i]);
                        continue;
                }
                h->name[j] = h->name[i];
                h->value[j++] = h->value[i];
        }
        h->n = j;
        if (h->n >= VAULT_HTTP_HEADERS_MAX)
                return -EINVAL;
        if (!(n = strdup(name)) || !(v = strdup(value))) {
                free(n);
                return -ENOMEM;
        }
        h->name[h->n] = n;
        h->value[h->n++] = v;
        return 0;
}

/* host (lower case, no port, no userinfo) and path ("/..." up to '?') of
 * an absolute http URI. */
static int uri_parts(const char *uri, char *host, size_t hsize, const char **ret_path)
{
        const char *a = uri + scheme_len(uri), *e = a + strcspn(a, "/?#"), *at, *colon;
        size_t n;

        at = memchr(a, '@', (size_t)(e - a));
        if (at)
                a = at + 1;
        colon = a < e && *a == '[' ? memchr(a, ']', (size_t)(e - a))
                                   : memchr(a, ':', (size_t)(e - a));
        n = (size_t)((colon && *a != '[' ? colon : e) - a);
        if (n == 0 || n >= hsize)
                return -EINVAL;
        for (size_t i = 0; i < n; i++)
                host[i] = (char)((a[i] >= 'A' && a[i] <= 'Z') ? a[i] + 32 : a[i]);
        host[n] = '\0';
        *ret_path = *e == '/' ? e : "/";
        return 0;
}

static bool list_has(struct json_object *o, const char *key, const char *s, bool glob)
{
        struct json_object *l;

        if (!json_object_object_get_ex(o, key, &l))
                return true; /* absent: any */
        for (size_t i = 0; i < json_object_array_length(l); i++) {
                const char *e = json_object_get_string(json_object_array_get_idx(l, i));

                if (glob ? fnmatch(e, s, 0) == 0 ||
                                    (strchr(e, '*') == NULL && !strncmp(s, e, strlen(e)))
                         : !strcmp(e, s))
                        return true;
        }
        return false;
}

static bool host_in(struct json_object *match, const char *host)
{
        struct json_object *hosts;
        struct egress_policy *p = malloc(sizeof(*p));
        bool yes = false;

        if (!p || !json_object_object_get_ex(match, "hosts", &hosts)) {
                free(p);
                return false;
        }
        egress_policy_deny_all(p);
        for (size_t i = 0; i < json_object_array_length(hosts) && i < EGRESS_RULES_MAX; i++) {
                p->rules[p->n].allow = true;
                snprintf(p->rules[p->n++].target, sizeof(p->rules[0].target), "%s",
                         json_object_get_string(json_object_array_get_idx(hosts, i)));
        }
        yes = egress_policy_allows(p, host);
        free(p);
        return yes;
}

bool vault_host_bound(struct json_object *v, const char *scheme, const char *host)
{
        struct json_object *binds, *m;

        if (!v || !json_object_object_get_ex(v, "bindings", &binds))
                return false;
        for (size_t i = 0; i < json_object_array_length(binds); i++)
                if (json_object_object_get_ex(json_object_array_get_idx(binds, i), "match", &m) &&
                    list_has(m, "schemes", scheme, false) && host_in(m, host))
                        return true;
        return false;
}

/* The value of credential name (malloc'd; the caller cleanses it). */
static int credential(struct json_object *v, const uint8_t *key, const char *sid, const char *name,
                      char **ret)
{
        struct json_object *creds;

        *ret = NULL;
        if (!json_object_object_get_ex(v, "credentials", &creds))
                return -EBADMSG;
        for (size_t i = 0; i < json_object_array_length(creds); i++) {
                struct json_object *c = json_object_array_get_idx(creds, i);
                const char *n = json_get_str(c, "name"), *val = json_get_str(c, "value"),
                           *sealed = json_get_str(c, "sealed");

                if (!n || strcmp(n, name))
                        continue;
                if (val)
                        return (*ret = strdup(val)) ? 0 : -ENOMEM;
                if (sealed && key)
                        return vault_unseal(key, sid, name, sealed, ret);
                return -EBADMSG;
        }
        return -EBADMSG;
}

/* Replace every occurrence of ph in *s (length *len) by rep; *s reallocated. */
static int replace_all(char **s, size_t *len, const char *ph, const char *rep, size_t max)
{
        size_t pl = strlen(ph), rl = strlen(rep), count = 0, n = 0;
        const char *p = *s, *q;
        char *out;

        for (q = *s; (q = memmem(q, *len - (size_t)(q - *s), ph, pl)); q += pl)
                count++;
        if (!count)
                return 0;
        if (*len - count * pl + count * rl > max)
                return -EINVAL;
        if (!(out = malloc(*len - count * pl + count * rl + 1)))
                return -ENOMEM;
        for (q = *s; (q = memmem(p, *len - (size_t)(p - *s), ph, pl)); p = q + pl) {
                memcpy(out + n, p, (size_t)(q - p));
                n += (size_t)(q - p);
                memcpy(out + n, rep, rl);
                n += rl;
        }
        memcpy(out + n, p, *len - (size_t)(p - *s));
        n += *len - (size_t)(p - *s);
        out[n] = '\0';
        OPENSSL_cleanse(*s, *len);
        free(*s);
        *s = out;
        *len = n;
        return 0;
}

static char *url_encode(const char *s, bool form)
{
        char *out = malloc(strlen(s) * 3 + 1), *o = out;

        if (!out)
                return NULL;
        for (; *s; s++) {
                unsigned char c = (unsigned char)*s;

                if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    strchr("-._~", c))
                        *o++ = (char)c;
                else if (form && c == ' ')
                        *o++ = '+';
                else
                        o += sprintf(o, "%%%02X", c);
        }
        *o = '\0';
        return out;
}

static char *json_escape(const char *s)
{
        struct json_object *j = json_object_new_string(s);
        const char *t = j ? json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN |
                                                                      JSON_C_TO_STRING_NOSLASHESCAPE)
                          : NULL;
        char *out = t ? strndup(t + 1, strlen(t) - 2) : NULL; /* without the quotes */

        json_object_put(j);
        return out;
}

static int substitute(struct vault_http *h, struct json_object *sub, const char *value)
{
        const char *ph = json_get_str(sub, "placeholder");
        struct json_object *in;
        int r = 0;

        if (!ph || !json_object_object_get_ex(sub, "in", &in))
                return 0;
        for (size_t i = 0; i < json_object_array_length(in) && r == 0; i++) {
                const char *where = json_object_get_string(json_object_array_get_idx(in, i));

                if (!strcmp(where, "header")) {
                        for (size_t k = 0; k < h->n && r == 0; k++) {
                                size_t l = strlen(h->value[k]);
                                r = replace_all(&h->value[k], &l, ph, value, VAULT_HTTP_HEAD_MAX);
                        }
                } else if (!strcmp(where, "path") || !strcmp(where, "query")) {
                        /* never the authority: the request must still go where the binding matched */
                        size_t sl = scheme_len(h->uri);
                        size_t auth_end = sl + strcspn(h->uri + sl, "/?#");
                        size_t at = auth_end + strcspn(h->uri + auth_end, "?#");
                        bool path = !strcmp(where, "path");
                        size_t from = path ? auth_end : at, to = path ? at : strlen(h->uri);
                        char *enc = url_encode(value, false),
                             *part = strndup(h->uri + from, to - from), *nu = NULL;
                        size_t l = to - from;

                        r = enc && part ? replace_all(&part, &l, ph, enc, VAULT_HTTP_HEAD_MAX)
                                        : -ENOMEM;
                        if (r == 0 &&
                            asprintf(&nu, "%.*s%s%s", (int)from, h->uri, part, h->uri + to) < 0)
                                r = -ENOMEM;
                        if (r == 0) {
                                free(h->uri);
                                h->uri = nu;
                        }
                        free(enc);
                        free(part);
                } else if (!strcmp(where, "body") && h->body) {
                        const char *ct = header_get(h, "Content-Type");
                        char *rep = NULL, len[32];

                        if (header_get(h, "Content-Encoding") ||
                            (ct && strcasestr(ct, "multipart/")))
                                continue;
                        if (ct && strcasestr(ct, "json"))
                                rep = json_escape(value);
                        else if (ct && strcasestr(ct, "x-www-form-urlencoded"))
                                rep = url_encode(value, true);
                        else
                                rep = strdup(value);
                        r = rep ? replace_all(&h->body, &h->body_len, ph, rep, VAULT_HTTP_BODY_MAX)
                                : -ENOMEM;
                        if (rep)
                                OPENSSL_cleanse(rep, strlen(rep));
                        free(rep);
                        snprintf(len, sizeof(len), "%zu", h->body_len);
                        if (r == 0 && header_get(h, "Content-Length"))
                                r = header_set(h, "Content-Length", len);
                }
        }
        return r;
}

/* The auth header(s) of a binding. */
static int apply_auth(struct json_object *v, const uint8_t *key, const char *sid,
                      struct vault_http *h, struct json_object *auth)
{
        const char *type = json_get_str(auth, "type") ?: "";
        char *val = NULL, *hv = NULL;
        struct json_object *subs, *hs;
        int r = 0;

        if (!strcmp(type, "bearer") || !strcmp(type, "basic") || !strcmp(type, "apiKey")) {
                r = credential(v, key, sid, json_get_str(auth, "credential") ?: "", &val);
                if (r == 0 && !strcmp(type, "apiKey"))
                        r = header_set(h, json_get_str(auth, "name") ?: "X-Api-Key", val);
                else if (r == 0)
                        r = asprintf(&hv, "%s %s", !strcmp(type, "bearer") ? "Bearer" : "Basic",
                                     val) < 0
                                    ? -ENOMEM
                                    : header_set(h, "Authorization", hv);
        } else if (!strcmp(type, "customHeaders") && json_object_object_get_ex(auth, "headers", &hs)) {
                for (size_t i = 0; i < json_object_array_length(hs) && r == 0; i++) {
                        struct json_object *e = json_object_array_get_idx(hs, i);

                        r = credential(v, key, sid, json_get_str(e, "credential") ?: "", &val);
                        if (r == 0)
                                r = header_set(h, json_get_str(e, "name") ?: "", val);
                        if (val)
                                OPENSSL_cleanse(val, strlen(val));
                        free(val);
                        val = NULL;
                }
        }
        if (val)
                OPENSSL_cleanse(val, strlen(val));
        free(val);
        if (hv)
                OPENSSL_cleanse(hv, strlen(hv));
        free(hv);
        val = NULL;
        if (r == 0 && json_object_object_get_ex(auth, "substitutions", &subs)) {
                for (size_t i = 0; i < json_object_array_length(subs) && r == 0; i++) {
                        struct json_object *s = json_object_array_get_idx(subs, i);

                        r = credential(v, key, sid, json_get_str(s, "credential") ?: "", &val);
                        if (r == 0)
                                r = substitute(h, s, val);
                        if (val)
                                OPENSSL_cleanse(val, strlen(val));
                        free(val);
                        val = NULL;
                }
        }
        return r;
}

int vault_inject(struct json_object *v, const uint8_t *key, const char *sid, struct vault_http *h,
                 int *ret_applied)
{
        struct json_object *binds, *m, *a;
        char host[256], *p;
        const char *path, *scheme = scheme_len(h->uri) == 8 ? "https" : "http";
        int r = 0;

        *ret_applied = 0;
        if (!json_object_object_get_ex(v, "bindings", &binds) ||
            uri_parts(h->uri, host, sizeof(host), &path) < 0)
                return 0;
        /* every binding is matched against the request as the sandbox sent it
         * (a substitution rewrites h->uri: path would point into freed memory) */
        if (!(p = strndup(path, strcspn(path, "?#"))))
                return -ENOMEM;
        for (size_t i = 0; i < json_object_array_length(binds) && r == 0; i++) {
                struct json_object *b = json_object_array_get_idx(binds, i);

                if (json_object_object_get_ex(b, "match", &m) &&
                    json_object_object_get_ex(b, "auth", &a) &&
                    list_has(m, "schemes", scheme, false) && host_in(m, host) &&
                    list_has(m, "methods", h->method, false) && list_has(m, "paths", p, true)) {
                        r = apply_auth(v, key, sid, h, a);
                        if (r == 0)
                                (*ret_applied)++;
                }
        }
        free(p);
        return r;
}

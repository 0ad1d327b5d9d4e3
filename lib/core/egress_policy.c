/* egress_policy: see egress_policy.h. */
#include "core/egress_policy.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "core/json_input.h"

/* NetworkPolicy is an object of an array of objects of strings: depth 3. */
#define EGRESS_JSON_DEPTH 4

static char lower(char c)
{
        return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

static bool is_label_char(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/* Parse buf[0..len) as one JSON value of type `want`, nested at most depth
 * deep; *ret owns it. */
static int parse_json_depth(const char *buf, size_t len, int depth, enum json_type want,
                            const char *what, struct json_object **ret, char *err, size_t errlen)
{
        struct json_tokener *tok = NULL;
        struct json_object *v = NULL;
        size_t end;
        int r = -EINVAL;

        *ret = NULL;
        if (!buf || len == 0) {
                snprintf(err, errlen, "%s is empty", what);
                goto out;
        }
        if (len > EGRESS_JSON_MAX) {
                snprintf(err, errlen, "%s is too large (at most %d bytes)", what, EGRESS_JSON_MAX);
                goto out;
        }
        if (memchr(buf, '\0', len)) {
                snprintf(err, errlen, "%s contains a NUL byte", what);
                goto out;
        }
        tok = json_tokener_new_ex(depth);
        if (!tok) {
                r = -ENOMEM;
                snprintf(err, errlen, "out of memory");
                goto out;
        }
        json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
        v = json_tokener_parse_ex(tok, buf, (int)len);
        if (json_tokener_get_error(tok) == json_tokener_continue) {
                /* A bare word or number also ends mid-token at the end of input. */
                size_t ws = 0; /* buf is not NUL-terminated: stay within len */
                while (ws < len && strchr(" \t\r\n", buf[ws]))
                        ws++;
                if (ws < len && !strchr("{[", buf[ws])) {
                        snprintf(err, errlen, "%s must be a JSON %s", what,
                                 want == json_type_object ? "object" : "array");
                        goto out;
                }
        }
        if (json_tokener_get_error(tok) != json_tokener_success) {
                snprintf(err, errlen, "%s is not valid JSON (or nested too deep)", what);
                goto out;
        }
        for (end = json_tokener_get_parse_end(tok); end < len; end++)
                if (!strchr(" \t\r\n", buf[end])) {
                        snprintf(err, errlen, "%s has trailing data after the JSON value", what);
                        goto out;
                }
        if (!v || !json_object_is_type(v, want)) { /* v is NULL for `null` */
                snprintf(err, errlen, "%s must be a JSON %s", what,
                         want == json_type_object ? "object" : "array");
                goto out;
        }
        *ret = v;
        v = NULL;
        r = 0;
out:
        json_put(v);
        if (tok)
                json_tokener_free(tok);
        return r;
}

static int parse_json(const char *buf, size_t len, enum json_type want, const char *what,
                      struct json_object **ret, char *err, size_t errlen)
{
        return parse_json_depth(buf, len, EGRESS_JSON_DEPTH, want, what, ret, err, errlen);
}

/* Looks like an IP literal or CIDR: has ':' '/' '[' or the last label starts
 * with a digit. */
static bool looks_like_ip(const char *s, size_t len)
{
        size_t i = len;

        for (size_t k = 0; k < len; k++)
                if (s[k] == ':' || s[k] == '/' || s[k] == '[' || s[k] == ']')
                        return true;
        if (len && s[len - 1] == '.')
                i--;
        if (i == 0)
                return false;
        size_t end = i;
        while (i > 0 && s[i - 1] != '.')
                i--;
        /* No top-level domain starts with a digit; inet_aton() reads "1",
         * "10.1" and "0x7f000001" as addresses. */
        return i < end && s[i] >= '0' && s[i] <= '9';
}

/* Normalize a DNS name (no wildcard) of len bytes into out (lower case, no
 * trailing dot). 0 or -EINVAL. */
static int name_normalize(const char *s, size_t len, char *out, size_t outsz, char *err,
                          size_t errlen, const char *what)
{
        size_t label = 0;

        if (len == 0) {
                snprintf(err, errlen, "%s is empty", what);
                return -EINVAL;
        }
        if (len >= outsz) {
                snprintf(err, errlen, "%s is longer than %d characters", what, EGRESS_TARGET_MAX);
                return -EINVAL;
        }
        for (size_t i = 0; i < len; i++) {
                char c = lower(s[i]);

                if (c == '.') {
                        if (label == 0) {
                                snprintf(err, errlen, "%s has an empty label", what);
                                return -EINVAL;
                        }
                        if (out[i - 1] == '-') {
                                snprintf(err, errlen, "%s has a label ending with '-'", what);
                                return -EINVAL;
                        }
                        label = 0;
                } else if (is_label_char(c)) {
                        if (label == 0 && c == '-') {
                                snprintf(err, errlen, "%s has a label starting with '-'", what);
                                return -EINVAL;
                        }
                        if (++label > 63) {
                                snprintf(err, errlen, "%s has a label longer than 63 characters",
                                         what);
                                return -EINVAL;
                        }
                } else {
                        snprintf(err, errlen,
                                 "%s is not a DNS name (letters, digits, '-', '_' and '.'; a "
                                 "wildcard only as a leading \"*.\")",
                                 what);
                        return -EINVAL;
                }
                out[i] = c;
        }
        if (label == 0 || out[len - 1] == '-') {
                snprintf(err, errlen, "%s has an empty label or one ending with '-'", what);
                return -EINVAL;
        }
        out[len] = '\0';
        return 0;
}

int egress_target_normalize(const char *target, char *out, char *err, size_t errlen)
{
        char buf[EGRESS_TARGET_MAX + 1];
        size_t len;
        bool wild;
        int r;

        if (!target) {
                snprintf(err, errlen, "target is missing");
                return -EINVAL;
        }
        len = strnlen(target, EGRESS_TARGET_MAX + 2);
        if (len > EGRESS_TARGET_MAX + 1) {
                snprintf(err, errlen, "target is longer than %d characters", EGRESS_TARGET_MAX);
                return -EINVAL;
        }
        if (looks_like_ip(target, len)) {
                snprintf(err, errlen, "IP/CIDR targets are not supported: use a DNS name");
                return -EINVAL;
        }
        if (len && target[len - 1] == '.')
                len--; /* the root's dot: "a.com." is "a.com" */
        wild = len >= 2 && target[0] == '*' && target[1] == '.';
        if (len > EGRESS_TARGET_MAX) {
                snprintf(err, errlen, "target is longer than %d characters", EGRESS_TARGET_MAX);
                return -EINVAL;
        }
        /* buf gets the name after "*." (if any) and must leave room for it. */
        r = name_normalize(target + (wild ? 2 : 0), len - (wild ? 2 : 0), buf,
                           sizeof(buf) - (wild ? 2 : 0), err, errlen, "target");
        if (r < 0)
                return r;
        if (wild)
                memcpy(out, "*.", 2);
        memcpy(out + (wild ? 2 : 0), buf, strlen(buf) + 1);
        return 0;
}

/* A JSON string without an embedded NUL ("\u0000" would cut the C string). */
static const char *str_or_null(struct json_object *v)
{
        const char *s = json_object_get_string(v);

        return s && strlen(s) == (size_t)json_object_get_string_len(v) ? s : NULL;
}

/* Read one NetworkRule object. */
static int rule_parse(struct json_object *o, size_t idx, struct egress_rule *rule, char *err,
                      size_t errlen)
{
        const char *action = NULL, *target = NULL;
        char msg[192];

        if (!json_object_is_type(o, json_type_object)) {
                snprintf(err, errlen, "egress[%zu] must be an object {\"action\",\"target\"}", idx);
                return -EINVAL;
        }
        json_object_object_foreach(o, key, val) {
                if (!strcmp(key, "action") && json_object_is_type(val, json_type_string) &&
                    str_or_null(val))
                        action = str_or_null(val);
                else if (!strcmp(key, "target") && json_object_is_type(val, json_type_string) &&
                         str_or_null(val))
                        target = str_or_null(val);
                else if (!strcmp(key, "action") || !strcmp(key, "target")) {
                        snprintf(err, errlen, "egress[%zu].%s must be a string", idx, key);
                        return -EINVAL;
                } else {
                        snprintf(err, errlen,
                                 "egress[%zu] has an unknown member \"%.64s\" (allowed: action, "
                                 "target)",
                                 idx, key);
                        return -EINVAL;
                }
        }
        if (!action || !target) {
                snprintf(err, errlen, "egress[%zu] needs both \"action\" and \"target\"", idx);
                return -EINVAL;
        }
        if (strcmp(action, "allow") && strcmp(action, "deny")) {
                snprintf(err, errlen, "egress[%zu].action must be \"allow\" or \"deny\"", idx);
                return -EINVAL;
        }
        if (egress_target_normalize(target, rule->target, msg, sizeof(msg)) < 0) {
                snprintf(err, errlen, "egress[%zu]: %s", idx, msg);
                return -EINVAL;
        }
        rule->allow = !strcmp(action, "allow");
        return 0;
}

static bool has_target(const struct egress_rule *rules, size_t n, const char *target)
{
        for (size_t i = 0; i < n; i++)
                if (!strcmp(rules[i].target, target))
                        return true;
        return false;
}

/* Read an egress rule array into rules[EGRESS_RULES_MAX]; keep duplicates. */
static int rules_read(struct json_object *arr, struct egress_rule *rules, size_t *ret_n, char *err,
                      size_t errlen)
{
        size_t n = json_object_array_length(arr);

        if (n > EGRESS_RULES_MAX) {
                snprintf(err, errlen, "too many egress rules (%zu; at most %d)", n, EGRESS_RULES_MAX);
                return -EINVAL;
        }
        for (size_t i = 0; i < n; i++) {
                int r = rule_parse(json_object_array_get_idx(arr, i), i, &rules[i], err, errlen);
                if (r < 0)
                        return r;
        }
        *ret_n = n;
        return 0;
}

int egress_policy_parse(const char *json, size_t len, struct egress_policy *out, char *err,
                        size_t errlen)
{
        struct json_object *o = NULL, *egress = NULL;
        struct egress_policy *p = NULL;
        const char *def = NULL;
        size_t n = 0;
        int r;

        r = parse_json(json, len, json_type_object, "networkPolicy", &o, err, errlen);
        if (r < 0)
                goto out;
        r = -EINVAL;
        json_object_object_foreach(o, key, val) {
                /* A null member is an absent one (SDK models serialize unset
                 * fields as null); the object still is not empty, so the
                 * default action is deny. */
                if ((!strcmp(key, "defaultAction") || !strcmp(key, "egress")) && !val)
                        continue;
                if (!strcmp(key, "defaultAction")) {
                        if (!json_object_is_type(val, json_type_string)) {
                                snprintf(err, errlen, "defaultAction must be \"allow\" or \"deny\"");
                                goto out;
                        }
                        def = json_object_get_string(val);
                } else if (!strcmp(key, "egress")) {
                        if (!json_object_is_type(val, json_type_array)) {
                                snprintf(err, errlen, "egress must be an array of rules");
                                goto out;
                        }
                        egress = val;
                } else {
                        snprintf(err, errlen,
                                 "networkPolicy has an unknown member \"%.64s\" (allowed: "
                                 "defaultAction, egress)",
                                 key);
                        goto out;
                }
        }
        if (def && strcmp(def, "allow") && strcmp(def, "deny")) {
                snprintf(err, errlen, "defaultAction must be \"allow\" or \"deny\"");
                goto out;
        }
        p = malloc(sizeof(*p));
        if (!p) {
                r = -ENOMEM;
                snprintf(err, errlen, "out of memory");
                goto out;
        }
        /* The spec: defaultAction defaults to deny, but an empty object is allow-all. */
        p->default_allow = def ? !strcmp(def, "allow") : json_object_object_length(o) == 0;
        p->n = 0;
        if (egress) {
                struct egress_rule *rules = malloc(sizeof(*rules) * EGRESS_RULES_MAX);

                if (!rules) {
                        r = -ENOMEM;
                        snprintf(err, errlen, "out of memory");
                        goto out;
                }
                r = rules_read(egress, rules, &n, err, errlen);
                if (r == 0)
                        for (size_t i = 0; i < n; i++)
                                if (!has_target(p->rules, p->n, rules[i].target))
                                        p->rules[p->n++] = rules[i];
                free(rules);
                if (r < 0)
                        goto out;
        }
        memcpy(out, p, sizeof(*p));
        r = 0;
out:
        free(p);
        json_put(o);
        return r;
}

int egress_policy_to_json(const struct egress_policy *p, char **out)
{
        struct json_object *o = json_object_new_object(), *arr = json_object_new_array();
        char *s = NULL;
        int r = -ENOMEM;

        *out = NULL;
        if (!o || !arr)
                goto out;
        for (size_t i = 0; i < p->n; i++) {
                struct json_object *rule = json_object_new_object();

                if (!rule || json_object_array_add(arr, rule) < 0) {
                        json_put(rule);
                        goto out;
                }
                if (json_add_str(rule, "action", p->rules[i].allow ? "allow" : "deny") < 0 ||
                    json_add_str(rule, "target", p->rules[i].target) < 0)
                        goto out;
        }
        if (json_add_str(o, "defaultAction", p->default_allow ? "allow" : "deny") < 0)
                goto out;
        r = json_add(o, "egress", arr);
        arr = NULL; /* owned by o now, or released by json_add */
        if (r < 0)
                goto out;
        r = -ENOMEM;
        s = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                                             JSON_C_TO_STRING_NOSLASHESCAPE));
        if (!s)
                goto out;
        *out = s;
        r = 0;
out:
        json_put(arr);
        json_put(o);
        return r;
}

static bool target_matches(const char *target, const char *host, size_t hlen)
{
        if (target[0] == '*' && target[1] == '.') {
                size_t slen = strlen(target + 1); /* ".suffix" */

                /* A proper subdomain: at least one label before ".suffix". */
                return hlen > slen && !memcmp(host + hlen - slen, target + 1, slen);
        }
        return !strcmp(target, host);
}

bool egress_policy_allows(const struct egress_policy *p, const char *host)
{
        char name[EGRESS_TARGET_MAX + 1], err[8];
        size_t len;

        if (!p || !host || !host[0])
                return false;
        len = strnlen(host, EGRESS_TARGET_MAX + 2);
        if (len > EGRESS_TARGET_MAX + 1 || looks_like_ip(host, len))
                return p->default_allow;
        if (host[len - 1] == '.')
                len--;
        if (name_normalize(host, len, name, sizeof(name), err, sizeof(err), "host") < 0)
                return p->default_allow;
        len = strlen(name);
        for (size_t i = 0; i < p->n; i++)
                if (target_matches(p->rules[i].target, name, len))
                        return p->rules[i].allow;
        return p->default_allow;
}

void egress_policy_deny_all(struct egress_policy *p)
{
        p->default_allow = false;
        p->n = 0;
}

const char *egress_policy_mode(const struct egress_policy *p)
{
        return p->default_allow ? "allow_all" : "deny_all";
}

int egress_rules_parse(const char *json, size_t len, struct egress_rule *rules, size_t *ret_n,
                       char *err, size_t errlen)
{
        struct json_object *arr = NULL;
        int r;

        *ret_n = 0;
        r = parse_json(json, len, json_type_array, "request body", &arr, err, errlen);
        if (r < 0)
                goto out;
        r = -EINVAL;
        if (json_object_array_length(arr) == 0) {
                snprintf(err, errlen, "request body must be a non-empty array of rules");
                goto out;
        }
        r = rules_read(arr, rules, ret_n, err, errlen);
out:
        json_put(arr);
        return r;
}

int egress_policy_merge(struct egress_policy *p, const struct egress_rule *in, size_t n, char *err,
                        size_t errlen)
{
        struct egress_rule *merged = malloc(sizeof(*merged) * EGRESS_RULES_MAX);
        size_t m = 0;
        int r = -EINVAL;

        if (!merged) {
                snprintf(err, errlen, "out of memory");
                return -ENOMEM;
        }
        for (size_t i = 0; i < n + p->n; i++) {
                const struct egress_rule *rule = i < n ? &in[i] : &p->rules[i - n];

                if (has_target(merged, m, rule->target))
                        continue;
                if (m == EGRESS_RULES_MAX) {
                        snprintf(err, errlen, "the policy would have more than %d rules",
                                 EGRESS_RULES_MAX);
                        goto out;
                }
                merged[m++] = *rule;
        }
        memcpy(p->rules, merged, sizeof(*merged) * m);
        p->n = m;
        r = 0;
out:
        free(merged);
        return r;
}

int egress_targets_parse(const char *json, size_t len, char (*targets)[EGRESS_TARGET_MAX + 1],
                         size_t *ret_n, char *err, size_t errlen)
{
        struct json_object *arr = NULL;
        char msg[192];
        size_t n;
        int r;

        *ret_n = 0;
        r = parse_json(json, len, json_type_array, "request body", &arr, err, errlen);
        if (r < 0)
                goto out;
        r = -EINVAL;
        n = json_object_array_length(arr);
        if (n == 0 || n > EGRESS_RULES_MAX) {
                snprintf(err, errlen, "request body must be an array of 1 to %d targets",
                         EGRESS_RULES_MAX);
                goto out;
        }
        for (size_t i = 0; i < n; i++) {
                struct json_object *v = json_object_array_get_idx(arr, i);

                if (!json_object_is_type(v, json_type_string) || !str_or_null(v)) {
                        snprintf(err, errlen, "item %zu must be a target string", i);
                        goto out;
                }
                if (egress_target_normalize(str_or_null(v), targets[i], msg, sizeof(msg)) < 0) {
                        snprintf(err, errlen, "item %zu: %s", i, msg);
                        goto out;
                }
        }
        *ret_n = n;
        r = 0;
out:
        json_put(arr);
        return r;
}

size_t egress_policy_remove(struct egress_policy *p, char (*targets)[EGRESS_TARGET_MAX + 1], size_t n)
{
        size_t kept = 0, removed = 0;

        for (size_t i = 0; i < p->n; i++) {
                bool drop = false;

                for (size_t k = 0; k < n && !drop; k++)
                        drop = !strcmp(p->rules[i].target, targets[k]);
                if (drop)
                        removed++;
                else
                        p->rules[kept++] = p->rules[i];
        }
        p->n = kept;
        return removed;
}

/* A pool id as the lease API takes it, or "<tenant>/<pool>": printable
 * ASCII without spaces or braces, one '/' at most. */
static bool pool_key_ok(const char *k)
{
        size_t n = strlen(k);
        const char *slash = strchr(k, '/');

        if (n == 0 || n > EGRESS_POOL_KEY_MAX || (slash && strchr(slash + 1, '/')))
                return false;
        for (size_t i = 0; i < n; i++)
                if (k[i] <= ' ' || k[i] > '~' || k[i] == '{' || k[i] == '}')
                        return false;
        return true;
}

int egress_pool_policies_parse(const char *json, size_t len, char **ret, char *err, size_t errlen)
{
        struct json_object *o = NULL, *out = NULL;
        struct egress_policy *p = NULL;
        char why[256];
        size_t count = 0;
        int r;

        *ret = NULL;
        /* an object of NetworkPolicy objects: one level deeper than a policy */
        r = parse_json_depth(json, len, EGRESS_JSON_DEPTH + 1, json_type_object, "the pool map", &o,
                             err, errlen);
        if (r < 0)
                goto out;
        r = -ENOMEM;
        p = malloc(sizeof(*p));
        out = json_object_new_object();
        if (!p || !out)
                goto out;
        json_object_object_foreach(o, key, val) {
                const char *text;
                char *norm = NULL;
                struct json_object *s;

                r = -EINVAL;
                if (++count > EGRESS_POOL_POLICIES_MAX) {
                        snprintf(err, errlen, "at most %d pools", EGRESS_POOL_POLICIES_MAX);
                        goto out;
                }
                if (!pool_key_ok(key)) {
                        snprintf(err, errlen,
                                 "\"%.64s\": not a poolId (or <tenant>/<poolId>) of 1 to "
                                 "%d printable characters without spaces or braces",
                                 key, EGRESS_POOL_KEY_MAX);
                        goto out;
                }
                if (!json_object_is_type(val, json_type_object)) {
                        snprintf(err, errlen,
                                 "\"%.64s\": the policy must be a NetworkPolicy object", key);
                        goto out;
                }
                r = -ENOMEM;
                text = json_object_to_json_string_ext(val, JSON_C_TO_STRING_PLAIN);
                if (!text)
                        goto out;
                r = egress_policy_parse(text, strlen(text), p, why, sizeof(why));
                if (r == -EINVAL)
                        snprintf(err, errlen, "\"%.64s\": %s", key, why);
                if (r == 0)
                        r = egress_policy_to_json(p, &norm);
                if (r < 0)
                        goto out;
                s = json_object_new_string(norm);
                free(norm);
                r = -ENOMEM;
                if (!s || json_object_object_add(out, key, s) < 0) {
                        json_put(s);
                        goto out;
                }
        }
        r = -ENOMEM;
        const char *t = json_object_to_json_string_ext(out, JSON_C_TO_STRING_PLAIN);
        if (t && (*ret = strdup(t)))
                r = 0;
out:
        if (r == -ENOMEM && err && errlen)
                snprintf(err, errlen, "out of memory");
        json_put(out);
        json_put(o);
        free(p);
        return r;
}

/* json_input: see json_input.h. */
#include "core/json_input.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

struct json_object *json_parse_or_null(const char *text)
{
        return text ? json_tokener_parse(text) : NULL;
}

const char *json_get_str(struct json_object *o, const char *key)
{
        struct json_object *v;

        if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
                return NULL;
        return json_object_get_string(v);
}

int json_add(struct json_object *o, const char *key, struct json_object *v)
{
        if (!v)
                return -ENOMEM;
        if (json_object_object_add(o, key, v) < 0) {
                json_put(v);
                return -ENOMEM;
        }
        return 0;
}

int json_add_str(struct json_object *o, const char *key, const char *s)
{
        return json_add(o, key, json_object_new_string(s));
}

void json_put(struct json_object *obj)
{
        if (obj)
                json_object_put(obj);
}

int json_input_parse_object(const char *buf, size_t len, int max_depth, struct json_object **ret,
                            char *err, size_t errsz)
{
        struct json_tokener *tok = NULL;
        struct json_object *obj = NULL;
        enum json_tokener_error jerr;
        int r = -EINVAL;

        *ret = NULL;
        if (len == 0) {
                snprintf(err, errsz, "request body is empty; a JSON object is required");
                goto out;
        }
        if (len > INT_MAX) {
                snprintf(err, errsz, "request body is too large");
                goto out;
        }
        if (memchr(buf, '\0', len)) {
                snprintf(err, errsz, "request body contains a NUL byte");
                goto out;
        }
        tok = json_tokener_new_ex(max_depth);
        if (!tok) {
                r = -ENOMEM;
                snprintf(err, errsz, "out of memory");
                goto out;
        }
        json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
        obj = json_tokener_parse_ex(tok, buf, (int)len);
        jerr = json_tokener_get_error(tok);
        if (jerr == json_tokener_continue) {
                /* A bare number or word also ends mid-token at end of input. */
                size_t ws = 0; /* buf need not be NUL-terminated: stay within len */
                while (ws < len && strchr(" \t\r\n", buf[ws]) && buf[ws])
                        ws++;
                snprintf(err, errsz, ws < len && buf[ws] && strchr("{[\"", buf[ws])
                                             ? "request body is truncated JSON"
                                             : "request body must be a JSON object");
                goto out;
        }
        if (jerr != json_tokener_success) {
                snprintf(err, errsz, "request body is not valid JSON: %s",
                         jerr == json_tokener_error_depth ? "nested too deeply"
                                                          : json_tokener_error_desc(jerr));
                goto out;
        }
        if (json_tokener_get_parse_end(tok) != len) {
                snprintf(err, errsz, "request body has data after the JSON value");
                goto out;
        }
        if (!json_object_is_type(obj, json_type_object)) {
                snprintf(err, errsz, "request body must be a JSON object");
                goto out;
        }
        *ret = obj;
        obj = NULL;
        r = 0;
out:
        json_put(obj);
        if (tok)
                json_tokener_free(tok);
        return r;
}

bool json_input_id_valid(const char *s)
{
        size_t n = strlen(s);

        if (n == 0 || n > JSON_INPUT_ID_MAX)
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = s[i];
                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '_' || c == '@' || c == '-'))
                        return false;
        }
        return true;
}

int json_input_get_id(struct json_object *obj, const char *name, bool required,
                      const char **ret, char *err, size_t errsz)
{
        struct json_object *v;
        const char *s;

        *ret = NULL;
        if (!json_object_object_get_ex(obj, name, &v) || json_object_is_type(v, json_type_null)) {
                if (!required)
                        return 0;
                snprintf(err, errsz, "%s is required", name);
                return -ENOENT;
        }
        if (!json_object_is_type(v, json_type_string)) {
                snprintf(err, errsz, "%s must be a string", name);
                return -EINVAL;
        }
        s = json_object_get_string(v);
        /* json-c strings may embed NUL: compare lengths to catch it. */
        if ((size_t)json_object_get_string_len(v) != strlen(s) || !json_input_id_valid(s)) {
                snprintf(err, errsz,
                         "%s must be 1 to %d characters of A-Z, a-z, 0-9, '.', '_', '@', '-'", name,
                         JSON_INPUT_ID_MAX);
                return -EINVAL;
        }
        *ret = s;
        return 0;
}

int json_input_get_enum(struct json_object *obj, const char *name, const char *const *allowed,
                        const char **ret, char *err, size_t errsz)
{
        struct json_object *v;
        const char *s;
        size_t off;

        *ret = NULL;
        if (!json_object_object_get_ex(obj, name, &v) || json_object_is_type(v, json_type_null))
                return 0;
        if (json_object_is_type(v, json_type_string)) {
                s = json_object_get_string(v);
                for (const char *const *a = allowed; *a; a++)
                        if (strcmp(s, *a) == 0 &&
                            (size_t)json_object_get_string_len(v) == strlen(s)) {
                                *ret = *a;
                                return 0;
                        }
        }
        off = (size_t)snprintf(err, errsz, "%s must be one of", name);
        for (const char *const *a = allowed; *a && off < errsz; a++)
                off += (size_t)snprintf(err + off, errsz - off, "%s %s", a == allowed ? "" : ",", *a);
        return -EINVAL;
}

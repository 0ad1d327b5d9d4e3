/* execd_argv: see execd_argv.h. */
#include "execd_argv.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* a JSON string holding no NUL (json-c keeps one inside a string) */
static bool str_clean(struct json_object *v)
{
        return json_object_is_type(v, json_type_string) &&
               strlen(json_object_get_string(v)) == (size_t)json_object_get_string_len(v);
}

/* member key of body unless absent or null */
static struct json_object *member(struct json_object *body, const char *key)
{
        struct json_object *v;

        if (!json_object_object_get_ex(body, key, &v) || json_object_is_type(v, json_type_null))
                return NULL;
        return v;
}

int execd_argv_parse(struct json_object *body, struct execd_cmd_input *ret, char *err, size_t errsz)
{
        struct json_object *cmd = member(body, "command"), *argv = member(body, "argv");
        size_t n, bytes = 0;

        memset(ret, 0, sizeof(*ret));
        if (cmd && argv) {
                snprintf(err, errsz, "give exactly one of command (shell text) or argv, not both");
                return -EINVAL;
        }
        if (cmd) {
                if (!str_clean(cmd) || json_object_get_string_len(cmd) == 0) {
                        snprintf(err, errsz, "command must be a non-empty string without NUL");
                        return -EINVAL;
                }
                ret->command = json_object_get_string(cmd);
                return 0;
        }
        if (!argv) {
                snprintf(err, errsz, "command (shell text) or argv (1 to %d strings) is required",
                         EXECD_ARGV_MAX);
                return -EINVAL;
        }
        if (!json_object_is_type(argv, json_type_array) ||
            (n = json_object_array_length(argv)) == 0 || n > EXECD_ARGV_MAX) {
                snprintf(err, errsz, "argv must be an array of 1 to %d strings", EXECD_ARGV_MAX);
                return -EINVAL;
        }
        for (size_t i = 0; i < n; i++) {
                struct json_object *a = json_object_array_get_idx(argv, i);

                if (!str_clean(a) || (i == 0 && json_object_get_string_len(a) == 0)) {
                        memset(ret, 0, sizeof(*ret));
                        snprintf(err, errsz,
                                 "argv[%zu]: argv must be strings without NUL, argv[0] non-empty", i);
                        return -EINVAL;
                }
                bytes += (size_t)json_object_get_string_len(a) + 1;
                if (bytes > EXECD_ARGV_MAX_BYTES) {
                        memset(ret, 0, sizeof(*ret));
                        snprintf(err, errsz, "argv is over %d bytes in all", EXECD_ARGV_MAX_BYTES);
                        return -EINVAL;
                }
                ret->argv[ret->argc++] = json_object_get_string(a);
        }
        ret->argv[ret->argc] = NULL;
        return 0;
}

char *execd_argv_text(const struct execd_cmd_input *in)
{
        size_t n = 1, o = 0;
        char *s;

        if (in->command)
                return strdup(in->command);
        for (int k = 0; k < in->argc; k++)
                n += strlen(in->argv[k]) + 1;
        s = malloc(n);
        if (!s)
                return NULL;
        s[0] = '\0';
        for (int k = 0; k < in->argc; k++) {
                size_t l = strlen(in->argv[k]);

                if (k)
                        s[o++] = ' ';
                memcpy(s + o, in->argv[k], l);
                o += l;
        }
        s[o] = '\0';
        return s;
}

/* lifecycle: OpenSandbox lifecycle hooks checked at create, and read back
 * for the provisioning. See lifecycle.h. */
#include "sandbox/lifecycle.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../agent/cron.h"

/* hook.command: 1..LIFECYCLE_ARGS_MAX strings, no NUL byte, the first not
 * blank; their bytes added to *bytes. */
static int command_check(struct json_object *cmd, const char *what, size_t *bytes, char *err)
{
        size_t n;

        if (!cmd || !json_object_is_type(cmd, json_type_array) ||
            (n = json_object_array_length(cmd)) == 0 || n > LIFECYCLE_ARGS_MAX) {
                snprintf(err, LIFECYCLE_ERR_MAX, "%s.command must be an array of 1 to %d strings",
                         what, LIFECYCLE_ARGS_MAX);
                return -EINVAL;
        }
        for (size_t i = 0; i < n; i++) {
                struct json_object *a = json_object_array_get_idx(cmd, i);
                const char *s = json_object_is_type(a, json_type_string) ? json_object_get_string(a)
                                                                         : NULL;

                if (!s || strlen(s) != (size_t)json_object_get_string_len(a) ||
                    (i == 0 && strspn(s, " \t\r\n") == strlen(s))) {
                        snprintf(err, LIFECYCLE_ERR_MAX,
                                 "%s.command[%zu] must be a %sstring without NUL bytes", what, i,
                                 i == 0 ? "non-blank " : "");
                        return -EINVAL;
                }
                *bytes += strlen(s);
        }
        return 0;
}

static int timeout_check(struct json_object *hook, const char *what, int max, int *ret, char *err)
{
        struct json_object *v;
        int64_t t;

        *ret = LIFECYCLE_TIMEOUT_DEFAULT_S;
        if (!json_object_object_get_ex(hook, "timeoutSeconds", &v) ||
            json_object_is_type(v, json_type_null))
                return 0;
        t = json_object_get_int64(v);
        if (!json_object_is_type(v, json_type_int) || t < 1 || t > max) {
                snprintf(err, LIFECYCLE_ERR_MAX,
                         "%s.timeoutSeconds must be an integer from 1 to %d", what, max);
                return -EINVAL;
        }
        *ret = (int)t;
        return 0;
}

static int keys_check(struct json_object *o, const char *what, const char *const *keys, char *err)
{
        json_object_object_foreach(o, k, v) {
                bool known = false;

                (void)v;
                for (size_t i = 0; keys[i]; i++)
                        known |= strcmp(k, keys[i]) == 0;
                if (!known) {
                        snprintf(err, LIFECYCLE_ERR_MAX, "%s: unknown field \"%.64s\"", what, k);
                        return -EINVAL;
                }
        }
        return 0;
}

/* One normalized hook: {name?, schedule?, command, timeoutSeconds}. */
static struct json_object *hook_new(struct json_object *src, int timeout_s, bool periodic)
{
        struct json_object *h = json_object_new_object(), *v;

        if (!h)
                return NULL;
        if (periodic) {
                json_object_object_get_ex(src, "name", &v);
                json_object_object_add(h, "name", json_object_get(v));
                json_object_object_get_ex(src, "schedule", &v);
                json_object_object_add(h, "schedule", json_object_get(v));
        }
        json_object_object_get_ex(src, "command", &v);
        json_object_object_add(h, "command", json_object_get(v));
        json_object_object_add(h, "timeoutSeconds", json_object_new_int(timeout_s));
        return h;
}

static int periodic_check(struct json_object *list, struct json_object *out, char *err)
{
        static const char *const keys[] = { "name", "schedule", "command", "timeoutSeconds", NULL };
        size_t n, bytes = 0;

        if (!json_object_is_type(list, json_type_array) ||
            (n = json_object_array_length(list)) > LIFECYCLE_PERIODIC_MAX) {
                snprintf(err, LIFECYCLE_ERR_MAX,
                         "lifecycle.periodic must be an array of at most %d hooks",
                         LIFECYCLE_PERIODIC_MAX);
                return -EINVAL;
        }
        for (size_t i = 0; i < n; i++) {
                struct json_object *h = json_object_array_get_idx(list, i), *v;
                const char *name, *sched;
                struct cron cron;
                char what[64];
                int t;

                snprintf(what, sizeof(what), "lifecycle.periodic[%zu]", i);
                if (!json_object_is_type(h, json_type_object)) {
                        snprintf(err, LIFECYCLE_ERR_MAX,
                                 "%s must be an object {name, schedule, command, "
                                 "timeoutSeconds}",
                                 what);
                        return -EINVAL;
                }
                if (keys_check(h, what, keys, err) < 0)
                        return -EINVAL;
                name = json_object_object_get_ex(h, "name", &v) &&
                                       json_object_is_type(v, json_type_string)
                               ? json_object_get_string(v)
                               : NULL;
                if (!name || !*name || strlen(name) > LIFECYCLE_NAME_MAX ||
                    strspn(name,
                           "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") !=
                            strlen(name) ||
                    strlen(name) != (size_t)json_object_get_string_len(v)) {
                        snprintf(err, LIFECYCLE_ERR_MAX, "%s.name must match [A-Za-z0-9._-]{1,%d}",
                                 what, LIFECYCLE_NAME_MAX);
                        return -EINVAL;
                }
                for (size_t j = 0; j < i; j++) {
                        struct json_object *o;

                        json_object_object_get_ex(json_object_array_get_idx(list, j), "name", &o);
                        if (strcmp(json_object_get_string(o), name) == 0) {
                                snprintf(err, LIFECYCLE_ERR_MAX,
                                         "%s.name: \"%s\" is the name of another "
                                         "periodic hook (names must be unique)",
                                         what, name);
                                return -EINVAL;
                        }
                }
                sched = json_object_object_get_ex(h, "schedule", &v) &&
                                        json_object_is_type(v, json_type_string)
                                ? json_object_get_string(v)
                                : NULL;
                if (!sched || strlen(sched) != (size_t)json_object_get_string_len(v) ||
                    cron_parse(sched, &cron) < 0) {
                        snprintf(err, LIFECYCLE_ERR_MAX,
                                 "%s.schedule must be a five-field cron expression, "
                                 "@hourly, @daily, @weekly, @monthly, @yearly or \"@every N\" (s, "
                                 "m or h; "
                                 "N >= 1)",
                                 what);
                        return -EINVAL;
                }
                if (cron_next(&cron, (long long)time(NULL)) < 0) {
                        snprintf(err, LIFECYCLE_ERR_MAX, "%s.schedule: \"%.64s\" never fires", what,
                                 sched);
                        return -EINVAL;
                }
                if (command_check(json_object_object_get_ex(h, "command", &v) ? v : NULL, what,
                                  &bytes, err) < 0 ||
                    timeout_check(h, what, LIFECYCLE_PERIODIC_TIMEOUT_MAX_S, &t, err) < 0)
                        return -EINVAL;
                if (bytes > LIFECYCLE_PERIODIC_BYTES) {
                        snprintf(err, LIFECYCLE_ERR_MAX,
                                 "lifecycle.periodic: the commands are more than %d "
                                 "bytes together",
                                 LIFECYCLE_PERIODIC_BYTES);
                        return -EINVAL;
                }
                if (json_object_array_add(out, hook_new(h, t, true)) < 0)
                        return -ENOMEM;
        }
        return 0;
}

int lifecycle_parse(const struct broker_config *cfg, struct json_object *lc, char **ret, char *err)
{
        static const char *const keys[] = { "preStart", "periodic", NULL };
        static const char *const pre_keys[] = { "command", "timeoutSeconds", NULL };
        struct json_object *out = NULL, *v, *list = NULL;
        const char *s;
        int r = -EINVAL, t;

        *ret = NULL;
        if (!lc || json_object_is_type(lc, json_type_null))
                return 0;
        if (!json_object_is_type(lc, json_type_object)) {
                snprintf(err, LIFECYCLE_ERR_MAX, "lifecycle must be an object {preStart, periodic}");
                return -EINVAL;
        }
        if (keys_check(lc, "lifecycle", keys, err) < 0)
                return -EINVAL;
        if (strcmp(cfg->provider, "docker") != 0) {
                snprintf(err, LIFECYCLE_ERR_MAX,
                         "lifecycle: hooks are run by the broker's sandbox agent, "
                         "which this provider (%.32s) does not run",
                         cfg->provider);
                return -EINVAL;
        }
        out = json_object_new_object();
        if (!out)
                return -ENOMEM;
        if (json_object_object_get_ex(lc, "preStart", &v) && !json_object_is_type(v, json_type_null)) {
                struct json_object *cmd;
                size_t bytes = 0;

                if (!json_object_is_type(v, json_type_object)) {
                        snprintf(err, LIFECYCLE_ERR_MAX,
                                 "lifecycle.preStart must be an object {command, timeoutSeconds}");
                        goto out;
                }
                if (keys_check(v, "lifecycle.preStart", pre_keys, err) < 0 ||
                    command_check(json_object_object_get_ex(v, "command", &cmd) ? cmd : NULL,
                                  "lifecycle.preStart", &bytes, err) < 0 ||
                    timeout_check(v, "lifecycle.preStart", LIFECYCLE_PRESTART_TIMEOUT_MAX_S, &t,
                                  err) < 0)
                        goto out;
                if (bytes > LIFECYCLE_PRESTART_BYTES) {
                        snprintf(err, LIFECYCLE_ERR_MAX,
                                 "lifecycle.preStart.command is more than %d bytes",
                                 LIFECYCLE_PRESTART_BYTES);
                        goto out;
                }
                json_object_object_add(out, "preStart", hook_new(v, t, false));
        }
        if (json_object_object_get_ex(lc, "periodic", &v) && !json_object_is_type(v, json_type_null)) {
                list = json_object_new_array();
                if (!list) {
                        r = -ENOMEM;
                        goto out;
                }
                json_object_object_add(out, "periodic", list);
                if ((r = periodic_check(v, list, err)) < 0)
                        goto out;
                if (json_object_array_length(list) == 0)
                        json_object_object_del(out, "periodic");
        }
        r = 0;
        if (json_object_object_length(out) == 0)
                goto out;
        s = json_object_to_json_string_ext(out,
                                           JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        *ret = s ? strdup(s) : NULL;
        r = *ret ? 0 : -ENOMEM;
out:
        json_object_put(out);
        return r;
}

/* Percent-encode s onto the end of buf (agent/hooks.h, the --hook SPEC). */
static void spec_add(char *buf, size_t *len, const char *s)
{
        static const char safe[] =
                "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~/@*,:=";

        if (*len)
                buf[(*len)++] = ' ';
        for (; *s; s++) {
                if (strchr(safe, *s)) {
                        buf[(*len)++] = *s;
                } else {
                        sprintf(buf + *len, "%%%02X", (unsigned char)*s);
                        *len += 3;
                }
        }
        buf[*len] = '\0';
}

/* A periodic hook as the agent's SPEC (malloc'd), or NULL. */
static char *hook_spec(struct json_object *h)
{
        struct json_object *name, *sched, *cmd, *t;
        size_t size = 64, len = 0;
        char *buf, num[16];

        if (!json_object_object_get_ex(h, "name", &name) ||
            !json_object_object_get_ex(h, "schedule", &sched) ||
            !json_object_object_get_ex(h, "command", &cmd) ||
            !json_object_object_get_ex(h, "timeoutSeconds", &t) ||
            !json_object_is_type(cmd, json_type_array) || json_object_array_length(cmd) == 0)
                return NULL;
        size += 3 * (size_t)json_object_get_string_len(name) +
                3 * (size_t)json_object_get_string_len(sched);
        for (size_t i = 0; i < json_object_array_length(cmd); i++)
                size += 1 + 3 * strlen(json_object_get_string(json_object_array_get_idx(cmd, i)));
        buf = malloc(size);
        if (!buf)
                return NULL;
        buf[0] = '\0';
        snprintf(num, sizeof(num), "%d", json_object_get_int(t));
        spec_add(buf, &len, json_object_get_string(name));
        spec_add(buf, &len, num);
        spec_add(buf, &len, json_object_get_string(sched));
        for (size_t i = 0; i < json_object_array_length(cmd); i++)
                spec_add(buf, &len, json_object_get_string(json_object_array_get_idx(cmd, i)));
        return buf;
}

int lifecycle_run_read(const char *json, struct lifecycle_run *run)
{
        struct json_object *pre, *list, *cmd, *t;
        size_t n;

        memset(run, 0, sizeof(*run));
        if (!json || !json[0])
                return 0;
        run->obj = json_tokener_parse(json);
        if (!run->obj || !json_object_is_type(run->obj, json_type_object))
                goto bad;
        if (json_object_object_get_ex(run->obj, "preStart", &pre)) {
                if (!json_object_object_get_ex(pre, "command", &cmd) ||
                    !json_object_is_type(cmd, json_type_array) ||
                    (n = json_object_array_length(cmd)) == 0 || n > LIFECYCLE_ARGS_MAX ||
                    !json_object_object_get_ex(pre, "timeoutSeconds", &t))
                        goto bad;
                run->pre_argv = calloc(n + 1, sizeof(char *));
                if (!run->pre_argv)
                        goto nomem;
                for (size_t i = 0; i < n; i++)
                        run->pre_argv[i] = json_object_get_string(json_object_array_get_idx(cmd, i));
                run->pre_timeout_s = json_object_get_int(t);
        }
        if (json_object_object_get_ex(run->obj, "periodic", &list)) {
                if (!json_object_is_type(list, json_type_array) ||
                    (n = json_object_array_length(list)) > LIFECYCLE_PERIODIC_MAX)
                        goto bad;
                run->hook_args = calloc(2 * n + 1, sizeof(char *));
                if (!run->hook_args)
                        goto nomem;
                run->n_hook_args = 2 * n;
                for (size_t i = 0; i < n; i++) {
                        run->hook_args[2 * i] = strdup("--hook");
                        run->hook_args[2 * i + 1] = hook_spec(json_object_array_get_idx(list, i));
                        if (!run->hook_args[2 * i] || !run->hook_args[2 * i + 1])
                                goto bad;
                }
        }
        return 0;
bad:
        lifecycle_run_free(run);
        return -EPROTO;
nomem:
        lifecycle_run_free(run);
        return -ENOMEM;
}

void lifecycle_run_free(struct lifecycle_run *run)
{
        for (size_t i = 0; run->hook_args && i < run->n_hook_args; i++)
                free(run->hook_args[i]);
        free(run->hook_args);
        free(run->pre_argv);
        json_object_put(run->obj);
        memset(run, 0, sizeof(*run));
}

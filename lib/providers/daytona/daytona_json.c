/* daytona_json: see daytona_json.h. */
#include "providers/daytona/daytona_json.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json_input.h"


static int to_string(struct json_object *o, char **ret)
{
        const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);

        *ret = s ? strdup(s) : NULL;
        return *ret ? 0 : -ENOMEM;
}

/* "K=V" entries as a JSON object {K: V}; later duplicates win. */
static int env_object(const char *const *env, struct json_object **ret)
{
        struct json_object *o = json_object_new_object();
        int r = -ENOMEM;

        if (!o)
                goto out;
        for (; env && *env; env++) {
                const char *eq = strchr(*env, '=');
                char key[256];

                if (!eq || eq == *env || (size_t)(eq - *env) >= sizeof(key)) {
                        r = -EINVAL;
                        goto out;
                }
                memcpy(key, *env, (size_t)(eq - *env));
                key[eq - *env] = '\0';
                r = json_add_str(o, key, eq + 1);
                if (r < 0)
                        goto out;
        }
        r = 0;
out:
        if (r < 0) {
                json_put(o);
                o = NULL;
        }
        *ret = o;
        return r;
}

int daytona_json_create_body(const struct sandbox_spec *spec, const struct daytona_create_opts *o,
                             char **ret)
{
        struct json_object *body = NULL, *labels = NULL, *env = NULL;
        char name[128];
        int r = -EINVAL;

        *ret = NULL;
        if (!spec->sandbox_id || !spec->sandbox_id[0] || !spec->image || !spec->image[0])
                goto out;
        r = env_object(spec->env, &env);
        if (r < 0)
                goto out;
        r = -ENOMEM;
        body = json_object_new_object();
        labels = json_object_new_object();
        if (!body || !labels)
                goto out;
        snprintf(name, sizeof(name), "sb-%s", spec->sandbox_id);
        if ((r = json_add_str(labels, PROVIDER_LABEL_MANAGED, "1")) < 0 ||
            (r = json_add_str(labels, PROVIDER_LABEL_SANDBOX, spec->sandbox_id)) < 0 ||
            (r = json_add_str(labels, PROVIDER_LABEL_PREFIX, spec->key_prefix ? spec->key_prefix : "")) < 0)
                goto out;
        if ((r = json_add_str(body, "name", name)) < 0 || (r = json_add_str(body, "snapshot", spec->image)) < 0)
                goto out;
        if (o->user && o->user[0] && (r = json_add_str(body, "user", o->user)) < 0)
                goto out;
        if (o->target && o->target[0] && (r = json_add_str(body, "target", o->target)) < 0)
                goto out;
        r = json_add(body, "env", env);
        env = NULL;
        if (r < 0)
                goto out;
        r = json_add(body, "labels", labels);
        labels = NULL;
        if (r < 0)
                goto out;
        /* Daytona has no per-network choice: "none" blocks all, anything
         * else is Daytona's default egress. */
        if ((r = json_add(body, "networkBlockAll",
                     json_object_new_boolean(!spec->network || strcmp(spec->network, "none") == 0))) < 0 ||
            (r = json_add(body, "public", json_object_new_boolean(0))) < 0 ||
            (r = json_add(body, "autoStopInterval", json_object_new_int(o->auto_stop_min))) < 0 ||
            (r = json_add(body, "autoDeleteInterval", json_object_new_int(o->auto_delete_min))) < 0)
                goto out;
        r = to_string(body, ret);
out:
        json_put(body);
        json_put(labels);
        json_put(env);
        return r;
}

static int copy(char *dst, size_t size, const char *src)
{
        if (!src) {
                dst[0] = '\0';
                return 0;
        }
        if (strlen(src) >= size)
                return -EPROTO;
        strcpy(dst, src);
        return 0;
}

static int sandbox_from(struct json_object *o, struct daytona_sandbox *ret)
{
        struct json_object *labels = NULL;
        const char *id = json_get_str(o, "id"), *m;

        memset(ret, 0, sizeof(*ret));
        if (!o || !json_object_is_type(o, json_type_object) || !id || !id[0])
                return -EPROTO;
        if (copy(ret->id, sizeof(ret->id), id) < 0 ||
            copy(ret->state, sizeof(ret->state), json_get_str(o, "state")) < 0 ||
            copy(ret->toolbox_url, sizeof(ret->toolbox_url), json_get_str(o, "toolboxProxyUrl")) < 0)
                return -EPROTO;
        /* A long reason is cut, not refused: it is only a message. */
        snprintf(ret->error_reason, sizeof(ret->error_reason), "%s",
                 json_get_str(o, "errorReason") ? json_get_str(o, "errorReason") : "");
        if (json_object_object_get_ex(o, "labels", &labels) &&
            json_object_is_type(labels, json_type_object)) {
                m = json_get_str(labels, PROVIDER_LABEL_MANAGED);
                ret->managed = m && strcmp(m, "1") == 0;
                if (copy(ret->sandbox_id, sizeof(ret->sandbox_id),
                         json_get_str(labels, PROVIDER_LABEL_SANDBOX)) < 0 ||
                    copy(ret->prefix, sizeof(ret->prefix), json_get_str(labels, PROVIDER_LABEL_PREFIX)) < 0)
                        return -EPROTO;
        }
        return 0;
}

int daytona_json_parse_sandbox(const char *body, struct daytona_sandbox *ret)
{
        struct json_object *o = json_parse_or_null(body);
        int r = sandbox_from(o, ret);

        json_put(o);
        return r;
}

enum sandbox_run_state daytona_json_state(const char *s)
{
        static const struct {
                const char *name;
                enum sandbox_run_state state;
        } map[] = {
                { "started", SANDBOX_RUN_RUNNING },   { "stopped", SANDBOX_RUN_EXITED },
                { "stopping", SANDBOX_RUN_EXITED },   { "archived", SANDBOX_RUN_EXITED },
                { "archiving", SANDBOX_RUN_EXITED },  { "error", SANDBOX_RUN_EXITED },
                { "build_failed", SANDBOX_RUN_EXITED }, { "paused", SANDBOX_RUN_PAUSED },
                { "pausing", SANDBOX_RUN_PAUSED },    { "destroyed", SANDBOX_RUN_MISSING },
                { "destroying", SANDBOX_RUN_MISSING },
        };

        for (size_t i = 0; s && i < sizeof(map) / sizeof(map[0]); i++)
                if (strcmp(s, map[i].name) == 0)
                        return map[i].state;
        /* creating, starting, restoring, resuming, pulling_snapshot, ... */
        return SANDBOX_RUN_CREATED;
}

bool daytona_json_state_failed(const char *s)
{
        return s && (strcmp(s, "error") == 0 || strcmp(s, "build_failed") == 0);
}

int daytona_json_parse_list(const char *body, void (*fn)(void *ud, const struct sandbox_info *info),
                            void *ud, char *ret_cursor, size_t cursor_size)
{
        struct json_object *o = json_parse_or_null(body), *items;
        const char *cursor;
        int r = -EPROTO;

        ret_cursor[0] = '\0';
        if (!o || !json_object_object_get_ex(o, "items", &items) ||
            !json_object_is_type(items, json_type_array))
                goto out;
        cursor = json_get_str(o, "nextCursor");
        if (copy(ret_cursor, cursor_size, cursor) < 0)
                goto out;
        for (size_t i = 0; i < json_object_array_length(items); i++) {
                struct daytona_sandbox s;
                struct sandbox_info info = { 0 };

                if (sandbox_from(json_object_array_get_idx(items, i), &s) < 0)
                        goto out;
                if (!s.managed)
                        continue;
                info.state = daytona_json_state(s.state);
                snprintf(info.sandbox_id, sizeof(info.sandbox_id), "%s", s.sandbox_id);
                snprintf(info.prefix, sizeof(info.prefix), "%s", s.prefix);
                snprintf(info.ref, sizeof(info.ref), "%s", s.id);
                fn(ud, &info);
        }
        r = 0;
out:
        json_put(o);
        return r;
}

int daytona_json_exec_body(const char *command, const char *const *env, const char *cwd,
                           int timeout_s, char **ret)
{
        struct json_object *body = NULL, *envs = NULL;
        int r;

        *ret = NULL;
        r = env_object(env, &envs);
        if (r < 0)
                goto out;
        r = -ENOMEM;
        body = json_object_new_object();
        if (!body)
                goto out;
        if ((r = json_add_str(body, "command", command)) < 0)
                goto out;
        if (cwd && cwd[0] && (r = json_add_str(body, "cwd", cwd)) < 0)
                goto out;
        if (json_object_object_length(envs) > 0) {
                r = json_add(body, "envs", envs);
                envs = NULL;
                if (r < 0)
                        goto out;
        }
        if ((r = json_add(body, "timeout", json_object_new_int(timeout_s))) < 0)
                goto out;
        r = to_string(body, ret);
out:
        json_put(body);
        json_put(envs);
        return r;
}

int daytona_json_parse_exec(const char *body, int *ret_exit_code, char **ret_result,
                            size_t *ret_len)
{
        struct json_object *o = json_parse_or_null(body), *v;
        int r = -EPROTO;

        *ret_result = NULL;
        *ret_len = 0;
        *ret_exit_code = -1;
        if (!o || !json_object_is_type(o, json_type_object) ||
            !json_object_object_get_ex(o, "result", &v) || !json_object_is_type(v, json_type_string))
                goto out;
        *ret_len = (size_t)json_object_get_string_len(v);
        *ret_result = malloc(*ret_len + 1);
        if (!*ret_result) {
                r = -ENOMEM;
                goto out;
        }
        memcpy(*ret_result, json_object_get_string(v), *ret_len + 1);
        if (json_object_object_get_ex(o, "exitCode", &v) && json_object_is_type(v, json_type_int))
                *ret_exit_code = json_object_get_int(v);
        r = 0;
out:
        json_put(o);
        return r;
}

void daytona_json_error_message(const char *what, long status, const char *body, char *ret_err)
{
        struct json_object *o, *v;
        const char *msg = NULL;

        if (!ret_err)
                return;
        o = json_parse_or_null(body);
        if (o && json_object_is_type(o, json_type_object)) {
                msg = json_get_str(o, "message");
                /* NestJS validation errors: "message" is an array of strings. */
                if (!msg && json_object_object_get_ex(o, "message", &v) &&
                    json_object_is_type(v, json_type_array) && json_object_array_length(v) > 0 &&
                    json_object_is_type(json_object_array_get_idx(v, 0), json_type_string))
                        msg = json_object_get_string(json_object_array_get_idx(v, 0));
                if (!msg)
                        msg = json_get_str(o, "error");
        }
        if (msg)
                snprintf(ret_err, PROVIDER_ERR_MAX, "daytona: %s: HTTP %ld: %.160s", what, status, msg);
        else
                snprintf(ret_err, PROVIDER_ERR_MAX, "daytona: %s: HTTP %ld%s%.120s", what, status,
                         body && body[0] ? ": " : "", body ? body : "");
        json_put(o);
}

/* docker_volume: see docker_volume.h. */
#include "providers/docker/docker_volume.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "providers/docker/docker_json.h"
#include "core/json_input.h"

#define VOLUME_RESP_MAX (4 * 1024 * 1024) /* a list of a tenant's volumes */

/* One call (docker_api_json), answers capped at VOLUME_RESP_MAX. */
static int volume_call(struct docker_api *api, const char *method, const char *path, const char *body,
                       int timeout_ms, struct http_buf *resp, const char *what, char *ret_err)
{
        return docker_api_json(api, method, path, body, timeout_ms, VOLUME_RESP_MAX, resp, what, ret_err);
}

static char *name_path(const char *name)
{
        char *esc = http_escape(name), *path = NULL;

        if (esc && asprintf(&path, "/volumes/%s", esc) < 0)
                path = NULL;
        free(esc);
        return path;
}

int docker_volume_create(struct docker_api *api, int timeout_ms, const struct volume_info *v,
                         char *ret_err)
{
        char *body = NULL;
        int r = docker_json_volume_create_body(v, &body);

        if (r < 0) {
                provider_errf(ret_err, "docker: volume create: out of memory");
                return r;
        }
        r = volume_call(api, "POST", "/volumes/create", body, timeout_ms, NULL, "volume create",
                        ret_err);
        free(body);
        return r;
}

int docker_volume_inspect(struct docker_api *api, int timeout_ms, const char *name,
                          struct volume_info *ret, char *ret_err)
{
        struct http_buf resp = { 0 };
        char *path = name_path(name);
        int r = volume_call(api, "GET", path, NULL, timeout_ms, &resp, "volume inspect", ret_err);

        if (r == 0 && (r = docker_json_parse_volume(resp.data, ret)) < 0)
                provider_errf(ret_err, "docker: volume inspect: malformed answer");
        http_buf_release(&resp);
        free(path);
        return r;
}

int docker_volume_list(struct docker_api *api, int timeout_ms, const char *prefix, const char *tenant,
                       void (*fn)(void *ud, const struct volume_info *v), void *ud, char *ret_err)
{
        struct json_object *f = json_object_new_object(), *labels = json_object_new_array();
        struct http_buf resp = { 0 };
        char *pl = NULL, *tl = NULL, *esc = NULL, *path = NULL;
        int r = -ENOMEM;

        if (!f || !labels || asprintf(&pl, "%s=%s", PROVIDER_LABEL_PREFIX, prefix) < 0 ||
            asprintf(&tl, "%s=%s", PROVIDER_LABEL_TENANT, tenant) < 0) {
                pl = tl = NULL;
                goto out;
        }
        if (json_object_array_add(labels, json_object_new_string(PROVIDER_LABEL_MANAGED "=1")) < 0 ||
            json_object_array_add(labels, json_object_new_string(pl)) < 0 ||
            json_object_array_add(labels, json_object_new_string(tl)) < 0)
                goto out;
        r = json_add(f, "label", labels);
        labels = NULL; /* f's now, even on failure */
        if (r < 0)
                goto out;
        r = -ENOMEM;
        esc = http_escape(json_object_to_json_string_ext(f, JSON_C_TO_STRING_PLAIN));
        if (!esc || asprintf(&path, "/volumes?filters=%s", esc) < 0) {
                path = NULL;
                goto out;
        }
        r = volume_call(api, "GET", path, NULL, timeout_ms, &resp, "volume list", ret_err);
        if (r == 0 && (r = docker_json_parse_volumes(resp.data, fn, ud)) < 0)
                provider_errf(ret_err, "docker: volume list: malformed answer");
out:
        if (r == -ENOMEM)
                provider_errf(ret_err, "docker: volume list: out of memory");
        http_buf_release(&resp);
        json_put(labels);
        json_put(f);
        free(pl);
        free(tl);
        free(esc);
        free(path);
        return r;
}

int docker_volume_remove(struct docker_api *api, int timeout_ms, const char *name, char *ret_err)
{
        char *path = name_path(name);
        int r = volume_call(api, "DELETE", path, NULL, timeout_ms, NULL, "volume remove", ret_err);

        free(path);
        return r;
}

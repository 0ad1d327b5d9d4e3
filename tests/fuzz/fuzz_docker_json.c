/* fuzz_docker_json: the Docker daemon's answers are bytes we did not write
 * (a compromised or buggy daemon, a proxy in between). Each input is taken
 * as a response body (NUL-terminated, as http_buf hands it over) and fed to
 * every docker_json reader: the create answer's Id (into buffers of several
 * sizes), container inspect, container list, exec inspect, volume inspect
 * and list, the image list (snapshot images), the error message, and the State.Status mapping; and as one
 * line of the event stream (not NUL-terminated: the parser must read only
 * the given length). Outputs go into buffers malloc'ed at exactly
 * their size and pre-filled with garbage, so an over-write is a sanitizer
 * report and a missing NUL a contract failure. Any crash, sanitizer report or
 * abort() is a bug. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "providers/docker/docker_json.h"
#include "fuzz.h"

#define TERMINATED(a) (strnlen((a), sizeof(a)) < sizeof(a))

static void check_state(enum sandbox_run_state s)
{
        CHECK(s == SANDBOX_RUN_MISSING || s == SANDBOX_RUN_CREATED || s == SANDBOX_RUN_RUNNING ||
              s == SANDBOX_RUN_PAUSED || s == SANDBOX_RUN_EXITED);
}

static void check_info(const struct sandbox_info *info)
{
        check_state(info->state);
        CHECK(TERMINATED(info->sandbox_id));
        CHECK(TERMINATED(info->prefix));
        CHECK(TERMINATED(info->ref));
}

struct list_count {
        size_t calls, max;
};

static void on_item(void *ud, const struct sandbox_info *info)
{
        struct list_count *c = ud;

        check_info(info);
        c->calls++;
        /* every element is at least "{}" plus a separator */
        CHECK(c->calls <= c->max);
}

/* docker.c and docker_exec_fallback.c read Ids into PROVIDER_REF_MAX and 65-byte buffers; also try the
 * edges. */
static void check_id(const char *body, size_t size)
{
        char *id = malloc(size ? size : 1);
        int r;

        CHECK(id);
        memset(id, 0xA5, size ? size : 1);
        r = docker_json_parse_id(body, id, size);
        CHECK(r == 0 || r == -EPROTO);
        if (r == 0) {
                CHECK(size > 0);
                CHECK(strnlen(id, size) < size);
                CHECK(id[0] != '\0');
        }
        free(id);
}

static void check_volume(const struct volume_info *v, size_t *calls)
{
        CHECK(v->name[0] != '\0' && strnlen(v->name, sizeof(v->name)) < sizeof(v->name));
        CHECK(strnlen(v->prefix, sizeof(v->prefix)) < sizeof(v->prefix));
        CHECK(strnlen(v->tenant, sizeof(v->tenant)) < sizeof(v->tenant));
        CHECK(strnlen(v->volume, sizeof(v->volume)) < sizeof(v->volume));
        CHECK(strnlen(v->sandbox_id, sizeof(v->sandbox_id)) < sizeof(v->sandbox_id));
        CHECK(strnlen(v->created_at, sizeof(v->created_at)) < sizeof(v->created_at));
        (*calls)++;
}

static void on_volume(void *ud, const struct volume_info *v)
{
        check_volume(v, ud);
}

static void on_image(void *ud, const struct snapshot_image *im)
{
        CHECK(im->id[0] != '\0' && TERMINATED(im->id));
        CHECK(TERMINATED(im->snapshot_id));
        CHECK(TERMINATED(im->prefix));
        CHECK(TERMINATED(im->name));
        CHECK(im->names >= 0 && (im->names == 1 || im->name[0] == '\0'));
        (*(size_t *)ud)++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static const size_t id_sizes[] = { 0, 1, 2, 13, 65, PROVIDER_REF_MAX };
        char *body = malloc(size + 1);
        struct sandbox_info *info;
        struct list_count count = { 0, size / 2 + 1 };
        char *err;
        bool running;
        int exit_code, r;
        long status;

        CHECK(body);
        memcpy(body, data, size);
        body[size] = '\0';

        for (size_t i = 0; i < sizeof(id_sizes) / sizeof(id_sizes[0]); i++)
                check_id(body, id_sizes[i]);

        info = malloc(sizeof(*info));
        CHECK(info);
        memset(info, 0xA5, sizeof(*info));
        r = docker_json_parse_inspect(body, info);
        CHECK(r == 0 || r == -EPROTO);
        if (r == 0)
                check_info(info);
        free(info);

        r = docker_json_parse_list(body, on_item, &count);
        CHECK(r == 0 || r == -EPROTO);
        CHECK(r == 0 || count.calls == 0);

        running = false;
        exit_code = -2;
        r = docker_json_parse_exec_inspect(body, &running, &exit_code);
        CHECK(r == 0 || r == -EPROTO);
        if (r == 0)
                CHECK(running == true || running == false);

        check_state(docker_json_state(body));

        /* named volumes (docker_volume.h): one, and a list */
        {
                struct volume_info *v = malloc(sizeof(*v));
                size_t vcalls = 0;
                CHECK(v);
                memset(v, 0xA5, sizeof(*v));
                r = docker_json_parse_volume(body, v);
                CHECK(r == 0 || r == -EPROTO);
                if (r == 0)
                        check_volume(v, &vcalls);
                free(v);
                vcalls = 0;
                r = docker_json_parse_volumes(body, on_volume, &vcalls);
                CHECK(r == 0 || r == -EPROTO);
                CHECK(vcalls <= size);
        }

        /* the image list the snapshot reaper reads (GET /images/json) */
        {
                size_t icalls = 0;
                r = docker_json_parse_images(body, on_image, &icalls);
                CHECK(r == 0 || r == -EPROTO);
                CHECK(r == 0 || icalls == 0);
                CHECK(icalls <= size);
        }

        /* the status code rides on the first bytes, as any long would */
        status = size >= 2 ? (long)data[0] << 8 | data[1] : 500;
        err = malloc(PROVIDER_ERR_MAX);
        CHECK(err);
        memset(err, 0xA5, PROVIDER_ERR_MAX);
        docker_json_error_message("fuzz", status, body, err);
        CHECK(strnlen(err, PROVIDER_ERR_MAX) < PROVIDER_ERR_MAX);
        CHECK(strncmp(err, "docker: fuzz: ", 14) == 0);
        memset(err, 0xA5, PROVIDER_ERR_MAX);
        docker_json_error_message("fuzz", status, NULL, err);
        CHECK(strnlen(err, PROVIDER_ERR_MAX) < PROVIDER_ERR_MAX);
        docker_json_error_message("fuzz", status, body, NULL);
        free(err);

        /* an event line: straight from data, its length only */
        {
                struct sandbox_event *ev = malloc(sizeof(*ev));

                CHECK(ev);
                memset(ev, 0xA5, sizeof(*ev));
                r = docker_json_parse_event((const char *)data, size, ev);
                CHECK(r == 0 || r == 1 || r == -EPROTO || r == -ENOMEM);
                if (r == 1) {
                        CHECK(ev->kind == SANDBOX_EVENT_EXITED || ev->kind == SANDBOX_EVENT_PAUSED ||
                              ev->kind == SANDBOX_EVENT_UNPAUSED || ev->kind == SANDBOX_EVENT_OOM);
                        check_info(&ev->info);
                        CHECK(ev->info.exit_code >= -1 && ev->info.exit_code <= 999);
                        CHECK(ev->kind == SANDBOX_EVENT_EXITED || ev->info.exit_code == -1);
                }
                free(ev);
        }

        free(body);
        return 0;
}

/* docker_reap: see docker_reap.h. */
#include "providers/docker/docker_reap.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "providers/docker/docker_disk.h"
#include "providers/docker/docker_json.h"
#include "providers/docker/docker_mountd.h"
#include "providers/http_buf.h"
#include "providers/provider.h"

#define LIST_MAX (32 * 1024 * 1024)
#define DISKS_MAX (1024 * 1024) /* the helper's answer to "disks" */

/* A growing list of ids (container ids and sandbox ids, up to 64). */
struct ids {
        char (*v)[65];
        size_t n, cap;
        bool oom;
};

static void ids_add(struct ids *l, const char *id)
{
        if (l->n == l->cap) {
                size_t cap = l->cap ? 2 * l->cap : 64;
                char(*v)[65] = realloc(l->v, cap * sizeof(*v));

                if (!v) {
                        l->oom = true;
                        return;
                }
                l->v = v;
                l->cap = cap;
        }
        snprintf(l->v[l->n++], 65, "%s", id);
}

static bool ids_has(const struct ids *l, const char *id)
{
        for (size_t i = 0; i < l->n; i++)
                if (!strcmp(l->v[i], id))
                        return true;
        return false;
}

struct found {
        struct ids refs, etcs;           /* AGENT_DIR */
        struct ids live_refs, live_sids; /* the containers */
};

static void on_entry(void *ud, const char *ref, const char *sid)
{
        struct found *f = ud;

        if (ref)
                ids_add(&f->refs, ref);
        else
                ids_add(&f->etcs, sid);
}

static void on_container(void *ud, const struct sandbox_info *info)
{
        struct found *f = ud;

        ids_add(&f->live_refs, info->ref);
        if (info->sandbox_id[0])
                ids_add(&f->live_sids, info->sandbox_id);
}

/* Whether AGENT_DIR/etc-<sid> was changed within DOCKER_REAP_YOUNG_S. */
static bool etc_young(const struct docker_agent *a, const char *sid)
{
        char path[300];
        struct stat st;

        snprintf(path, sizeof(path), "%s/etc-%s", a->dir, sid);
        return lstat(path, &st) == 0 && time(NULL) - st.st_mtime < DOCKER_REAP_YOUNG_S;
}

int docker_reap(struct docker_api *api, int timeout_ms, const struct docker_agent *a,
                const char *mountd, int *ret_count, char *ret_err)
{
        struct found f = { 0 };
        struct http_buf resp = { 0 };
        char *disks = NULL, *path = NULL, *filters = NULL;
        int r = 0;

        *ret_count = 0;
        if (a)
                docker_agent_entries(a, on_entry, &f);
        if (mountd[0]) {
                disks = malloc(DISKS_MAX);
                if (!disks) {
                        r = -ENOMEM;
                        goto out;
                }
                if (docker_mountd_call(mountd, timeout_ms, "disks", disks, DISKS_MAX, NULL) < 0)
                        disks[0] = '\0'; /* the helper is away: its disks wait */
        }
        filters = http_escape("{\"label\":[\"" PROVIDER_LABEL_MANAGED "=1\"]}");
        if (filters && asprintf(&path, "/containers/json?all=1&filters=%s", filters) < 0)
                path = NULL;
        r = docker_api_json(api, "GET", path, NULL, timeout_ms, LIST_MAX, &resp, "list", ret_err);
        if (r < 0)
                goto out;
        if (docker_json_parse_list(resp.data, on_container, &f) < 0) {
                provider_errf(ret_err, "docker: list: unexpected answer");
                r = -EIO;
                goto out;
        }
        if (f.refs.oom || f.etcs.oom || f.live_refs.oom || f.live_sids.oom) {
                r = -ENOMEM;
                goto out;
        }
        for (size_t i = 0; i < f.refs.n; i++)
                if (!ids_has(&f.live_refs, f.refs.v[i])) {
                        docker_agent_cleanup(a, f.refs.v[i]);
                        (*ret_count)++;
                }
        for (size_t i = 0; i < f.etcs.n; i++)
                if (!ids_has(&f.live_sids, f.etcs.v[i]) && !etc_young(a, f.etcs.v[i])) {
                        docker_agent_etc_cleanup(a, f.etcs.v[i]);
                        (*ret_count)++;
                }
        for (char *save = NULL, *sid = disks ? strtok_r(disks, " ", &save) : NULL; sid;
             sid = strtok_r(NULL, " ", &save))
                if (strlen(sid) == 32 && !ids_has(&f.live_sids, sid) &&
                    docker_disk_remove(mountd, timeout_ms, sid, NULL) == 0)
                        (*ret_count)++;
out:
        free(f.refs.v);
        free(f.etcs.v);
        free(f.live_refs.v);
        free(f.live_sids.v);
        http_buf_release(&resp);
        free(filters);
        free(path);
        free(disks);
        return r;
}

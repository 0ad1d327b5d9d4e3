/* docker: the Docker provider's sandbox lifecycle (docker.h): create,
 * start, stop, pause, resume, limits, remove, inspect, the managed list,
 * archives and ping over the Engine API; the snapshot and volume ops handed
 * to docker_image.c and docker_volume.c; the ops table, the constructors and
 * the factory's entry. Commands, files and ingress go through
 * docker_agent_route.c (the agent) or docker_exec_fallback.c (docker exec);
 * events through docker_events.c. Docker API reference:
 * https://docs.docker.com/engine/api/v1.41/ */
#include "providers/docker/docker.h"
#include "providers/docker/docker_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "providers/docker/docker_image.h"
#include "core/image_policy.h"
#include "providers/docker/docker_disk.h"
#include "providers/docker/docker_json.h"
#include "providers/docker/docker_mountd.h"
#include "providers/docker/docker_reap.h"
#include "providers/docker/docker_volume.h"
#include "core/timeutil.h"

#define DOCKER_LIST_MAX (32 * 1024 * 1024) /* GET /containers/json */

/* Format a request path; every %s argument is percent-encoded first.
 * Returns a malloc'ed path or NULL (ENOMEM). Takes at most two strings. */
char *docker_path_fmt(const char *fmt, const char *a, const char *b)
{
        char *ea = a ? http_escape(a) : NULL, *eb = b ? http_escape(b) : NULL, *s = NULL;

        if ((a && !ea) || (b && !eb))
                goto out;
        if (asprintf(&s, fmt, ea ? ea : "", eb ? eb : "") < 0)
                s = NULL;
out:
        free(ea);
        free(eb);
        return s;
}

/* One JSON call (docker_api_json). */
int docker_call(struct docker *d, const char *method, const char *path, const char *body,
                int timeout_ms, size_t max, struct http_buf *resp, const char *what,
                char *ret_err)
{
        return docker_api_json(d->api, method, path, body, timeout_ms, max, resp, what, ret_err);
}

/* A POST to /containers/{ref}/<verb><query> with no body and no answer needed. */
static int container_post(struct docker *d, const char *ref, const char *verb, const char *query,
                          int timeout_ms, char *ret_err)
{
        char *path = docker_path_fmt("/containers/%s", ref, NULL);
        char *full = NULL;
        int r;

        if (path && asprintf(&full, "%s/%s%s", path, verb, query) < 0)
                full = NULL;
        r = docker_call(d, "POST", full, NULL, timeout_ms, DOCKER_RESP_MAX, NULL, verb, ret_err);
        free(path);
        free(full);
        return r;
}

int docker_ensure_image(struct provider *p, const char *image, const struct image_auth *auth,
                        int timeout_ms, const struct image_pull_cb *cb, char *ret_err)
{
        struct docker *d = impl(p);
        int r = docker_image_present(d->api, image, d->timeout_ms, ret_err);

        if (r != 0)
                return r < 0 ? r : 0; /* on the host: used whatever the allowlist says */
        if (!image_policy_allows(d->image_allow, image)) {
                provider_errf(ret_err, "image %.200s is not on this host and IMAGE_ALLOW does not "
                              "allow pulling it", image);
                return -EPERM;
        }
        return docker_image_pull(d->api, image, auth, timeout_ms, cb, ret_err);
}

static int docker_image_id_op(struct provider *p, const char *image, char *ret_id, char *ret_err)
{
        struct docker *d = impl(p);

        return docker_image_id(d->api, image, d->timeout_ms, ret_id, PROVIDER_IMAGE_ID_MAX, ret_err);
}

/* Undo a create that failed after the container was made: the container,
 * its host state, its disk's image. */
static void create_undo(struct docker *d, const char *ref, const char *sid)
{
        char ignored[PROVIDER_ERR_MAX];
        char *rm = docker_path_fmt("/containers/%s?force=1&v=1", ref, NULL);

        (void)docker_call(d, "DELETE", rm, NULL, d->timeout_ms, DOCKER_RESP_MAX, NULL, "remove", ignored);
        free(rm);
        if (d->agent.bin[0])
                docker_agent_cleanup(&d->agent, ref);
        (void)docker_disk_remove(d->mountd, d->timeout_ms, sid, NULL);
}

static int docker_create(struct provider *p, const struct sandbox_spec *spec, char *ret_ref,
                         char *ret_err)
{
        struct docker *d = impl(p);
        struct http_buf resp = { 0 };
        char *body = NULL, *path = NULL, name[128];
        int r;

        /* a disk needs the helper: refused before anything is made */
        if (spec->limits.disk_mb > 0 && !d->mountd[0]) {
                provider_errf(ret_err, "docker: create: a disk of %lld MiB and no mount helper "
                              "(MOUNTD_SOCKET is empty)", (long long)spec->limits.disk_mb);
                return -EINVAL;
        }
        /* the agent's label on the container (docker_json.c) tells every
         * later call whether it has one */
        bool agent = d->agent.bin[0];
        struct docker_agent_mount m;
        if (agent) {
                snprintf(m.bin, sizeof(m.bin), "%s", d->agent.bin);
                if (docker_agent_source(&d->agent, spec->sandbox_id, m.source, sizeof(m.source)) < 0) {
                        provider_errf(ret_err, "docker: create: AGENT_DIR too long");
                        r = -EINVAL;
                        goto out;
                }
                m.egress[0] = '\0';
                m.etc[0] = '\0';
                m.env_file = d->agent.exec;
                m.dials = spec->agent_dials;
                if (d->agent.egress_dir[0] &&
                    (r = docker_agent_egress_prepare(&d->agent, spec->sandbox_id, m.egress,
                                                     sizeof(m.egress), ret_err)) < 0)
                        goto out;
                /* read-only /etc/hosts, hostname, resolv.conf (docker_agent.h) */
                if (d->agent.etc && (!spec->network || !strcmp(spec->network, "none")) &&
                    (r = docker_agent_etc(&d->agent, spec->sandbox_id, NULL, m.etc, sizeof(m.etc),
                                          ret_err)) < 0)
                        goto out;
        }
        r = docker_json_create_body(spec, agent ? &m : NULL, &body);
        if (r < 0) {
                provider_errf(ret_err, "docker: create: %s",
                           r == -EINVAL ? "sandbox id and image are required" : "out of memory");
                goto out;
        }
        snprintf(name, sizeof(name), "sb-%s", spec->sandbox_id);
        path = docker_path_fmt("/containers/create?name=%s", name, NULL);
        r = docker_call(d, "POST", path, body, d->start_timeout_ms, DOCKER_RESP_MAX, &resp, "create",
                        ret_err);
        if (r == -ENOENT && spec->image) {
                /* Docker API: 404 on create is "no such image": pull it, if
                 * allowed, and create again */
                r = docker_ensure_image(p, spec->image, spec->image_auth, d->pull_timeout_ms,
                                        spec->pull_cb, ret_err);
                if (r == -EPERM || r == -ENOENT)
                        r = -EREMOTEIO; /* the sandbox fails; not "no such sandbox" */
                if (r == 0)
                        r = docker_call(d, "POST", path, body, d->start_timeout_ms, DOCKER_RESP_MAX,
                                        &resp, "create", ret_err);
        }
        if (r < 0)
                goto out;
        r = docker_json_parse_id(resp.data, ret_ref, PROVIDER_REF_MAX);
        if (r < 0) {
                provider_errf(ret_err, "docker: create: answer without a container id");
                goto out;
        }
        if (agent)
                r = docker_agent_prepare(&d->agent, spec->sandbox_id, ret_ref, spec->agent_dials,
                                         ret_err);
        /* the disk before the first start: nothing has written to the
         * layer yet (docker_disk.h) */
        if (r == 0 && spec->limits.disk_mb > 0)
                r = docker_disk_attach(d->api, d->timeout_ms, d->mountd, ret_ref, ret_err);
        if (r < 0)
                create_undo(d, ret_ref, spec->sandbox_id);
out:
        http_buf_release(&resp);
        free(body);
        free(path);
        return r;
}

static int docker_inspect(struct provider *p, const char *ref, struct sandbox_info *ret,
                          char *ret_err);

/* Is the container still up? For the agent's readiness wait. Only an
 * answer that it is gone or has ended counts: an inspect that fails or
 * times out (a Docker busy starting a storm of containers) is no news, and
 * the wait's own deadline bounds a Docker that never answers. */
struct alive_probe {
        struct provider *p;
        const char *ref;
};

static int container_alive(void *ud)
{
        struct alive_probe *a = ud;
        struct sandbox_info info;
        char err[PROVIDER_ERR_MAX];
        int r = docker_inspect(a->p, a->ref, &info, err);

        if (r == -ENOENT)
                return r;
        if (r < 0)
                return 0;
        return info.state == SANDBOX_RUN_RUNNING || info.state == SANDBOX_RUN_CREATED ? 0 : -EIO;
}

/* start: with the agent, its run directory is made again if it went (AGENT_DIR
 * on a tmpfs after a reboot), and the start returns once the agent answers,
 * so the first command never races its socket. */
static int docker_start(struct provider *p, const char *ref, char *ret_err)
{
        struct docker *d = impl(p);
        char dir[256];
        struct sandbox_info info;
        int r, rd = d->agent.bin[0] ? docker_agent_run_dir(&d->agent, ref, dir, sizeof(dir)) : -EINVAL;

        if (rd == -ENOENT) {
                r = docker_inspect(p, ref, &info, ret_err);
                if (r < 0)
                        return r;
                if (info.agent && info.sandbox_id[0]) {
                        r = docker_agent_prepare(&d->agent, info.sandbox_id, ref, info.agent_dials,
                                                 ret_err);
                        if (r < 0)
                                return r;
                        rd = 0;
                }
        }
        /* a disk the start finds unmounted (a reboot, a restart of dockerd)
         * is mounted again first: its layer cannot start without it; one
         * a crash left unmade (between the create and the disk) is made */
        if (d->mountd[0] &&
            (r = docker_disk_attach(d->api, d->timeout_ms, d->mountd, ref, ret_err)) < 0)
                return r;
        /* one bound for the start call and the agent's answer together */
        int64_t t0 = timeutil_mono_ms();
        r = container_post(d, ref, "start", "", d->start_timeout_ms, ret_err);
        if (r < 0 || rd < 0)
                return r;
        int64_t left = d->start_timeout_ms - (timeutil_mono_ms() - t0);
        struct alive_probe probe = { p, ref };
        r = docker_agent_wait_ready(dir, left > 1000 ? (int)left : 1000, container_alive, &probe,
                                    ret_err);
        if (r < 0 && r != -ETIMEDOUT && docker_inspect(p, ref, &info, NULL) == 0 &&
            info.state == SANDBOX_RUN_EXITED)
                provider_errf(ret_err, "docker: start: the sandbox's entrypoint exited with code %d",
                              info.exit_code);
        else if (r == -ETIMEDOUT && docker_agent_dials(&d->agent, ref))
                provider_errf(ret_err, "docker: start: the sandbox's agent dials the host relay, and "
                              "no connection of it reached %s/agent.sock: is sandbox-egress-relay "
                              "running with --agent-dir %s? (docs/AGENT.md, \"Transports\")",
                              dir, d->agent.dir);
        return r;
}

static int docker_stop(struct provider *p, const char *ref, char *ret_err)
{
        struct docker *d = impl(p);
        char q[32];

        snprintf(q, sizeof(q), "?t=%d", DOCKER_STOP_GRACE_S);
        return container_post(d, ref, "stop", q, d->timeout_ms + DOCKER_STOP_GRACE_S * 1000, ret_err);
}

static int docker_pause(struct provider *p, const char *ref, char *ret_err)
{
        return container_post(impl(p), ref, "pause", "", impl(p)->timeout_ms, ret_err);
}

static int docker_resume(struct provider *p, const char *ref, char *ret_err)
{
        return container_post(impl(p), ref, "unpause", "", impl(p)->timeout_ms, ret_err);
}

/* Resources of a created or running container, in place (a warm pool
 * member claimed with the request's limits). Memory and MemorySwap move
 * together, as at create: no swap on top of the memory limit. */
static int docker_update_limits(struct provider *p, const char *ref, const struct sandbox_limits *l,
                                char *ret_err)
{
        struct docker *d = impl(p);
        char body[256], *path = docker_path_fmt("/containers/%s/update", ref, NULL);
        int n = snprintf(body, sizeof(body), "{");
        int r;

        if (l->nano_cpus > 0)
                n += snprintf(body + n, sizeof(body) - n, "\"NanoCpus\":%lld,", (long long)l->nano_cpus);
        if (l->memory_bytes > 0)
                n += snprintf(body + n, sizeof(body) - n, "\"Memory\":%lld,\"MemorySwap\":%lld,",
                              (long long)l->memory_bytes, (long long)l->memory_bytes);
        if (l->pids > 0)
                n += snprintf(body + n, sizeof(body) - n, "\"PidsLimit\":%lld,", (long long)l->pids);
        if (body[n - 1] == ',')
                n--;
        snprintf(body + n, sizeof(body) - n, "}");
        r = docker_call(d, "POST", path, body, d->timeout_ms, DOCKER_RESP_MAX, NULL, "update", ret_err);
        free(path);
        return r;
}

static int docker_remove(struct provider *p, const char *ref, char *ret_err)
{
        struct docker *d = impl(p);
        struct docker_disk_info di = { 0 };
        char *path = docker_path_fmt("/containers/%s?force=1&v=1", ref, NULL);
        int r;

        /* its sandbox id, for its disk's image after it (the removal
         * unmounts the disk); one gone already leaves its image to the
         * reconciler (docker_reap) */
        if (d->mountd[0])
                (void)docker_disk_inspect(d->api, d->timeout_ms, ref, &di, NULL);
        r = docker_call(d, "DELETE", path, NULL, d->timeout_ms, DOCKER_RESP_MAX, NULL, "remove", ret_err);
        if (d->agent.bin[0] && (r == 0 || r == -ENOENT))
                docker_agent_cleanup(&d->agent, ref);
        if (r == 0 && di.disk_mb > 0)
                (void)docker_disk_remove(d->mountd, d->timeout_ms, di.sandbox_id, NULL);

        free(path);
        return r;
}

static int docker_inspect(struct provider *p, const char *ref, struct sandbox_info *ret,
                          char *ret_err)
{
        struct docker *d = impl(p);
        struct http_buf resp = { 0 };
        char *path = docker_path_fmt("/containers/%s/json", ref, NULL);
        int r;

        memset(ret, 0, sizeof(*ret));
        ret->state = SANDBOX_RUN_MISSING;
        r = docker_call(d, "GET", path, NULL, d->timeout_ms, DOCKER_RESP_MAX, &resp, "inspect", ret_err);
        if (r < 0)
                goto out;
        r = docker_json_parse_inspect(resp.data, ret);
        if (r < 0)
                provider_errf(ret_err, "docker: inspect: unexpected answer");
out:
        http_buf_release(&resp);
        free(path);
        return r;
}

static int docker_list_managed(struct provider *p,
                               void (*fn)(void *ud, const struct sandbox_info *info), void *ud,
                               char *ret_err)
{
        struct docker *d = impl(p);
        struct http_buf resp = { 0 };
        char *path = docker_path_fmt("/containers/json?all=1&filters=%s",
                                     "{\"label\":[\"" PROVIDER_LABEL_MANAGED "=1\"]}", NULL);
        int r;

        r = docker_call(d, "GET", path, NULL, d->timeout_ms, DOCKER_LIST_MAX, &resp, "list", ret_err);
        if (r < 0)
                goto out;
        r = docker_json_parse_list(resp.data, fn, ud);
        if (r < 0)
                provider_errf(ret_err, "docker: list: unexpected answer");
out:
        http_buf_release(&resp);
        free(path);
        return r;
}

int docker_archive_put(struct docker *d, const char *ref, const char *dir, const void *tar,
                       size_t len, char *ret_err)
{
        struct http_buf resp = { 0 };
        char *path = docker_path_fmt("/containers/%s/archive?path=%s", ref, dir);
        struct docker_request req = {
                .method = "PUT",
                .path = path,
                .body = tar,
                .body_len = len,
                .content_type = "application/x-tar",
                .timeout_ms = d->timeout_ms,
                .max_resp = DOCKER_RESP_MAX,
        };
        long status = 0;
        int r = -ENOMEM;

        if (!path) {
                provider_errf(ret_err, "docker: put archive: out of memory");
                goto out;
        }
        r = docker_api_request(d->api, &req, &status, &resp, ret_err);
        if (r < 0)
                goto out;
        r = docker_api_status_errno(status);
        if (r < 0)
                docker_json_error_message("put archive", status, resp.data, ret_err);
out:
        http_buf_release(&resp);
        free(path);
        return r;
}

static int docker_put_archive(struct provider *p, const char *ref, const char *dir,
                              const void *tar, size_t len, char *ret_err)
{
        return docker_archive_put(impl(p), ref, dir, tar, len, ret_err);
}

static int docker_get_archive(struct provider *p, const char *ref, const char *path,
                              size_t max_len, void **ret_tar, size_t *ret_len, char *ret_err)
{
        struct docker *d = impl(p);
        struct http_buf resp = { 0 };
        char *rpath = docker_path_fmt("/containers/%s/archive?path=%s", ref, path), *data = NULL;
        size_t len = 0;
        int r;

        r = docker_call(d, "GET", rpath, NULL, d->timeout_ms, max_len, &resp, "get archive", ret_err);
        if (r < 0)
                goto out;
        r = http_buf_steal(&resp, &data, &len);
out:
        http_buf_release(&resp);
        free(rpath);
        *ret_tar = r < 0 ? NULL : data;
        *ret_len = r < 0 ? 0 : len;
        return r;
}

static int docker_ping(struct provider *p, char *ret_err)
{
        struct docker *d = impl(p);
        struct http_buf resp = { 0 };
        int r = docker_call(d, "GET", "/_ping", NULL, d->timeout_ms, 64, &resp, "ping", ret_err);

        if (r == 0 && (!resp.data || strcmp(resp.data, "OK") != 0)) {
                provider_errf(ret_err, "docker: ping: unexpected answer");
                r = -EIO;
        }
        http_buf_release(&resp);
        /* no sandbox can be made without the host's mount helper when one
         * is configured (docker_agent.h, docker_disk.h): not ready */
        if (r == 0 && d->mountd[0])
                r = docker_mountd_call(d->mountd, d->timeout_ms, "ping", NULL, 0, ret_err);
        return r;
}

/* docker_reap.h */
static int docker_reap_orphans(struct provider *p, int *ret_count, char *ret_err)
{
        struct docker *d = impl(p);

        return docker_reap(d->api, d->timeout_ms, d->agent.bin[0] ? &d->agent : NULL, d->mountd,
                           ret_count, ret_err);
}

static void docker_free(struct provider *p)
{
        struct docker *d = impl(p);

        if (d) {
                docker_api_free(d->api);
                free(d->image_allow);
        }
        free(d);
        free(p);
}

static int docker_snapshot_create(struct provider *p, const char *ref, const struct snapshot_spec *spec,
                                  int64_t *ret_size, char *ret_err)
{
        return docker_image_commit(impl(p)->api, ref, spec, ret_size, ret_err);
}

static int docker_snapshot_delete(struct provider *p, const char *image, char *ret_err)
{
        return docker_image_remove(impl(p)->api, image, impl(p)->timeout_ms, ret_err);
}

static int docker_snapshot_list(struct provider *p, const char *prefix,
                                void (*fn)(void *ud, const struct snapshot_image *im), void *ud,
                                char *ret_err)
{
        return docker_image_list_snapshots(impl(p)->api, prefix, impl(p)->timeout_ms, fn, ud, ret_err);
}

static int docker_snapshot_prune(struct provider *p, const char *id, char *ret_err)
{
        return docker_image_prune(impl(p)->api, id, impl(p)->timeout_ms, ret_err);
}

/* Named volumes (docker_volume.h), within the provider's call timeout. */
static int docker_volume_create_op(struct provider *p, const struct volume_info *v, char *ret_err)
{
        return docker_volume_create(impl(p)->api, impl(p)->timeout_ms, v, ret_err);
}

static int docker_volume_inspect_op(struct provider *p, const char *name, struct volume_info *ret,
                                    char *ret_err)
{
        return docker_volume_inspect(impl(p)->api, impl(p)->timeout_ms, name, ret, ret_err);
}

static int docker_volume_list_op(struct provider *p, const char *prefix, const char *tenant,
                                 void (*fn)(void *ud, const struct volume_info *v), void *ud,
                                 char *ret_err)
{
        return docker_volume_list(impl(p)->api, impl(p)->timeout_ms, prefix, tenant, fn, ud, ret_err);
}

static int docker_volume_remove_op(struct provider *p, const char *name, char *ret_err)
{
        return docker_volume_remove(impl(p)->api, impl(p)->timeout_ms, name, ret_err);
}

static const struct provider_ops docker_ops = {
        .name = "docker",
        .create = docker_create,
        .start = docker_start,
        .stop = docker_stop,
        .pause = docker_pause,
        .resume = docker_resume,
        .remove = docker_remove,
        .exec = docker_exec,
        .exec_stream = docker_exec_stream,
        .inspect = docker_inspect,
        .list_managed = docker_list_managed,
        .put_archive = docker_put_archive,
        .get_archive = docker_get_archive,
        .ping = docker_ping,
        .watch_events = docker_watch_events,
        .read_file = docker_read_file,
        .write_file = docker_write_file,
        .image_ensure = docker_ensure_image,
        .update_limits = docker_update_limits,
        .snapshot_create = docker_snapshot_create,
        .snapshot_delete = docker_snapshot_delete,
        .snapshot_list = docker_snapshot_list,
        .snapshot_prune = docker_snapshot_prune,
        .volume_create = docker_volume_create_op,
        .volume_inspect = docker_volume_inspect_op,
        .volume_list = docker_volume_list_op,
        .volume_remove = docker_volume_remove_op,
        .agent_dir_name = docker_agent_dir_name,
        .image_id = docker_image_id_op,
        .reap_orphans = docker_reap_orphans,
        .logs = docker_logs,
        .free = docker_free,
};

int docker_provider_new(const char *socket_path, int timeout_ms, struct provider **ret)
{
        struct provider *p = NULL;
        struct docker *d = NULL;
        int r = -EINVAL;

        if (timeout_ms <= 0)
                goto out;
        r = -ENOMEM;
        p = calloc(1, sizeof(*p));
        d = calloc(1, sizeof(*d));
        if (!p || !d)
                goto out;
        r = docker_api_new(socket_path, &d->api);
        if (r < 0)
                goto out;
        d->timeout_ms = timeout_ms;
        d->pull_timeout_ms = timeout_ms;
        d->start_timeout_ms = timeout_ms;
        p->ops = &docker_ops;
        p->impl = d;
        d = NULL;
        r = 0;
out:
        if (r < 0) {
                free(d);
                free(p);
                p = NULL;
        }
        *ret = p;
        return r;
}

int docker_provider_set_agent(struct provider *p, const char *bin, const char *dir, bool exec)
{
        struct docker *d = impl(p);

        if (!bin || !bin[0]) {
                d->agent = (struct docker_agent){ 0 };
                return 0;
        }
        if (bin[0] != '/' || !dir || dir[0] != '/' ||
            snprintf(d->agent.bin, sizeof(d->agent.bin), "%s", bin) >= (int)sizeof(d->agent.bin) ||
            snprintf(d->agent.dir, sizeof(d->agent.dir), "%s", dir) >= (int)sizeof(d->agent.dir)) {
                d->agent = (struct docker_agent){ 0 };
                return -EINVAL;
        }
        d->agent.exec = exec;
        return 0;
}

int docker_provider_set_pull(struct provider *p, const char *allow, int timeout_ms)
{
        struct docker *d = impl(p);
        char *copy = allow && allow[0] ? strdup(allow) : NULL;

        if (allow && allow[0] && !copy)
                return -ENOMEM;
        free(d->image_allow);
        d->image_allow = copy;
        if (timeout_ms > 0)
                d->pull_timeout_ms = timeout_ms;
        return 0;
}

int docker_provider_set_start_timeout(struct provider *p, int timeout_ms)
{
        if (timeout_ms <= 0)
                return -EINVAL;
        impl(p)->start_timeout_ms = timeout_ms;
        return 0;
}

static int docker_from_config(const struct broker_config *cfg, struct provider **ret)
{
        int r = docker_provider_new(cfg->docker_socket, cfg->docker_timeout_ms, ret);

        if (r == 0 && cfg->sandbox_start_timeout_ms > 0)
                (void)docker_provider_set_start_timeout(*ret, cfg->sandbox_start_timeout_ms);
        if (r == 0 && (r = docker_provider_set_agent(*ret, cfg->sandbox_agent, cfg->agent_dir,
                                                     !strcmp(cfg->exec_transport, "agent"))) < 0) {
                provider_free(*ret);
                *ret = NULL;
        }
        /* the host's mount helper (docker_mountd.h): the run directories'
         * tmpfs and the disks, within the call timeout; the read-only etc
         * files of sandboxes without a network */
        if (r == 0) {
                snprintf(impl(*ret)->mountd, sizeof(impl(*ret)->mountd), "%s", cfg->mountd_socket);
                if (impl(*ret)->agent.bin[0]) {
                        snprintf(impl(*ret)->agent.mountd, sizeof(impl(*ret)->agent.mountd), "%s",
                                 cfg->mountd_socket);
                        impl(*ret)->agent.mountd_timeout_ms = cfg->docker_timeout_ms;
                        impl(*ret)->agent.etc = !strcmp(cfg->sandbox_network, "none");
                }
        }
        /* egress needs the agent (its relay runs in it): EGRESS_DIR alone does nothing */
        if (r == 0 && cfg->egress_dir[0] && impl(*ret)->agent.bin[0] &&
            snprintf(impl(*ret)->agent.egress_dir, sizeof(impl(*ret)->agent.egress_dir), "%s",
                     cfg->egress_dir) >= (int)sizeof(impl(*ret)->agent.egress_dir)) {
                r = -ENAMETOOLONG;
                provider_free(*ret);
                *ret = NULL;
        }
        /* the deployment's egress CA, trusted by the sandbox (docs/EGRESS.md) */
        if (r == 0 && cfg->egress_dir[0] && cfg->egress_vault_ca_dir[0] && impl(*ret)->agent.bin[0] &&
            snprintf(impl(*ret)->agent.egress_ca, sizeof(impl(*ret)->agent.egress_ca), "%s/ca.pem",
                     cfg->egress_vault_ca_dir) >= (int)sizeof(impl(*ret)->agent.egress_ca)) {
                r = -ENAMETOOLONG;
                provider_free(*ret);
                *ret = NULL;
        }
        if (r == 0 && (r = docker_provider_set_pull(*ret, cfg->image_allow,
                                                    cfg->image_pull_timeout_ms)) < 0) {
                provider_free(*ret);
                *ret = NULL;
        }
        return r;
}

/* create and start are one Engine API call each (the start with the agent's
 * answer), bounded by SANDBOX_START_TIMEOUT_MS; every other call by
 * DOCKER_TIMEOUT_MS */
static int docker_deadline_ms(const struct broker_config *cfg)
{
        /* the longest call of a create or a start: the create, or the start
         * with the agent's answer; a create may first pull its image */
        int t = cfg->docker_timeout_ms > cfg->sandbox_start_timeout_ms ? cfg->docker_timeout_ms
                                                                       : cfg->sandbox_start_timeout_ms;
        if (cfg->image_allow[0])
                return t + cfg->image_pull_timeout_ms;
        return t;
}

const struct provider_backend docker_backend = {
        .name = "docker",
        .new_from_config = docker_from_config,
        .deadline_ms = docker_deadline_ms,
};

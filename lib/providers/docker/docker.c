/* docker: see docker.h. Docker API reference:
 * https://docs.docker.com/engine/api/v1.41/ */
#include "docker.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent_client.h"
#include "docker_agent.h"
#include "docker_api.h"
#include "docker_image.h"
#include "image_policy.h"
#include "docker_disk.h"
#include "docker_json.h"
#include "docker_mountd.h"
#include "docker_reap.h"
#include "docker_volume.h"
#include "linebuf.h"
#include "tarball.h"
#include "timeutil.h"

#define DOCKER_RESP_MAX (1024 * 1024)      /* create, inspect, exec answers */
#define DOCKER_LIST_MAX (32 * 1024 * 1024) /* GET /containers/json */
#define DOCKER_EXEC_GRACE_MS 5000          /* exec transfer bound past its timeout */
#define DOCKER_EXEC_ID_MAX 80
#define DOCKER_TIMEOUT_KILLED 137          /* 128 + SIGKILL, from `timeout -s KILL` */

/* stdin for exec: Docker can only feed an exec's stdin over a hijacked
 * (HTTP Upgrade) connection, which libcurl does not drive. So the data is
 * first copied into the sandbox as /tmp/.sb-stdin-<random> (mode 0600, owned
 * by the exec user) through the archive API, and the command runs under
 * this wrapper, which opens it as stdin, unlinks it and execs argv. */
#define STDIN_DIR "/tmp"
#define STDIN_SCRIPT "exec <\"$0\" && rm -f -- \"$0\" && exec \"$@\""

struct docker {
        struct docker_api *api;
        int timeout_ms;
        struct docker_agent agent; /* agent.bin "" = no agent */
        char *image_allow;         /* IMAGE_ALLOW (image_policy.h); NULL = no pulls */
        int pull_timeout_ms;       /* IMAGE_PULL_TIMEOUT_MS: a create's own pull */
        int start_timeout_ms;      /* SANDBOX_START_TIMEOUT_MS: the container create
                                    * call; the start call + the agent's answer */
        char mountd[108];          /* MOUNTD_SOCKET: the disks' helper (docker_disk.h); "" = none */
};

static struct docker *impl(struct provider *p)
{
        return p->impl;
}

/* Format a request path; every %s argument is percent-encoded first.
 * Returns a malloc'ed path or NULL (ENOMEM). Takes at most two strings. */
static char *path_fmt(const char *fmt, const char *a, const char *b)
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
static int call(struct docker *d, const char *method, const char *path, const char *body,
                int timeout_ms, size_t max, struct http_buf *resp, const char *what,
                char *ret_err)
{
        return docker_api_json(d->api, method, path, body, timeout_ms, max, resp, what, ret_err);
}

/* A POST to /containers/{ref}/<verb><query> with no body and no answer needed. */
static int container_post(struct docker *d, const char *ref, const char *verb, const char *query,
                          int timeout_ms, char *ret_err)
{
        char *path = path_fmt("/containers/%s", ref, NULL);
        char *full = NULL;
        int r;

        if (path && asprintf(&full, "%s/%s%s", path, verb, query) < 0)
                full = NULL;
        r = call(d, "POST", full, NULL, timeout_ms, DOCKER_RESP_MAX, NULL, verb, ret_err);
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
        char *rm = path_fmt("/containers/%s?force=1&v=1", ref, NULL);

        (void)call(d, "DELETE", rm, NULL, d->timeout_ms, DOCKER_RESP_MAX, NULL, "remove", ignored);
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
        path = path_fmt("/containers/create?name=%s", name, NULL);
        r = call(d, "POST", path, body, d->start_timeout_ms, DOCKER_RESP_MAX, &resp, "create",
                 ret_err);
        if (r == -ENOENT && spec->image) {
                /* Docker API: 404 on create is "no such image": pull it, if
                 * allowed, and create again */
                r = docker_ensure_image(p, spec->image, spec->image_auth, d->pull_timeout_ms,
                                        spec->pull_cb, ret_err);
                if (r == -EPERM || r == -ENOENT)
                        r = -EREMOTEIO; /* the sandbox fails; not "no such sandbox" */
                if (r == 0)
                        r = call(d, "POST", path, body, d->start_timeout_ms, DOCKER_RESP_MAX,
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
        char body[256], *path = path_fmt("/containers/%s/update", ref, NULL);
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
        r = call(d, "POST", path, body, d->timeout_ms, DOCKER_RESP_MAX, NULL, "update", ret_err);
        free(path);
        return r;
}

static int docker_remove(struct provider *p, const char *ref, char *ret_err)
{
        struct docker *d = impl(p);
        struct docker_disk_info di = { 0 };
        char *path = path_fmt("/containers/%s?force=1&v=1", ref, NULL);
        int r;

        /* its sandbox id, for its disk's image after it (the removal
         * unmounts the disk); one gone already leaves its image to the
         * reconciler (docker_reap) */
        if (d->mountd[0])
                (void)docker_disk_inspect(d->api, d->timeout_ms, ref, &di, NULL);
        r = call(d, "DELETE", path, NULL, d->timeout_ms, DOCKER_RESP_MAX, NULL, "remove", ret_err);
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
        char *path = path_fmt("/containers/%s/json", ref, NULL);
        int r;

        memset(ret, 0, sizeof(*ret));
        ret->state = SANDBOX_RUN_MISSING;
        r = call(d, "GET", path, NULL, d->timeout_ms, DOCKER_RESP_MAX, &resp, "inspect", ret_err);
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
        char *path = path_fmt("/containers/json?all=1&filters=%s",
                              "{\"label\":[\"" PROVIDER_LABEL_MANAGED "=1\"]}", NULL);
        int r;

        r = call(d, "GET", path, NULL, d->timeout_ms, DOCKER_LIST_MAX, &resp, "list", ret_err);
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

static int archive_put(struct docker *d, const char *ref, const char *dir, const void *tar,
                       size_t len, char *ret_err)
{
        struct http_buf resp = { 0 };
        char *path = path_fmt("/containers/%s/archive?path=%s", ref, dir);
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
        return archive_put(impl(p), ref, dir, tar, len, ret_err);
}

static int docker_get_archive(struct provider *p, const char *ref, const char *path,
                              size_t max_len, void **ret_tar, size_t *ret_len, char *ret_err)
{
        struct docker *d = impl(p);
        struct http_buf resp = { 0 };
        char *rpath = path_fmt("/containers/%s/archive?path=%s", ref, path), *data = NULL;
        size_t len = 0;
        int r;

        r = call(d, "GET", rpath, NULL, d->timeout_ms, max_len, &resp, "get archive", ret_err);
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
        int r = call(d, "GET", "/_ping", NULL, d->timeout_ms, 64, &resp, "ping", ret_err);

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

/* ---- exec ---- */

struct exec_stream {
        struct docker_demux dm;
        struct http_buf out, err;
};

static int exec_sink(void *ud, const void *data, size_t len)
{
        struct exec_stream *s = ud;

        return docker_demux_feed(&s->dm, data, len, &s->out, &s->err);
}

/* How an exec's output is taken: into buffers (sink + ud), streamed
 * (sink + ud + tick), or not at all (detach). */
struct exec_io {
        int (*sink)(void *ud, const void *data, size_t len);
        int (*tick)(void *ud);
        void *ud;
        bool detach;
};

/* Run a final argv (already wrapped): exec create, start (attached, or
 * detached), exit code. On 0, *ret_exit is the exit code (-1 if detached or
 * timed out); a transfer that outlives timeout_ms + grace gives 0 with
 * *ret_timed_out set. */
static int exec_run_io(struct docker *d, const char *ref, const char *const *argv,
                       const char *const *env, const char *cwd, const char *user,
                       int timeout_ms, const struct exec_io *io, int *ret_exit,
                       bool *ret_timed_out, char *ret_err)
{
        static const char attached[] = "{\"Detach\":false,\"Tty\":false}";
        static const char detached[] = "{\"Detach\":true,\"Tty\":false}";
        struct http_buf resp = { 0 };
        char *body = NULL, *path = NULL, id[DOCKER_EXEC_ID_MAX];
        struct docker_request req = { 0 };
        long status = 0;
        int r, grace = d->timeout_ms < DOCKER_EXEC_GRACE_MS ? d->timeout_ms : DOCKER_EXEC_GRACE_MS;

        *ret_exit = -1;
        *ret_timed_out = false;
        r = docker_json_exec_body(argv, env, cwd, user, &body);
        if (r < 0) {
                provider_errf(ret_err, "docker: exec: %s", r == -EINVAL ? "empty argv" : "out of memory");
                goto out;
        }
        path = path_fmt("/containers/%s/exec", ref, NULL);
        r = call(d, "POST", path, body, d->timeout_ms, DOCKER_RESP_MAX, &resp, "exec", ret_err);
        if (r < 0)
                goto out;
        r = docker_json_parse_id(resp.data, id, sizeof(id));
        http_buf_release(&resp);
        if (r < 0) {
                provider_errf(ret_err, "docker: exec: answer without an exec id");
                goto out;
        }

        free(path);
        path = path_fmt("/exec/%s/start", id, NULL);
        req = (struct docker_request){
                .method = "POST",
                .path = path,
                .body = io->detach ? detached : attached,
                .body_len = io->detach ? strlen(detached) : strlen(attached),
                .timeout_ms = io->detach ? d->timeout_ms : timeout_ms + grace,
                .max_resp = DOCKER_RESP_MAX,
                .sink = io->sink,
                .sink_ud = io->ud,
                .tick = io->tick,
                .tick_ud = io->ud,
        };
        r = path ? docker_api_request(d->api, &req, &status, &resp, ret_err) : -ENOMEM;
        if (r == -ETIMEDOUT && !io->detach) {
                /* The wrapper did not end it in time (the sandbox was
                 * frozen, or dockerd is stuck; a background child holding
                 * stdout open does not count: dockerd closes an exec's
                 * streams 2 s after its process exits). Report what we
                 * have; Docker has no exec kill. */
                *ret_timed_out = true;
                r = 0;
        } else if (r == -EPROTO) {
                provider_errf(ret_err, "docker: exec: malformed output stream");
                r = -EIO;
                goto out;
        } else if (r < 0) {
                goto out;
        } else if ((r = docker_api_status_errno(status)) < 0) {
                docker_json_error_message("exec start", status, resp.data, ret_err);
                goto out;
        }
        http_buf_release(&resp);

        if (!*ret_timed_out && !io->detach) {
                free(path);
                path = path_fmt("/exec/%s/json", id, NULL);
                /* The stream can close a moment before Docker records the
                 * exit code: poll briefly while it says Running. */
                for (int i = 0; i < 100; i++) {
                        bool running = false;

                        r = call(d, "GET", path, NULL, d->timeout_ms, DOCKER_RESP_MAX, &resp,
                                 "exec inspect", ret_err);
                        if (r < 0)
                                goto out;
                        r = docker_json_parse_exec_inspect(resp.data, &running, ret_exit);
                        http_buf_release(&resp);
                        if (r < 0) {
                                provider_errf(ret_err, "docker: exec inspect: unexpected answer");
                                goto out;
                        }
                        if (!running)
                                break;
                        nanosleep(&(struct timespec){ 0, 5 * 1000 * 1000 }, NULL);
                }
        }
        r = 0;
out:
        http_buf_release(&resp);
        free(body);
        free(path);
        return r;
}

/* exec_run_io with the output buffered into ret (capped at max_output per
 * stream); detach: started only. */
static int exec_run(struct docker *d, const char *ref, const char *const *argv,
                    const char *const *env, const char *cwd, const char *user, int timeout_ms,
                    size_t max_output, bool detach, struct exec_result *ret, char *ret_err)
{
        struct exec_stream s = { .out.max = max_output, .err.max = max_output };
        struct exec_io io = { .sink = detach ? NULL : exec_sink, .ud = &s, .detach = detach };
        int r;

        r = exec_run_io(d, ref, argv, env, cwd, user, timeout_ms, &io, &ret->exit_code,
                        &ret->timed_out, ret_err);
        if (r < 0)
                goto out;
        ret->out_truncated = s.out.truncated;
        ret->err_truncated = s.err.truncated;
        if ((r = http_buf_steal(&s.out, &ret->out, &ret->out_len)) < 0 ||
            (r = http_buf_steal(&s.err, &ret->err, &ret->err_len)) < 0)
                goto out;
        r = 0;
out:
        http_buf_release(&s.out);
        http_buf_release(&s.err);
        return r;
}

/* "1000" or "1000:1000": the ids, so the stdin file can be owned by the
 * user without a chown exec. Returns false for names. */
static bool user_numeric(const char *user, unsigned long *uid, unsigned long *gid)
{
        char *end;

        *uid = strtoul(user, &end, 10);
        if (end == user || (*end && *end != ':'))
                return false;
        *gid = 0;
        if (*end == ':') {
                const char *g = end + 1;

                *gid = strtoul(g, &end, 10);
                if (end == g || *end)
                        return false;
        }
        return true;
}

/* Copy spec's stdin into the sandbox as path (STDIN_DIR/.sb-stdin-<rand>),
 * owned by spec->user: numeric users through the tar header, names by a
 * chown exec as root. */
static int stdin_stage(struct docker *d, const char *ref, const struct exec_spec *spec,
                       char *path, size_t size, char *ret_err)
{
        char rnd[33], name[64];
        unsigned long uid = 0, gid = 0;
        bool named = spec->user && spec->user[0] && !user_numeric(spec->user, &uid, &gid);
        void *tar = NULL;
        size_t tar_len = 0;
        int r;

        r = timeutil_random_id(rnd, sizeof(rnd));
        if (r < 0)
                goto out;
        snprintf(name, sizeof(name), ".sb-stdin-%.16s", rnd);
        snprintf(path, size, STDIN_DIR "/%s", name);
        r = tarball_pack_file(name, spec->stdin_data, spec->stdin_len, 0600, (uid_t)uid,
                              (gid_t)gid, &tar, &tar_len);
        if (r < 0) {
                provider_errf(ret_err, "docker: exec stdin: cannot pack it");
                goto out;
        }
        r = archive_put(d, ref, STDIN_DIR, tar, tar_len, ret_err);
        if (r < 0 || !named)
                goto out;
        {
                const char *argv[] = { "chown", "--", spec->user, path, NULL };
                struct exec_result cr = { 0 };

                r = exec_run(d, ref, argv, NULL, NULL, NULL, d->timeout_ms, 1024, false, &cr, ret_err);
                if (r == 0 && cr.exit_code != 0) {
                        provider_errf(ret_err, "docker: exec stdin: chown to %s failed: %.120s",
                                   spec->user, cr.err ? cr.err : "");
                        r = -EIO;
                }
                exec_result_free(&cr);
        }
out:
        free(tar);
        return r;
}

/* Best-effort removal of a staged stdin file the wrapper never reached. */
static void stdin_unstage(struct docker *d, const char *ref, const char *path)
{
        const char *argv[] = { "rm", "-f", "--", path, NULL };
        struct exec_result rr = { 0 };

        exec_run(d, ref, argv, NULL, NULL, NULL, d->timeout_ms, 0, false, &rr, NULL);
        exec_result_free(&rr);
}

/* Output of exec_stream: demultiplexed straight to the caller. */
static int stream_piece(void *ud, int stream, const void *p, size_t n)
{
        const struct exec_stream_cb *cb = ud;

        return cb->on_output(cb->ud, stream, p, n);
}

struct stream_state {
        struct docker_demux dm;
        const struct exec_stream_cb *cb;
};

static int stream_sink(void *ud, const void *data, size_t len)
{
        struct stream_state *st = ud;

        return docker_demux_feed_fn(&st->dm, data, len, stream_piece, (void *)st->cb);
}

static int stream_tick(void *ud)
{
        struct stream_state *st = ud;

        return st->cb->on_tick ? st->cb->on_tick(st->cb->ud) : 0;
}

/* exec: argv runs as `timeout -s KILL <secs> argv...` so the command dies at
 * timeout_ms even if we stop reading; the transfer is bounded too. coreutils'
 * timeout kills the command's whole process group at once; busybox's polls
 * once a second and kills only its direct child. timed_out
 * is set when the wrapper killed it (137 after at least timeout_ms) or the
 * transfer outlived the timeout. A detached command has no wrapper (its
 * timeout bounds the start only). With cb, the output is streamed to it
 * (exec_stream) instead of buffered into ret. */
static int exec_common(struct docker *d, const char *ref, const struct exec_spec *spec,
                       const struct exec_stream_cb *cb, struct exec_result *ret, char *ret_err)
{
        const char **argv = NULL;
        char secs[32], stdin_path[128] = "";
        size_t n = 0, i = 0;
        bool detach = spec->detach && !cb;
        int64_t t0;
        int r = -EINVAL;

        memset(ret, 0, sizeof(*ret));
        ret->exit_code = -1;
        if (!spec->argv || !spec->argv[0] || spec->timeout_ms <= 0 || (cb && !cb->on_output)) {
                provider_errf(ret_err, "docker: exec: argv and a positive timeout are required");
                goto out;
        }
        while (spec->argv[n])
                n++;
        argv = calloc(n + 9, sizeof(*argv));
        if (!argv) {
                r = -ENOMEM;
                provider_errf(ret_err, "docker: exec: out of memory");
                goto out;
        }
        if (spec->stdin_data) {
                r = stdin_stage(d, ref, spec, stdin_path, sizeof(stdin_path), ret_err);
                if (r < 0)
                        goto out;
        }
        /* Fractional seconds: coreutils honours them to the ms; busybox
         * accepts them but works in whole seconds. */
        snprintf(secs, sizeof(secs), "%d.%03d", spec->timeout_ms / 1000, spec->timeout_ms % 1000);
        if (!detach) {
                argv[i++] = "timeout";
                argv[i++] = "-s";
                argv[i++] = "KILL";
                argv[i++] = secs;
        }
        if (stdin_path[0]) {
                argv[i++] = "sh";
                argv[i++] = "-c";
                argv[i++] = STDIN_SCRIPT;
                argv[i++] = stdin_path;
        }
        memcpy(argv + i, spec->argv, n * sizeof(*argv));

        t0 = timeutil_mono_ms();
        if (cb) {
                struct stream_state st = { .cb = cb };
                struct exec_io io = { .sink = stream_sink, .tick = stream_tick, .ud = &st };

                r = exec_run_io(d, ref, argv, spec->env, spec->cwd, spec->user, spec->timeout_ms,
                                &io, &ret->exit_code, &ret->timed_out, ret_err);
                if (r == 0 && !ret->timed_out && !docker_demux_complete(&st.dm)) {
                        provider_errf(ret_err, "docker: exec: output stream ended inside a frame");
                        r = -EIO;
                }
        } else {
                r = exec_run(d, ref, argv, spec->env, spec->cwd, spec->user, spec->timeout_ms,
                             spec->max_output, detach, ret, ret_err);
        }
        if (r < 0)
                goto out;
        /* 137 is also an OOM kill: only count it near the deadline. busybox
         * timeout counts whole seconds (1.5 s fires after ~1 s), hence the
         * second of slack. */
        if (ret->exit_code == DOCKER_TIMEOUT_KILLED &&
            timeutil_mono_ms() - t0 >= (int64_t)spec->timeout_ms - 1000)
                ret->timed_out = true;
out:
        if (r < 0) {
                if (stdin_path[0])
                        stdin_unstage(d, ref, stdin_path);
                exec_result_free(ret);
                ret->exit_code = -1;
        }
        free(argv);
        return r;
}

/* The run directory of ref's agent when commands go through it: a
 * container made with the agent has one; one made before (or without)
 * keeps `docker exec`. */
static bool agent_dir_for(struct docker *d, const char *ref, char *dir, size_t size)
{
        return d->agent.exec && docker_agent_run_dir(&d->agent, ref, dir, size) == 0;
}

/* An agent that cannot be reached is this sandbox's failure, not Docker's:
 * -ECONNREFUSED would read "the provider is unreachable" and -ENOENT "the
 * sandbox is gone"; both are -EIO with the agent's reason (a planted link,
 * a dead listener, no socket). */
static int agent_errno(int r)
{
        return r == -ECONNREFUSED || r == -ENOENT ? -EIO : r;
}

static int docker_exec(struct provider *p, const char *ref, const struct exec_spec *spec,
                       struct exec_result *ret, char *ret_err)
{
        char dir[256];

        if (agent_dir_for(impl(p), ref, dir, sizeof(dir)))
                return agent_errno(agent_exec(dir, spec, ret, ret_err));
        return exec_common(impl(p), ref, spec, NULL, ret, ret_err);
}

static int docker_exec_stream(struct provider *p, const char *ref, const struct exec_spec *spec,
                              const struct exec_stream_cb *cb, struct exec_result *ret,
                              char *ret_err)
{
        char dir[256];

        if (agent_dir_for(impl(p), ref, dir, sizeof(dir)))
                return agent_errno(agent_exec_stream(dir, spec, cb, ret, ret_err));
        return exec_common(impl(p), ref, spec, cb, ret, ret_err);
}

/* ---- files, through the agent ---- */

/* A file call's errno: the agent client says -ENOENT both for "no such
 * file" (its 404) and for "no socket" (agent_connect), and -ECONNREFUSED
 * for a dead or planted socket. Only the first is the file's; the others
 * are this sandbox's failure (-EIO, as agent_errno), told apart by the
 * connect's message. */
static int agent_file_errno(int r, const char *err)
{
        static const char unreachable[] = "sandbox agent unreachable";

        if (r == -ECONNREFUSED)
                return -EIO;
        if (r == -ENOENT && strncmp(err, unreachable, sizeof(unreachable) - 1) == 0)
                return -EIO;
        return r;
}

static int docker_read_file(struct provider *p, const char *ref, const char *path,
                            int64_t offset, int64_t len, const struct file_read_cb *cb,
                            int timeout_ms, char *ret_err)
{
        char dir[256], err[PROVIDER_ERR_MAX] = "";
        int r;

        if (!agent_dir_for(impl(p), ref, dir, sizeof(dir))) {
                provider_errf(ret_err, "docker: no sandbox agent in %.64s", ref);
                return -EOPNOTSUPP;
        }
        r = agent_read_file_fd(dir, path, offset, len, cb, timeout_ms, err);
        if (r < 0)
                provider_errf(ret_err, "%s", err);
        return agent_file_errno(r, err);
}

static int docker_write_file(struct provider *p, const char *ref, const char *path,
                             const void *data, size_t len, int mode, int64_t uid, int64_t gid,
                             bool append, int timeout_ms, char *ret_err)
{
        char dir[256], err[PROVIDER_ERR_MAX] = "";
        int r;

        if (!agent_dir_for(impl(p), ref, dir, sizeof(dir))) {
                provider_errf(ret_err, "docker: no sandbox agent in %.64s", ref);
                return -EOPNOTSUPP;
        }
        r = agent_write_file(dir, path, data, len, mode, uid, gid, append, timeout_ms, err);
        if (r < 0)
                provider_errf(ret_err, "%s", err);
        return agent_file_errno(r, err);
}

/* ---- ingress ---- */

/* The run directory is AGENT_DIR/<container id> (docker_agent.h). */
static int docker_agent_dir_name(struct provider *p, const char *ref, char *buf, size_t size,
                                 char *ret_err)
{
        struct docker *d = impl(p);
        char dir[256];

        if (!d->agent.bin[0] || docker_agent_run_dir(&d->agent, ref, dir, sizeof(dir)) < 0) {
                provider_errf(ret_err, "docker: no sandbox agent in %.64s", ref);
                return -EOPNOTSUPP;
        }
        if ((size_t)snprintf(buf, size, "%s", ref) >= size)
                return -ENAMETOOLONG;
        return 0;
}

/* ---- events ---- */

#define EVENT_LINE_MAX (64 * 1024)    /* one event; Docker's are < 2 KiB */
#define EVENT_STREAM_MS (3600 * 1000) /* one request; then the caller follows again */

struct watch {
        struct linebuf lb;
        const char *prefix;
        void (*on_event)(void *ud, const struct sandbox_event *ev);
        bool (*stop)(void *ud);
        void *ud;
};

static int watch_line(void *ud, const char *line, size_t len)
{
        struct watch *w = ud;
        struct sandbox_event ev;

        /* a piece of an over-long line (linebuf cuts them) parses as
         * garbage and is skipped like any other non-event */
        if (docker_json_parse_event(line, len, &ev) == 1 && ev.info.sandbox_id[0] &&
            !strcmp(ev.info.prefix, w->prefix))
                w->on_event(w->ud, &ev);
        return 0;
}

static int watch_sink(void *ud, const void *data, size_t len)
{
        struct watch *w = ud;

        return linebuf_feed(&w->lb, data, len, watch_line, w);
}

static int watch_tick(void *ud)
{
        struct watch *w = ud;

        return w->stop(w->ud) ? -ECANCELED : 0;
}

/* GET /events, filtered by Docker to our containers' "die", "pause",
 * "unpause" and "oom": one JSON object per line, streamed for as long as the
 * request lives. */
static int docker_watch_events(struct provider *p, const char *prefix,
                               void (*on_event)(void *ud, const struct sandbox_event *ev),
                               bool (*stop)(void *ud), void *ud, char *ret_err)
{
        struct docker *d = impl(p);
        struct watch w = { .lb.max = EVENT_LINE_MAX, .prefix = prefix, .on_event = on_event,
                           .stop = stop, .ud = ud };
        struct http_buf resp = { 0 };
        char filters[512], *path = NULL;
        long status = 0;
        int r;

        snprintf(filters, sizeof(filters),
                 "{\"type\":[\"container\"],\"event\":[\"die\",\"pause\",\"unpause\",\"oom\"],"
                 "\"label\":[\"%s=1\"]}",
                 PROVIDER_LABEL_MANAGED);
        path = path_fmt("/events?filters=%s", filters, NULL);
        struct docker_request req = {
                .method = "GET",
                .path = path,
                .timeout_ms = EVENT_STREAM_MS,
                .max_resp = DOCKER_RESP_MAX,
                .sink = watch_sink,
                .sink_ud = &w,
                .tick = watch_tick,
                .tick_ud = &w,
        };
        r = path ? docker_api_request(d->api, &req, &status, &resp, ret_err) : -ENOMEM;
        if (r == -ECANCELED) {
                r = 0; /* stop() said so */
        } else if (r == 0 && (r = docker_api_status_errno(status)) < 0) {
                docker_json_error_message("events", status, resp.data, ret_err);
        } else if (r == 0) {
                provider_errf(ret_err, "docker: events: the stream ended");
                r = -EPIPE; /* follow again */
        }
        linebuf_release(&w.lb);
        http_buf_release(&resp);
        free(path);
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

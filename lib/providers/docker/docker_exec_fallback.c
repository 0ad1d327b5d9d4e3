/* docker_exec_fallback: a command through `docker exec` (Engine API exec
 * create, start, inspect), for a sandbox without an agent or with
 * EXEC_TRANSPORT=docker: under `timeout -s KILL`, its multiplexed output
 * buffered or streamed, stdin staged as a file in the sandbox. */
#include "providers/docker/docker_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "providers/docker/docker_json.h"
#include "codec/tarball.h"
#include "core/timeutil.h"

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
        path = docker_path_fmt("/containers/%s/exec", ref, NULL);
        r = docker_call(d, "POST", path, body, d->timeout_ms, DOCKER_RESP_MAX, &resp, "exec", ret_err);
        if (r < 0)
                goto out;
        r = docker_json_parse_id(resp.data, id, sizeof(id));
        http_buf_release(&resp);
        if (r < 0) {
                provider_errf(ret_err, "docker: exec: answer without an exec id");
                goto out;
        }

        free(path);
        path = docker_path_fmt("/exec/%s/start", id, NULL);
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
                path = docker_path_fmt("/exec/%s/json", id, NULL);
                /* The stream can close a moment before Docker records the
                 * exit code: poll briefly while it says Running. */
                for (int i = 0; i < 100; i++) {
                        bool running = false;

                        r = docker_call(d, "GET", path, NULL, d->timeout_ms, DOCKER_RESP_MAX, &resp,
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
        r = docker_archive_put(d, ref, STDIN_DIR, tar, tar_len, ret_err);
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
int docker_exec_fallback(struct docker *d, const char *ref, const struct exec_spec *spec,
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

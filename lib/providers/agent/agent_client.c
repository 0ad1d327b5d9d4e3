/* agent_client: the calls of sandbox-agent's client (agent_client.h):
 * exec (buffered or streamed, or an entrypoint started), file reads (into
 * memory, to a callback, or the socket handed over) and writes, and
 * health; each one request made and answered through agent_call.h. */
#include "providers/agent/agent_client.h"
#include "providers/agent/agent_call.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/timeutil.h"

/* ---- exec ---- */

struct exec_sink {
        struct http_buf out, err;
        const struct exec_stream_cb *cb;
};

static int exec_on_output(void *ud, int stream, const char *p, size_t n)
{
        struct exec_sink *s = ud;

        if (s->cb)
                return s->cb->on_output(s->cb->ud, stream, p, n);
        return http_buf_append(stream == 2 ? &s->err : &s->out, p, n);
}

static int exec_tick(void *ud)
{
        struct exec_sink *s = ud;

        return s->cb->on_tick(s->cb->ud);
}

static int exec_request(struct agent_req *q, const struct exec_spec *spec, bool detach)
{
        const struct exec_record *rec = spec->record;
        const char *const *argv = rec ? rec->argv : spec->argv;
        const char *cwd = rec ? rec->cwd : spec->cwd;
        int timeout_ms = rec ? rec->timeout_ms : spec->timeout_ms;
        bool entry = detach && spec->entrypoint;
        int r = agent_req_start(q, "POST", entry ? "/entrypoint" : "/exec");

        /* the agent keeps the state files itself: no runner script */
        for (size_t i = 0; r == 0 && argv[i]; i++)
                r = agent_req_param(q, "arg", argv[i]);
        if (r == 0 && rec)
                r = agent_req_param(q, "record", rec->path);
        if (r == 0 && rec && rec->shell)
                r = agent_req_param(q, "shell", "1");
        for (size_t i = 0; r == 0 && spec->env && spec->env[i]; i++)
                r = agent_req_param(q, "env", spec->env[i]);
        if (r == 0 && cwd)
                r = agent_req_param(q, "cwd", cwd);
        if (r == 0 && spec->user)
                r = agent_req_param(q, "user", spec->user);
        if (r == 0 && timeout_ms > 0 && !entry) /* an entrypoint runs for the sandbox's life */
                r = agent_req_param_i64(q, "timeout_ms", timeout_ms);
        if (r == 0 && spec->env_file)
                r = agent_req_param(q, "envfile", "1");
        if (r == 0 && spec->seat)
                r = agent_req_param(q, "seat", "1");
        if (r == 0 && spec->kill_on_hangup && !detach)
                r = agent_req_param(q, "hangup_kill", "1");
        if (r == 0 && detach && !entry)
                r = agent_req_param(q, "detach", "1");
        if (r == 0)
                r = agent_req_end(q, spec->stdin_data ? spec->stdin_len : 0);
        return r;
}

static int exec_common(const char *dir, const struct exec_spec *spec,
                       const struct exec_stream_cb *cb, struct exec_result *ret, char *ret_err)
{
        struct exec_sink s = { .out.max = spec->max_output, .err.max = spec->max_output, .cb = cb };
        struct agent_proto_cb pcb = { .on_output = exec_on_output, .ud = &s };
        struct agent_call c = { .what = "exec" };
        bool detach = spec->detach && !cb;
        int64_t wait_ms;
        int r;

        memset(ret, 0, sizeof(*ret));
        ret->exit_code = -1;
        if (!spec->argv || !spec->argv[0] || (cb && !cb->on_output) ||
            (spec->record && (!spec->record->argv || !spec->record->argv[0] || !spec->record->path))) {
                provider_errf(ret_err, "sandbox agent: exec: an argv is required");
                return -EINVAL;
        }
        if ((r = exec_request(&c.req, spec, detach)) < 0) {
                r = agent_req_error(r, "exec", ret_err);
                goto out;
        }
        c.body = spec->stdin_data;
        c.body_len = spec->stdin_data ? spec->stdin_len : 0;
        if (detach)
                wait_ms = AGENT_HEAD_TIMEOUT_MS;
        else if (spec->record && spec->record->timeout_ms > 0)
                wait_ms = min64((int64_t)spec->record->timeout_ms + AGENT_EXEC_GRACE_MS,
                                AGENT_EXEC_MAX_MS);
        else if (spec->timeout_ms > 0)
                wait_ms = min64((int64_t)spec->timeout_ms + AGENT_EXEC_GRACE_MS, AGENT_EXEC_MAX_MS);
        else
                wait_ms = AGENT_EXEC_MAX_MS;
        c.deadline = timeutil_mono_ms() + wait_ms;
        c.soft_deadline = !detach;
        if (cb && cb->on_tick) {
                c.on_tick = exec_tick;
                c.tick_ud = &s;
        }
        agent_proto_init(&c.proto, true, &pcb);

        if ((r = agent_call_run(dir, &c, ret_err)) < 0)
                goto out;
        if (!agent_call_ok(&c)) {
                r = agent_call_status_error(&c, false, ret_err);
                /* 409: it has one (exec.c), started by an earlier call */
                if (detach && spec->entrypoint && c.proto.status == 409)
                        r = -EALREADY;
                goto out;
        }
        if (c.deadline_hit) {
                /* The agent kills at timeout_ms: past the grace it is
                 * stuck (or the sandbox frozen). Report what we have. */
                ret->timed_out = true;
        } else {
                ret->exit_code = c.proto.exit_code;
                ret->timed_out = c.proto.timed_out;
        }
        if (!cb) {
                ret->out_truncated = s.out.truncated;
                ret->err_truncated = s.err.truncated;
                if ((r = http_buf_steal(&s.out, &ret->out, &ret->out_len)) < 0 ||
                    (r = http_buf_steal(&s.err, &ret->err, &ret->err_len)) < 0) {
                        provider_errf(ret_err, "sandbox agent: exec: out of memory");
                        goto out;
                }
        }
        r = 0;
out:
        if (r < 0) {
                exec_result_free(ret);
                ret->exit_code = -1;
        }
        http_buf_release(&s.out);
        http_buf_release(&s.err);
        agent_call_release(&c);
        return r;
}

int agent_exec(const char *dir, const struct exec_spec *spec, struct exec_result *ret, char *ret_err)
{
        return exec_common(dir, spec, NULL, ret, ret_err);
}

int agent_exec_stream(const char *dir, const struct exec_spec *spec,
                      const struct exec_stream_cb *cb, struct exec_result *ret, char *ret_err)
{
        if (!cb) {
                provider_errf(ret_err, "sandbox agent: exec: no callbacks");
                return -EINVAL;
        }
        return exec_common(dir, spec, cb, ret, ret_err);
}

/* ---- files ---- */

/* Run a built file request c (its body, if any, set) within timeout_ms,
 * the answer's body to pcb (may be NULL); a non-2xx answer is the call's
 * error (file mapping of status_error). */
static int file_call(const char *dir, struct agent_call *c, const struct agent_proto_cb *pcb,
                     int timeout_ms, char *ret_err)
{
        int r;

        c->deadline = agent_deadline_after(timeout_ms);
        agent_proto_init(&c->proto, false, pcb);
        r = agent_call_run(dir, c, ret_err);
        if (r == 0 && !agent_call_ok(c))
                r = agent_call_status_error(c, true, ret_err);
        return r;
}

static int file_read(const char *dir, const char *path, int64_t offset, int64_t want,
                     const struct agent_proto_cb *pcb, const struct agent_proto **ret_proto,
                     ssize_t (*on_fd)(void *ud, int fd, size_t max), void *fd_ud, int timeout_ms,
                     char *ret_err)
{
        struct agent_call c = { .what = "read", .recv_size = want >= 0 && want <= RECV_BUF ? 0 : RECV_BUF_FILE,
                          .on_fd = on_fd, .fd_ud = fd_ud };
        int r;

        if (!path || offset < 0) {
                provider_errf(ret_err,
                              "sandbox agent: read: a path and an offset >= 0 are required");
                return -EINVAL;
        }
        r = agent_req_start(&c.req, "GET", "/file");
        if (r == 0)
                r = agent_req_param(&c.req, "path", path);
        if (r == 0 && offset > 0)
                r = agent_req_param_i64(&c.req, "offset", offset);
        if (r == 0 && want >= 0)
                r = agent_req_param_i64(&c.req, "length", want);
        if (r == 0)
                r = agent_req_end(&c.req, 0);
        if (r < 0) {
                r = agent_req_error(r, "read", ret_err);
                goto out;
        }
        if (ret_proto)
                *ret_proto = &c.proto;
        r = file_call(dir, &c, pcb, timeout_ms, ret_err);
out:
        agent_call_release(&c);
        return r;
}

struct read_sink {
        struct http_buf b;
        size_t max;
};

static int read_on_body(void *ud, const char *p, size_t n)
{
        struct read_sink *s = ud;

        if (n > s->max - s->b.len)
                return -EFBIG;
        return http_buf_append(&s->b, p, n);
}

int agent_read_file(const char *dir, const char *path, int64_t offset, int64_t len, size_t max_len,
                    void **ret_data, size_t *ret_len, int timeout_ms, char *ret_err)
{
        struct read_sink s = { .b.max = max_len, .max = max_len };
        struct agent_proto_cb pcb = { .on_body = read_on_body, .ud = &s };
        int64_t want, cap = max_len < (size_t)INT64_MAX ? (int64_t)max_len + 1 : INT64_MAX;
        char *data = NULL;
        int r;

        *ret_data = NULL;
        *ret_len = 0;
        /* Ask for one byte past the cap: a longer file is then -EFBIG
         * without the agent sending it all. */
        want = len < 0 ? cap : min64(len, cap);
        r = file_read(dir, path, offset, want, &pcb, NULL, NULL, NULL, timeout_ms, ret_err);
        if (r == -EFBIG)
                provider_errf(ret_err, "sandbox agent: read: over %zu bytes", max_len);
        if (r < 0)
                goto out;
        if ((r = http_buf_steal(&s.b, &data, ret_len)) < 0) {
                provider_errf(ret_err, "sandbox agent: read: out of memory");
                goto out;
        }
        *ret_data = data;
out:
        http_buf_release(&s.b);
        return r;
}

/* agent_read_file_fd's sink: the answer's Content-Length, once, before the
 * first bytes (on_data(ud, NULL, n)), so that a download can send its
 * headers and stream; a chunked or unframed answer announces nothing. */
struct size_sink {
        const struct file_read_cb *cb;
        const struct agent_proto *proto;
        bool announced;
};

static int size_announce(struct size_sink *s)
{
        if (s->announced)
                return 0;
        s->announced = true;
        /* remaining still counts the bytes about to be handed on */
        if (s->proto && s->proto->kind == AP_BODY_LENGTH && s->proto->remaining <= SIZE_MAX)
                return s->cb->on_data(s->cb->ud, NULL, (size_t)s->proto->remaining);
        return 0;
}

static int size_on_body(void *ud, const char *p, size_t n)
{
        struct size_sink *s = ud;
        int r;

        if ((r = size_announce(s)) < 0)
                return r;
        return s->cb->on_data(s->cb->ud, p, n);
}

static ssize_t size_on_fd(void *ud, int fd, size_t max)
{
        struct size_sink *s = ud;
        int r;

        if ((r = size_announce(s)) < 0)
                return r;
        return s->cb->on_fd(s->cb->ud, fd, max);
}

int agent_read_file_fd(const char *dir, const char *path, int64_t offset, int64_t len,
                       const struct file_read_cb *cb, int timeout_ms, char *ret_err)
{
        struct size_sink s = { .cb = cb };
        struct agent_proto_cb pcb = { .on_body = size_on_body, .ud = &s };

        if (!cb || !cb->on_data) {
                provider_errf(ret_err, "sandbox agent: read: no callbacks");
                return -EINVAL;
        }
        return file_read(dir, path, offset, len < 0 ? -1 : len, &pcb, &s.proto,
                         cb->on_fd ? size_on_fd : NULL, &s, timeout_ms, ret_err);
}

int agent_read_file_cb(const char *dir, const char *path, int64_t offset, int64_t len,
                       int (*on_data)(void *ud, const char *p, size_t n), void *ud, int timeout_ms,
                       char *ret_err)
{
        struct file_read_cb cb = { .on_data = on_data, .ud = ud };

        return agent_read_file_fd(dir, path, offset, len, &cb, timeout_ms, ret_err);
}

int agent_write_file(const char *dir, const char *path, const void *data, size_t len, int mode,
                     int64_t uid, int64_t gid, bool append, int timeout_ms, char *ret_err)
{
        struct agent_call c = { .what = "write" };
        char m[16], owner[48];
        int r;

        if (!path || mode > 07777 || (len && !data)) {
                provider_errf(ret_err,
                              "sandbox agent: write: a path and a mode <= 07777 are required");
                return -EINVAL;
        }
        r = agent_req_start(&c.req, "PUT", "/file");
        if (r == 0)
                r = agent_req_param(&c.req, "path", path);
        if (r == 0 && mode >= 0) {
                snprintf(m, sizeof(m), "%04o", (unsigned)mode);
                r = agent_req_param(&c.req, "mode", m);
        }
        if (r == 0 && uid >= 0 && gid >= 0) {
                snprintf(owner, sizeof(owner), "%" PRId64 ":%" PRId64, uid, gid);
                r = agent_req_param(&c.req, "owner", owner);
        }
        if (r == 0 && append)
                r = agent_req_param(&c.req, "append", "1");
        if (r == 0)
                r = agent_req_end(&c.req, len);
        if (r < 0) {
                r = agent_req_error(r, "write", ret_err);
                goto out;
        }
        c.body = data;
        c.body_len = len;
        r = file_call(dir, &c, NULL, timeout_ms, ret_err);
out:
        agent_call_release(&c);
        return r;
}

/* ---- health ---- */

static int health_on_body(void *ud, const char *p, size_t n)
{
        struct http_buf *b = ud;

        if (n > AGENT_HEALTH_MAX - b->len)
                return -EFBIG;
        return http_buf_append(b, p, n);
}

int agent_health(const char *dir, struct agent_health *ret, int timeout_ms, char *ret_err)
{
        struct http_buf b = { .max = AGENT_HEALTH_MAX };
        struct agent_proto_cb pcb = { .on_body = health_on_body, .ud = &b };
        struct agent_call c = { .what = "health" };
        int r;

        r = agent_req_start(&c.req, "GET", "/health");
        if (r == 0)
                r = agent_req_end(&c.req, 0);
        if (r < 0) {
                r = agent_req_error(r, "health", ret_err);
                goto out;
        }
        c.deadline = agent_deadline_after(timeout_ms);
        agent_proto_init(&c.proto, false, &pcb);
        r = agent_call_run(dir, &c, ret_err);
        if (r == -EFBIG) {
                provider_errf(ret_err, "sandbox agent: health: answer over %d bytes",
                              AGENT_HEALTH_MAX);
                r = -EIO;
        }
        if (r < 0)
                goto out;
        if (c.proto.status != 200) {
                r = agent_call_status_error(&c, false, ret_err);
                goto out;
        }
        if (agent_health_parse(b.data ? b.data : "", b.len, ret) < 0) {
                provider_errf(ret_err, "sandbox agent: malformed answer to health");
                r = -EIO;
                goto out;
        }
        r = 0;
out:
        http_buf_release(&b);
        agent_call_release(&c);
        return r;
}

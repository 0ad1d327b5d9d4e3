/* h_sandboxes: the runtime API of agent plugins (docs/API.md, "Runtime API"):
 * exec, file read/write, start, stop and delete of the sandbox a lease holds,
 * and the exec records of commands run with an execId (exec_tracked.h).
 *
 * The lease is the capability: every call names it in X-Lease-ID, and a
 * lease that does not hold the sandbox in the path gets 404, exactly as an
 * unknown sandbox would. Commands and files run as the lease's Linux user,
 * so the kernel's permissions separate the users of a shared sandbox. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/base64.h"
#include "sandbox/exec_tracked.h"
#include "core/json_input.h"
#include "store/lease.h"
#include "core/log.h"
#include "core/metrics.h"
#include "routes.h"
#include "sandbox/sandbox.h"
#include "sandbox/sandbox_control.h"
#include "sandbox/sandbox_path.h"
#include "core/timeutil.h"
#include "codec/utf8.h"

#define EXEC_MAX_ARGS 256
#define EXEC_MAX_ENV 64

struct sbx {
        char lease_id[33];
        struct sandbox_access a;
};

/* Resolve X-Lease-ID and the path's sandbox; replies and returns -1 on error.
 * need_running: the sandbox must be Running (exec, files). */
static int sbx_open(struct request *req, struct sbx *x, int need_running)
{
        const char *lid = FCGX_GetParam("HTTP_X_LEASE_ID", req->fcgx->envp);
        int r;

        if (!req->w->provider) {
                reply_error(req, API_NOT_FOUND, "this broker runs without a sandbox provider");
                return -1;
        }
        if (!lid || !timeutil_id_valid(lid)) {
                reply_error(req, API_INVALID_REQUEST,
                            "the X-Lease-ID header must carry the lease id (32 lowercase hex characters)");
                return -1;
        }
        snprintf(x->lease_id, sizeof(x->lease_id), "%s", lid);
        if (!timeutil_id_valid(req->path_arg)) {
                reply_error(req, API_SANDBOX_NOT_FOUND, "no sandbox %s", req->path_arg);
                return -1;
        }
        r = sandbox_access(req->w->redis, req->w->cfg, req->auth.tenant, x->lease_id, req->path_arg,
                           &x->a);
        if (r == -ENOENT) {
                reply_error(req, API_SANDBOX_NOT_FOUND, "no sandbox %s for this lease", req->path_arg);
                return -1;
        }
        if (r < 0) {
                reply_errno(req, r, "sandbox lookup");
                return -1;
        }
        if (need_running && strcmp(x->a.state, "Running") != 0) {
                reply_error(req, API_SANDBOX_NOT_RUNNING, "sandbox %s is %s", req->path_arg, x->a.state);
                return -1;
        }
        return 0;
}

static const struct log_kv *sbx_kv(struct request *req, const struct sbx *x)
{
        /* thread-local on purpose: the fields of the log line being written
         * now, pointing into req and x; nothing in it outlives that line */
        static __thread struct log_kv kv[5];

        kv[0] = (struct log_kv){ "SANDBOX_ID", req->path_arg };
        kv[1] = (struct log_kv){ "LEASE_ID", x->lease_id };
        kv[2] = (struct log_kv){ "USER_ID", x->a.user_id };
        kv[3] = (struct log_kv){ "REQUEST_ID", req->request_id };
        kv[4] = (struct log_kv){ NULL, NULL };
        return kv;
}

/* A provider failure as an API error (provider_api_error: the mapping of
 * every route), logged once, here. */
static void reply_provider(struct request *req, const struct sbx *x, int r, const char *what,
                           const char *err)
{
        char msg[PROVIDER_ERR_MAX + 128];
        enum api_error e = provider_api_error(r, what, err, msg, sizeof(msg));

        log_err(sbx_kv(req, x), "%s failed: %s (%s)", what, err ? err : "", strerror(-r));
        reply_error(req, e, "%s", msg);
}

static void add_output(struct json_object *o, const char *name, const char *data, size_t len)
{
        char *clean = NULL;
        size_t n = 0;

        if (utf8_sanitize(data ? data : "", data ? len : 0, &clean, &n) == 0)
                json_object_object_add(o, name, json_object_new_string_len(clean, (int)n));
        free(clean);
}

/* Parse {cmd, cwd?, env?, timeoutMs?} into spec; argv/env storage in the
 * caller's arrays (borrowing from body). Replies and returns -1 on error. */
static int exec_parse(struct request *req, struct json_object *body, const struct sbx *x,
                      const char **argv, const char **env, char (*env_buf)[1024], char *cwd,
                      struct exec_spec *spec)
{
        struct json_object *cmd, *v;
        char why[128];
        int n = 0;

        if (!json_object_object_get_ex(body, "cmd", &cmd)) {
                reply_error(req, API_INVALID_REQUEST, "cmd is required");
                return -1;
        }
        if (json_object_is_type(cmd, json_type_string)) {
                if (json_object_get_string_len(cmd) == 0) {
                        reply_error(req, API_INVALID_REQUEST, "cmd must not be empty");
                        return -1;
                }
                argv[n++] = "sh";
                argv[n++] = "-c";
                argv[n++] = json_object_get_string(cmd);
        } else if (json_object_is_type(cmd, json_type_array) && json_object_array_length(cmd) > 0 &&
                   json_object_array_length(cmd) < EXEC_MAX_ARGS) {
                for (size_t i = 0; i < json_object_array_length(cmd); i++) {
                        v = json_object_array_get_idx(cmd, i);
                        if (!json_object_is_type(v, json_type_string)) {
                                reply_error(req, API_INVALID_REQUEST, "cmd[%zu] must be a string", i);
                                return -1;
                        }
                        argv[n++] = json_object_get_string(v);
                }
        } else {
                reply_error(req, API_INVALID_REQUEST,
                            "cmd must be a string (run by sh -c) or an array of 1 to %d strings",
                            EXEC_MAX_ARGS - 1);
                return -1;
        }
        argv[n] = NULL;
        for (int i = 0; i < n; i++)
                if (strlen(argv[i]) == 0 && i == 0) {
                        reply_error(req, API_INVALID_REQUEST, "cmd[0] must not be empty");
                        return -1;
                }
        spec->argv = argv;
        spec->cwd = x->a.workdir;
        if (json_object_object_get_ex(body, "cwd", &v) && !json_object_is_type(v, json_type_null)) {
                if (!json_object_is_type(v, json_type_string) ||
                    sandbox_path_resolve(x->a.workdir, json_object_get_string(v), false, cwd,
                                         SANDBOX_PATH_MAX, why) < 0) {
                        reply_error(req, API_INVALID_REQUEST, "cwd: %s",
                                    json_object_is_type(v, json_type_string) ? why : "must be a string");
                        return -1;
                }
                spec->cwd = cwd;
        }
        n = 0;
        if (json_object_object_get_ex(body, "env", &v) && !json_object_is_type(v, json_type_null)) {
                if (!json_object_is_type(v, json_type_object) ||
                    json_object_object_length(v) > EXEC_MAX_ENV) {
                        reply_error(req, API_INVALID_REQUEST, "env must be an object of at most %d strings",
                                    EXEC_MAX_ENV);
                        return -1;
                }
                json_object_object_foreach(v, key, val) {
                        size_t klen = strlen(key), ok = klen > 0 && klen < 128 &&
                                                        !(key[0] >= '0' && key[0] <= '9');
                        for (size_t i = 0; ok && i < klen; i++)
                                ok = (key[i] >= 'A' && key[i] <= 'Z') || (key[i] >= 'a' && key[i] <= 'z') ||
                                     (key[i] >= '0' && key[i] <= '9') || key[i] == '_';
                        if (!ok || !json_object_is_type(val, json_type_string) ||
                            strlen(json_object_get_string(val)) != (size_t)json_object_get_string_len(val) ||
                            klen + 1 + strlen(json_object_get_string(val)) >= sizeof(env_buf[0])) {
                                reply_error(req, API_INVALID_REQUEST,
                                            "env: names are [A-Za-z_][A-Za-z0-9_]*, values strings under 1 KiB");
                                return -1;
                        }
                        snprintf(env_buf[n], sizeof(env_buf[0]), "%s=%s", key, json_object_get_string(val));
                        env[n] = env_buf[n];
                        n++;
                }
        }
        env[n] = NULL;
        spec->env = env;
        spec->timeout_ms = req->w->cfg->exec_timeout_ms;
        if (json_object_object_get_ex(body, "timeoutMs", &v) && !json_object_is_type(v, json_type_null)) {
                int64_t t = json_object_get_int64(v);
                if (!json_object_is_type(v, json_type_int) || t < 1 ||
                    t > req->w->cfg->exec_max_timeout_ms) {
                        reply_error(req, API_INVALID_REQUEST, "timeoutMs must be an integer from 1 to %d",
                                    req->w->cfg->exec_max_timeout_ms);
                        return -1;
                }
                spec->timeout_ms = (int)t;
        }
        spec->user = x->a.linux_user;
        spec->seat = x->a.seat;
        spec->max_output = (size_t)req->w->cfg->exec_max_output;
        return 0;
}

/* A command's result as the exec answer and a done exec record show it:
 * {exitCode, stdout, stderr, stdoutTruncated, stderrTruncated, timedOut,
 * durationMs}, added to o. */
static void exec_result_json(struct json_object *o, const struct exec_result *res, int64_t duration_ms)
{
        json_object_object_add(o, "exitCode", json_object_new_int(res->exit_code));
        add_output(o, "stdout", res->out, res->out_len);
        add_output(o, "stderr", res->err, res->err_len);
        json_object_object_add(o, "stdoutTruncated", json_object_new_boolean(res->out_truncated));
        json_object_object_add(o, "stderrTruncated", json_object_new_boolean(res->err_truncated));
        json_object_object_add(o, "timedOut", json_object_new_boolean(res->timed_out));
        json_object_object_add(o, "durationMs", json_object_new_int64(duration_ms));
}

static void exec_reply(struct request *req, const struct sbx *x, const struct exec_result *res,
                       int64_t duration_ms)
{
        struct json_object *o = json_object_new_object();

        exec_result_json(o, res, duration_ms);
        log_debug(sbx_kv(req, x), "exec: exit %d", res->exit_code);
        reply_json(req, 200, o);
        json_put(o);
}

/* The exec use-case (exec_tracked.h): with an execId its record is made
 * first (nothing runs when it cannot be) and its end recorded before the
 * answer is written, so a client that went away finds it with GET
 * .../exec/{execId}; without one the command just runs. */
static void exec_run(struct request *req, const struct sbx *x, const struct exec_spec *spec,
                     const char *exec_id)
{
        struct exec_store_key k = { .tenant = req->auth.tenant, .lease_id = x->lease_id,
                                    .sandbox_id = req->path_arg, .exec_id = exec_id };
        struct exec_tracked t;
        int r;

        r = exec_tracked_run(req->w->redis, req->w->provider, req->w->cfg, exec_id ? &k : NULL,
                             x->a.ref, spec, &t);
        if (r < 0) {
                reply_errno(req, r, "exec record");
                return;
        }
        switch (t.kind) {
        case EXEC_STORE_IN_USE:
                reply_error(req, API_EXEC_ID_IN_USE,
                            "this lease already ran or runs exec %s (it is not run again): "
                            "GET /v1/sandboxes/%s/exec/%s for its state or result",
                            exec_id, req->path_arg, exec_id);
                break;
        case EXEC_STORE_FULL:
                reply_error(req, API_TOO_MANY_EXECS,
                            "this lease already runs %lld commands with an execId (at most %d "
                            "records per lease); retry when one has finished",
                            t.running, req->w->cfg->exec_records_per_lease);
                break;
        case EXEC_STORE_CREATED:
                metrics_observe_ms(METRICS_SANDBOX_EXEC, t.duration_ms);
                if (t.store_r < 0)
                        log_warn(sbx_kv(req, x), "exec %s: its record was not written (%s): %s",
                                 exec_id, t.store_what, strerror(-t.store_r));
                else if (t.record_gone)
                        log_warn(sbx_kv(req, x), "exec %s: its record was gone at the end "
                                 "(expired, or the lease released)", exec_id);
                if (t.r < 0)
                        reply_provider(req, x, t.r, "exec", t.err);
                else
                        exec_reply(req, x, &t.res, t.duration_ms);
                break;
        default: /* the lease went away since sbx_open */
                reply_error(req, API_SANDBOX_NOT_FOUND, "no sandbox %s for this lease", req->path_arg);
        }
        exec_tracked_clear(&t);
}

void h_sbx_exec(struct request *req)
{
        struct {
                char env_buf[EXEC_MAX_ENV][1024];
                char cwd[SANDBOX_PATH_MAX];
        } *s = request_scratch(req, sizeof(*s));
        const char *argv[EXEC_MAX_ARGS + 3], *env[EXEC_MAX_ENV + 1];
        struct json_object *body = NULL;
        struct exec_spec spec = { 0 };
        const char *exec_id = NULL;
        char why[128];
        struct sbx x;

        if (!s)
                return;
        char (*env_buf)[1024] = s->env_buf, *cwd = s->cwd;
        if (sbx_open(req, &x, 1) < 0 || request_json_body(req, &body) < 0)
                goto out;
        if (exec_parse(req, body, &x, argv, env, env_buf, cwd, &spec) < 0)
                goto out;
        if (exec_store_id_from_json(body, &exec_id, why, sizeof(why)) < 0) {
                reply_error(req, API_INVALID_REQUEST, "%s", why);
                goto out;
        }
        exec_run(req, &x, &spec, exec_id);
out:
        json_put(body);
}

/* GET /v1/sandboxes/{id}/exec/{execId}: the record of a command this lease
 * ran with that execId (docs/API.md, "Exec records"). The sandbox need not
 * be Running: a record outlives a stop. */
void h_sbx_exec_get(struct request *req)
{
        const char *exec_id = req->path_arg2;
        struct exec_store_key k = { .tenant = req->auth.tenant, .sandbox_id = req->path_arg,
                                    .exec_id = exec_id };
        struct exec_store_outcome out = { 0 };
        struct json_object *o;
        struct sbx x;
        int r;

        if (!exec_store_id_valid(exec_id)) {
                reply_error(req, API_INVALID_REQUEST, "execId must be %d to %d characters [A-Za-z0-9_-]",
                            EXEC_STORE_ID_MIN, EXEC_STORE_ID_MAX);
                return;
        }
        if (sbx_open(req, &x, 0) < 0)
                return;
        k.lease_id = x.lease_id;
        r = exec_store_get(req->w->redis, &k, &out);
        if (r < 0) {
                reply_errno(req, r, "exec record");
                return;
        }
        if (out.kind == EXEC_STORE_NOT_FOUND) {
                reply_error(req, API_EXEC_NOT_FOUND,
                            "this lease has no exec %s (never started, or its record expired)", exec_id);
                goto out;
        }
        o = json_object_new_object();
        json_object_object_add(o, "execId", json_object_new_string(exec_id));
        if (out.kind == EXEC_STORE_RUNNING) {
                json_object_object_add(o, "state", json_object_new_string("running"));
                json_object_object_add(o, "startedAt", json_object_new_int64(out.started_at));
                add_output(o, "output", out.output, out.output_len);
                json_object_object_add(o, "outputBytes", json_object_new_int64(out.output_bytes));
        } else if (out.kind == EXEC_STORE_DONE) {
                json_object_object_add(o, "state", json_object_new_string("done"));
                json_object_object_add(o, "startedAt", json_object_new_int64(out.started_at));
                exec_result_json(o, &out.res, out.duration_ms);
        } else {
                json_object_object_add(o, "state", json_object_new_string("failed"));
                json_object_object_add(o, "startedAt", json_object_new_int64(out.started_at));
                add_output(o, "message", out.message, strlen(out.message));
        }
        reply_json(req, 200, o);
        json_put(o);
out:
        exec_store_outcome_clear(&out);
}

/* The path field of a file request, resolved for this lease. */
static int file_path(struct request *req, struct json_object *body, const struct sbx *x, char *path)
{
        struct json_object *v;
        char why[128];
        /* In a shared sandbox a lease's files are its workdir: the file API
         * never names another session's or user's files. */
        bool confine = strcmp(x->a.mode, "exclusive") != 0;

        if (!json_object_object_get_ex(body, "path", &v) || !json_object_is_type(v, json_type_string)) {
                reply_error(req, API_INVALID_REQUEST, "path is required and must be a string");
                return -1;
        }
        if ((size_t)json_object_get_string_len(v) != strlen(json_object_get_string(v)) ||
            sandbox_path_resolve(x->a.workdir, json_object_get_string(v), confine, path,
                                 SANDBOX_PATH_MAX, why) < 0) {
                reply_error(req, API_INVALID_REQUEST, "path: %s",
                            strlen(json_object_get_string(v)) != (size_t)json_object_get_string_len(v)
                                    ? "must not contain NUL" : why);
                return -1;
        }
        return 0;
}

/* Map a failed file command's stderr to an API error. */
static void reply_file_error(struct request *req, const char *path, const struct exec_result *res)
{
        const char *e = res->err ? res->err : "";

        if (strstr(e, "No such file") || strstr(e, "Not a directory"))
                reply_error(req, API_FILE_NOT_FOUND, "%s: no such file", path);
        else if (strstr(e, "Permission denied"))
                reply_error(req, API_PERMISSION_DENIED, "%s: permission denied", path);
        else if (strstr(e, "Is a directory"))
                reply_error(req, API_INVALID_REQUEST, "%s: is a directory", path);
        else
                reply_error(req, API_SANDBOX_FAILED, "%s: %.200s", path, e);
}

void h_sbx_file_read(struct request *req)
{
        char *path = request_scratch(req, SANDBOX_PATH_MAX);
        struct json_object *body = NULL, *o;
        struct exec_result res = { 0 };
        char err[PROVIDER_ERR_MAX] = "", *b64 = NULL;
        struct sbx x;
        int r;

        if (!path)
                return;
        if (sbx_open(req, &x, 1) < 0 || request_json_body(req, &body) < 0 ||
            file_path(req, body, &x, path) < 0)
                goto out;
        const char *argv[] = { "cat", "--", path, NULL };
        struct exec_spec spec = { .argv = argv, .user = x.a.linux_user, .cwd = x.a.workdir,
                                  .timeout_ms = req->w->cfg->exec_timeout_ms,
                                  .max_output = (size_t)req->w->cfg->file_max_bytes,
                                  .seat = x.a.seat };
        r = provider_exec(req->w->provider, x.a.ref, &spec, &res, err);
        if (r < 0) {
                reply_provider(req, &x, r, "file read", err);
                goto out;
        }
        if (res.exit_code != 0) {
                reply_file_error(req, path, &res);
                goto out;
        }
        if (res.out_truncated) {
                reply_error(req, API_FILE_TOO_LARGE, "%s is larger than %d bytes", path,
                            req->w->cfg->file_max_bytes);
                goto out;
        }
        if (base64_encode(res.out, res.out_len, &b64) < 0) {
                reply_error(req, API_INTERNAL, "out of memory");
                goto out;
        }
        o = json_object_new_object();
        json_object_object_add(o, "path", json_object_new_string(path));
        json_object_object_add(o, "size", json_object_new_int64((int64_t)res.out_len));
        json_object_object_add(o, "content", json_object_new_string(b64));
        reply_json(req, 200, o);
        json_put(o);
out:
        free(b64);
        exec_result_free(&res);
        json_put(body);
}

void h_sbx_file_write(struct request *req)
{
        char *path = request_scratch(req, SANDBOX_PATH_MAX);
        struct json_object *body = NULL, *v, *o;
        struct exec_result res = { 0 };
        char err[PROVIDER_ERR_MAX] = "";
        void *data = NULL;
        size_t len = 0;
        struct sbx x;
        int r;

        if (!path)
                return;
        if (sbx_open(req, &x, 1) < 0 || request_json_body(req, &body) < 0 ||
            file_path(req, body, &x, path) < 0)
                goto out;
        if (!json_object_object_get_ex(body, "content", &v) || !json_object_is_type(v, json_type_string)) {
                reply_error(req, API_INVALID_REQUEST, "content is required: the file's bytes in base64");
                goto out;
        }
        r = base64_decode(json_object_get_string(v), (size_t)json_object_get_string_len(v),
                          (size_t)req->w->cfg->file_max_bytes, &data, &len);
        if (r == -EFBIG) {
                reply_error(req, API_FILE_TOO_LARGE, "content is larger than %d bytes",
                            req->w->cfg->file_max_bytes);
                goto out;
        }
        if (r < 0) {
                reply_error(req, API_INVALID_REQUEST, "content must be standard base64 with padding");
                goto out;
        }
        /* Written by the lease's user, so its permissions apply; $1 keeps the
         * path out of the shell's parsing. */
        const char *argv[] = { "sh", "-c", "mkdir -p -- \"$(dirname -- \"$1\")\" && cat > \"$1\"",
                               "sh", path, NULL };
        struct exec_spec spec = { .argv = argv, .user = x.a.linux_user, .cwd = x.a.workdir,
                                  .timeout_ms = req->w->cfg->exec_timeout_ms, .max_output = 4096,
                                  .stdin_data = data, .stdin_len = len, .seat = x.a.seat };
        r = provider_exec(req->w->provider, x.a.ref, &spec, &res, err);
        if (r < 0) {
                reply_provider(req, &x, r, "file write", err);
                goto out;
        }
        if (res.exit_code != 0) {
                reply_file_error(req, path, &res);
                goto out;
        }
        o = json_object_new_object();
        json_object_object_add(o, "path", json_object_new_string(path));
        json_object_object_add(o, "size", json_object_new_int64((int64_t)len));
        reply_json(req, 200, o);
        json_put(o);
out:
        free(data);
        exec_result_free(&res);
        json_put(body);
}

static void reply_state(struct request *req, const char *state)
{
        struct json_object *o = json_object_new_object();

        json_object_object_add(o, "sandboxId", json_object_new_string(req->path_arg));
        json_object_object_add(o, "state", json_object_new_string(state));
        reply_json(req, 200, o);
        json_put(o);
}

/* start, stop: one use-case each (sandbox_control.h), its outcome mapped. */
static void control_reply(struct request *req, const struct sbx *x, int r,
                          const struct sandbox_control_outcome *out, const char *what,
                          const char *state, const char *done)
{
        if (r < 0) {
                reply_errno(req, r, what);
                return;
        }
        switch (out->kind) {
        case SANDBOX_CONTROL_REFUSED:
                reply_error(req, API_SANDBOX_NOT_RUNNING, "sandbox %s is %s and cannot be %s",
                            req->path_arg, out->state,
                            strcmp(what, "start") == 0 ? "started" : "stopped");
                return;
        case SANDBOX_CONTROL_RACED:
                reply_error(req, API_SANDBOX_NOT_RUNNING, "sandbox %s changed state; try again",
                            req->path_arg);
                return;
        case SANDBOX_CONTROL_PROVIDER:
                reply_provider(req, x, out->provider_r, what, out->err);
                return;
        case SANDBOX_CONTROL_DONE: log_info(sbx_kv(req, x), "%s", done); break;
        default: /* ALREADY */ break;
        }
        reply_state(req, state);
}

void h_sbx_start(struct request *req)
{
        struct sandbox_control_outcome out;
        struct sbx x;
        int r;

        if (sbx_open(req, &x, 0) < 0)
                return;
        r = sandbox_control_start(req->w->redis, req->w->provider, req->path_arg, x.a.state,
                                  x.a.ref, &out);
        control_reply(req, &x, r, &out, "start", "Running", "sandbox started by its lease holder");
}

void h_sbx_stop(struct request *req)
{
        struct sandbox_control_outcome out;
        struct sbx x;
        int r;

        if (sbx_open(req, &x, 0) < 0)
                return;
        r = sandbox_control_stop(req->w->redis, req->w->provider, req->path_arg, x.a.state, x.a.ref,
                                 &out);
        control_reply(req, &x, r, &out, "stop", "Stopped", "sandbox stopped by its lease holder");
}

void h_sbx_delete(struct request *req)
{
        struct sandbox_control_outcome out;
        struct sbx x;
        int r;

        /* One path, two APIs: a lease holder (X-Lease-ID) or an OpenSandbox
         * client (OPEN-SANDBOX-API-KEY). */
        if (!FCGX_GetParam("HTTP_X_LEASE_ID", req->fcgx->envp)) {
                h_osb_delete(req);
                return;
        }
        if (sbx_open(req, &x, 0) < 0)
                return;
        r = sandbox_control_delete(req->w->redis, req->w->cfg, req->auth.tenant, &x.a, &out);
        if (r < 0) {
                reply_errno(req, r, "delete");
                return;
        }
        if (out.kind == SANDBOX_CONTROL_SHARED) {
                reply_error(
                        req, API_CONFLICT,
                        "sandbox %s is shared with %d other lease(s); release your lease instead",
                        req->path_arg, out.others);
                return;
        }
        if (out.kind != SANDBOX_CONTROL_DONE) {
                reply_error(req, API_SANDBOX_NOT_FOUND, "no sandbox %s for this lease", req->path_arg);
                return;
        }
        log_info(sbx_kv(req, &x), "sandbox deleted by its lease holder; lease released");
        request_audit(req, (struct audit_event){ .type = AUDIT_SANDBOX_DELETED, .user_id = x.a.user_id,
                                                 .session_id = x.a.session_id,
                                                 .lease_id = x.lease_id, .sandbox_id = req->path_arg,
                                                 .reason = "deleted by its lease holder" });
        reply_empty(req, 204);
}

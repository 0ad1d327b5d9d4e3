/* h_execd_command: POST /command of the execd contract, served by the
 * broker (execd-api.yaml); status, logs and interrupt of the commands it
 * starts are in h_execd_command_state.c.
 *
 * Design. Every command runs through the provider's exec, under a small
 * runner script (EXECD_SH_RUN, fcgi/scripts/run.sh) or, for a foreground
 * command on a backend that keeps the record itself (the sandbox-agent,
 * exec_record), directly; either keeps the command's state in files of the
 * sandbox, EXECD_CMD_DIR/<id>.* (the agent: <id>.done once it ended):
 *   cmd    the command text          start/end  epoch ms
 *   pid    the command's process group (it runs in its own session, setsid)
 *   rc     the exit code, written by the runner when the command ended
 *   bg     marker of a background command; out: its stdout+stderr (as execd)
 * So status, logs and interrupt work from any broker thread or process, and
 * survive a restart of the broker: they read (or kill) what the files name.
 *
 * - Foreground: the runner is exec'ed with its output handed over as it
 *   arrives (provider_exec_stream; at the end on a backend without
 *   streaming) and turned into SSE events (sse.h): `init` (text = command
 *   id), one `stdout`/`stderr` event per line, `ping` after SSE_PING_MS of
 *   silence, then `execution_complete` (exit 0) or `error` (ename
 *   CommandExecError, evalue = exit code, as execd does).
 * - Background: a synchronous pre-check (cwd exists, fewer than
 *   EXECD_MAX_COMMANDS live commands), then the runner started detached with
 *   its output appended to <id>.out; the answer is `init` +
 *   `execution_complete` at once, as execd answers.
 * - Timeouts: the runner runs the command under `timeout -s KILL` inside
 *   its session (so the whole group dies); interrupt kills the group.
 * Bounds: SSE_OUTPUT_MAX bytes of output events per stream (the rest is
 * drained and counted), lines cut at SSE_LINE_MAX bytes,
 * EXECD_STREAMS_PER_SANDBOX foreground streams per sandbox and all but
 * TENANT_SHARE_RESERVED of the handler's threads (execd_streams.h: so
 * status and interrupt stay servable), a tenant's streams within its
 * share of the threads (tenant_share.h, taken by execd_open), a foreground
 * command at most EXECD_FOREGROUND_MAX_MS. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "execd.h"
#include "execd_argv.h"
#include "execd_scripts.h"
#include "execd_streams.h"
#include "core/json_input.h"
#include "core/log.h"
#include "routes.h"
#include "sse.h"
#include "stream_guard.h"
#include "tenant_share.h"
#include "core/timeutil.h"
#include "codec/utf8.h"

#define EXECD_MAX_COMMANDS 32 /* live commands per sandbox (background launch) */
#define EXECD_FOREGROUND_MAX_MS (3600 * 1000)
#define EXECD_WRAPPER_SLACK_MS 10000 /* the provider's own timeout, past the runner's */
#define EXECD_MAX_ENV 64

/* ---- the request ---- */

struct cmd_req {
        struct execd_cmd_input in; /* command or argv (execd_argv.h) */
        char cwd[EXECD_PATH_MAX];
        char *env[EXECD_SANDBOX_ENV_MAX + EXECD_MAX_ENV + 1]; /* owned; the sandbox's first */
        int64_t timeout_ms;           /* 0: none given */
        bool background;
        char user[32];                /* "uid[:gid]" or "root" */
};

static void cmd_req_free(struct cmd_req *c)
{
        for (int i = 0; c->env[i]; i++)
                free(c->env[i]);
        c->env[0] = NULL;
}

static bool env_name_valid(const char *k)
{
        size_t n = strlen(k);

        if (n == 0 || n > 127 || (k[0] >= '0' && k[0] <= '9'))
                return false;
        for (; *k; k++)
                if (!((*k >= 'A' && *k <= 'Z') || (*k >= 'a' && *k <= 'z') ||
                      (*k >= '0' && *k <= '9') || *k == '_'))
                        return false;
        return true;
}

static bool json_str_clean(struct json_object *v)
{
        return json_object_is_type(v, json_type_string) &&
               strlen(json_object_get_string(v)) == (size_t)json_object_get_string_len(v);
}

/* RunCommandRequest (execd-api.yaml; `argv` as opensandbox 1.1.1 sends it).
 * Replies and returns -1 on error. */
static int cmd_parse(struct request *req, const struct execd *x, struct json_object *body,
                     struct cmd_req *c)
{
        struct json_object *v, *uid = NULL, *gid = NULL;
        char why[160];
        int n = 0;

        memset(c, 0, sizeof(*c));
        snprintf(c->cwd, sizeof(c->cwd), "%s", EXECD_DEFAULT_CWD);
        snprintf(c->user, sizeof(c->user), "root");
        /* the sandbox's own env first: the request's envs win */
        for (size_t i = 0; x->env && x->env[i]; i++) {
                c->env[n] = strdup(x->env[i]);
                if (!c->env[n]) {
                        cmd_req_free(c);
                        reply_error(req, API_INTERNAL, "out of memory");
                        return -1;
                }
                c->env[++n] = NULL;
        }
        if (execd_argv_parse(body, &c->in, why, sizeof(why)) < 0) {
                reply_error(req, API_INVALID_REQUEST, "%s", why);
                return -1;
        }
        if (json_object_object_get_ex(body, "cwd", &v) && !json_object_is_type(v, json_type_null)) {
                int r = json_str_clean(v) ? execd_path_normalize(json_object_get_string(v), c->cwd,
                                                                 sizeof(c->cwd))
                                          : -EINVAL;

                if (r < 0) {
                        reply_error(req, API_INVALID_REQUEST, "cwd: %s", execd_path_strerror(r));
                        return -1;
                }
        }
        if (json_object_object_get_ex(body, "background", &v) && !json_object_is_type(v, json_type_null)) {
                if (!json_object_is_type(v, json_type_boolean)) {
                        reply_error(req, API_INVALID_REQUEST, "background must be a boolean");
                        return -1;
                }
                c->background = json_object_get_boolean(v);
        }
        if (json_object_object_get_ex(body, "timeout", &v) && !json_object_is_type(v, json_type_null)) {
                int64_t t = json_object_get_int64(v);
                if (!json_object_is_type(v, json_type_int) || t < 0 || t > 86400LL * 1000 * 365) {
                        reply_error(req, API_INVALID_REQUEST,
                                    "timeout must be a non-negative integer (milliseconds)");
                        return -1;
                }
                c->timeout_ms = t;
        }
        json_object_object_get_ex(body, "uid", &uid);
        json_object_object_get_ex(body, "gid", &gid);
        if (uid && json_object_is_type(uid, json_type_null))
                uid = NULL;
        if (gid && json_object_is_type(gid, json_type_null))
                gid = NULL;
        if ((uid && (!json_object_is_type(uid, json_type_int) || json_object_get_int64(uid) < 0 ||
                     json_object_get_int64(uid) > 2147483647)) ||
            (gid && (!json_object_is_type(gid, json_type_int) || json_object_get_int64(gid) < 0 ||
                     json_object_get_int64(gid) > 2147483647))) {
                reply_error(req, API_INVALID_REQUEST, "uid and gid must be integers from 0");
                return -1;
        }
        if (gid && !uid) {
                reply_error(req, API_INVALID_REQUEST, "gid requires uid");
                return -1;
        }
        if (uid && gid)
                snprintf(c->user, sizeof(c->user), "%lld:%lld", (long long)json_object_get_int64(uid),
                         (long long)json_object_get_int64(gid));
        else if (uid)
                snprintf(c->user, sizeof(c->user), "%lld", (long long)json_object_get_int64(uid));
        if (json_object_object_get_ex(body, "envs", &v) && !json_object_is_type(v, json_type_null)) {
                if (!json_object_is_type(v, json_type_object) ||
                    json_object_object_length(v) > EXECD_MAX_ENV) {
                        reply_error(req, API_INVALID_REQUEST, "envs must be an object of at most %d strings",
                                    EXECD_MAX_ENV);
                        return -1;
                }
                json_object_object_foreach(v, key, val) {
                        if (!env_name_valid(key) || !json_str_clean(val)) {
                                cmd_req_free(c);
                                reply_error(req, API_INVALID_REQUEST,
                                            "envs: names are [A-Za-z_][A-Za-z0-9_]*, values strings");
                                return -1;
                        }
                        if (asprintf(&c->env[n], "%s=%s", key, json_object_get_string(val)) < 0) {
                                c->env[n] = NULL;
                                cmd_req_free(c);
                                reply_error(req, API_INTERNAL, "out of memory");
                                return -1;
                        }
                        c->env[++n] = NULL;
                }
        }
        return 0;
}

/* ---- POST /command ---- */

/* The runner's argv for c with id; storage in to and start (24 bytes each). */
static const char **runner_argv(const struct cmd_req *c, const char *id, int64_t to_ms, bool bg,
                                char *to, char *start, const char **argv)
{
        const size_t to_size = 24;
        int i = 0;

        snprintf(start, 24, "%lld", (long long)timeutil_now_ms());
        if (to_ms > 0)
                snprintf(to, to_size, "%lld.%03lld", (long long)(to_ms / 1000), (long long)(to_ms % 1000));
        else
                snprintf(to, to_size, "0");
        argv[i++] = "sh";
        argv[i++] = "-c";
        argv[i++] = EXECD_SH_RUN;
        argv[i++] = "sh";
        argv[i++] = id;
        argv[i++] = to;
        argv[i++] = c->cwd;
        argv[i++] = c->in.command ? "sh" : "argv";
        argv[i++] = bg ? "1" : "0";
        argv[i++] = start;
        if (c->in.command)
                argv[i++] = c->in.command;
        for (int k = 0; k < c->in.argc; k++)
                argv[i++] = c->in.argv[k];
        argv[i] = NULL;
        return argv;
}

static void cmd_background(struct request *req, const struct execd *x, const struct cmd_req *c,
                           const char *id)
{
        const char *argv[EXECD_ARGV_MAX + 16];
        char max[16], to[24], start[24], err[PROVIDER_ERR_MAX] = "", *content = NULL;
        struct exec_result res = { 0 };
        struct exec_spec spec = { 0 };
        struct sse s;
        int64_t t0 = timeutil_mono_ms();
        int r;

        /* the text status reports: the command, or argv joined */
        content = execd_argv_text(&c->in);
        if (!content) {
                reply_error(req, API_INTERNAL, "out of memory");
                return;
        }
        snprintf(max, sizeof(max), "%d", EXECD_MAX_COMMANDS);
        const char *pre[] = { "sh", "-c", EXECD_SH_BG_PRECHECK, "sh", id, c->cwd, max, content, NULL };
        if (execd_run(req, x, pre, NULL, 0, 4096, &res) < 0)
                goto out;
        if (res.exit_code == EXECD_X_NO_CWD) {
                reply_error(req, API_INVALID_REQUEST, "cwd %s is not a directory", c->cwd);
                goto out;
        }
        if (res.exit_code == EXECD_X_TOO_MANY) {
                reply_error(req, API_TOO_MANY_REQUESTS, "sandbox %s already runs %d commands",
                            x->sandbox_id, EXECD_MAX_COMMANDS);
                goto out;
        }
        if (res.exit_code != 0) {
                reply_error(req, API_SANDBOX_FAILED, "cannot prepare the command: %.200s",
                            res.err ? res.err : "");
                goto out;
        }
        spec = (struct exec_spec){ .argv = runner_argv(c, id, c->timeout_ms, true, to, start, argv),
                                   .env = (const char *const *)c->env, .user = c->user, .cwd = "/",
                                   .timeout_ms = req->w->cfg->exec_timeout_ms, .detach = true,
                                   .env_file = true };
        exec_result_free(&res);
        r = provider_exec(req->w->provider, x->ref, &spec, &res, err);
        if (r < 0) {
                execd_reply_provider(req, x, r, "background command", err);
                goto out;
        }
        log_info(execd_kv(req, x), "background command %s started", id);
        sse_begin(&s, req);
        sse_text(&s, "init", id, strlen(id));
        sse_complete(&s, timeutil_mono_ms() - t0);
        sse_end(&s);
out:
        exec_result_free(&res);
        free(content);
}

int execd_stream_command(struct request *req, const struct execd *x, const char *id,
                         const struct exec_spec *caller_spec, int64_t to_ms, const char *what,
                         bool events)
{
        char err[PROVIDER_ERR_MAX] = "", why[160], ev[16];
        struct exec_result res = { 0 };
        /* the command is this stream's: should this process die mid-stream
         * (nobody left to tell the client how it ended, nor to kill it when
         * the client goes), the agent kills it (docs/EXECD.md) */
        struct exec_spec stream_spec = *caller_spec, *spec = &stream_spec;
        struct sse s;
        struct exec_stream_cb cb = { .on_output = sse_on_output, .on_tick = sse_on_tick, .ud = &s };
        int64_t t0;
        int slot, r, ret = 0;
        uint32_t guarded;

        if (execd_streams_take(tenant_share_cap(req->w->cfg->fcgi_threads), x->sandbox_id, id,
                               &slot) < 0) {
                char retry[32];

                snprintf(retry, sizeof(retry), "Retry-After: %d", TENANT_SHARE_RETRY_S);
                reply_error_hdr(req, API_TOO_MANY_REQUESTS, retry,
                                "too many commands streaming (at most %d per sandbox); retry later",
                                EXECD_STREAMS_PER_SANDBOX);
                return -EAGAIN;
        }
        stream_spec.kill_on_hangup = true;
        if (events)
                sse_begin_events(&s, req);
        else
                sse_begin(&s, req);
        sse_text(&s, "init", id, strlen(id));
        /* from here the stream's end is the guard's should this process
         * die: an error event, not a clean end (stream_guard.h) */
        guarded = stream_guard_hold(req);
        t0 = timeutil_mono_ms();
        /* streamed as it comes, or (a backend without streaming) at the end */
        r = provider_exec_stream(req->w->provider, x->ref, spec, &cb, &res, err);
        if (r == 0)
                r = sse_flush_lines(&s);
        if (r < 0 && s.broken) {
                /* the client went away: the command must not outlive its stream */
                struct exec_result kr = { 0 };
                char kerr[PROVIDER_ERR_MAX] = "";
                log_info(execd_kv(req, x), "%s %s: client gone, killing it", what, id);
                execd_command_kill(req, x, id, true, &kr, kerr);
                exec_result_free(&kr);
                ret = -EPIPE;
                goto out;
        }
        if (r < 0) {
                log_err(execd_kv(req, x), "%s %s failed: %s (%s)", what, id, err, strerror(-r));
                snprintf(why, sizeof(why), "%s", err[0] ? err : strerror(-r));
                sse_error(&s, "-1", why); /* no exit code: the command never ran (or its end is unknown) */
                goto out;
        }
        if (s.dropped) {
                char note[160];
                int n = snprintf(note, sizeof(note),
                                 events ? "[output truncated: %zu bytes over the %d-byte limit or not events]"
                                        : "[output truncated: %zu bytes over the %d-byte limit]",
                                 s.dropped, SSE_OUTPUT_MAX);
                sse_text(&s, "stderr", note, (size_t)n);
        }
        if (events && res.exit_code == 0 && !res.timed_out)
                goto out; /* it sent its own last event */
        if (res.exit_code == 0 && !res.timed_out) {
                sse_complete(&s, timeutil_mono_ms() - t0);
                goto out;
        }
        snprintf(ev, sizeof(ev), "%d", res.exit_code);
        if (execd_streams_interrupted(slot))
                snprintf(why, sizeof(why), "interrupted (killed)");
        else if (res.exit_code == 137 && timeutil_mono_ms() - t0 >= to_ms - 1000)
                snprintf(why, sizeof(why), "timed out after %lld ms (killed)", (long long)to_ms);
        else
                snprintf(why, sizeof(why), "exit status %d", res.exit_code);
        sse_error(&s, ev, why);
out:
        stream_guard_release(guarded); /* after the last event, before the request ends */
        sse_end(&s);
        exec_result_free(&res);
        execd_streams_put(slot);
        return ret;
}

static void cmd_foreground(struct request *req, const struct execd *x, const struct cmd_req *c,
                           const char *id)
{
        const char *argv[EXECD_ARGV_MAX + 16];
        char to[24], start[24], path[sizeof(EXECD_CMD_DIR) + 40];
        int64_t to_ms = c->timeout_ms > 0 && c->timeout_ms < EXECD_FOREGROUND_MAX_MS
                                ? c->timeout_ms : EXECD_FOREGROUND_MAX_MS;
        const char *text[] = { c->in.command, NULL };
        /* a backend that keeps the state files itself (the agent) runs the
         * command directly: one fork+exec instead of the runner's six */
        struct exec_record rec = {
                .path = path, .argv = c->in.command ? text : c->in.argv, .shell = c->in.command != NULL,
                .cwd = c->cwd, .timeout_ms = (int)to_ms,
        };
        struct exec_spec spec = {
                .argv = runner_argv(c, id, to_ms, false, to, start, argv),
                .env = (const char *const *)c->env, .user = c->user, .cwd = "/",
                .timeout_ms = (int)(to_ms + EXECD_WRAPPER_SLACK_MS),
                .max_output = (size_t)req->w->cfg->exec_max_output,
                .record = &rec,
                .env_file = true,
        };

        snprintf(path, sizeof(path), "%s/%s", EXECD_CMD_DIR, id);
        execd_stream_command(req, x, id, &spec, to_ms, "command", false);
}

void h_execd_run_command(struct request *req)
{
        struct json_object *body = NULL;
        struct cmd_req c;
        struct execd x;
        char id[33];

        memset(&c, 0, sizeof(c));
        if (execd_open(req, &x, true) < 0 || request_json_body(req, &body) < 0 ||
            cmd_parse(req, &x, body, &c) < 0)
                goto out;
        if (timeutil_random_id(id, sizeof(id)) < 0) {
                reply_error(req, API_INTERNAL, "no randomness for a command id");
                goto out;
        }
        if (c.background)
                cmd_background(req, &x, &c, id);
        else
                cmd_foreground(req, &x, &c, id);
out:
        cmd_req_free(&c);
        json_put(body);
}

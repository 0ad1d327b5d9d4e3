/* h_execd_session: bash sessions of the execd contract (execd-api.yaml):
 * POST /session, POST /session/{sessionId}/run, DELETE /session/{sessionId}.
 *
 * Design. execd keeps a bash process per session; the broker has no
 * daemon in the sandbox, so a session is state in files instead
 * (EXECD_SESSION_DIR/<id>, execd_scripts.h): the working directory and
 * the exported variables (`export -p`). Each run is a fresh bash (sh
 * without bash) that restores both, evals the command in itself and saves
 * them back when it exits, so `cd` and `export X=1` carry over to the next
 * run; shell variables that are not exported, functions, aliases and
 * options do not, and neither does anything of a run that was killed.
 *
 * A run is a foreground command as POST /command runs it (h_execd_command.c):
 * the same runner (EXECD_SH_RUN, so status and interrupt of its id work),
 * the same SSE events (sse.h: init with the command id, a stdout/stderr
 * event per line, ping, execution_complete or error with the exit code),
 * the same bounds (execd_streams.h). A pre-check answers 404 (no session)
 * or 400 (no such cwd) before the stream starts. Sessions run as root. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "execd.h"
#include "execd_scripts.h"
#include "execd_streams.h"
#include "core/json_input.h"
#include "core/log.h"
#include "routes.h"
#include "sse.h"
#include "core/timeutil.h"

#define SESSION_MAX 64                   /* sessions per sandbox */
#define SESSION_ID_MAX 63                /* a route segment */
#define SESSION_RUN_MAX_MS (3600 * 1000) /* a run, also without timeout */
#define SESSION_WRAPPER_SLACK_MS 10000   /* the provider's own timeout, past the runner's */

/* Session ids: what POST /session makes (32 hex), or any [A-Za-z0-9_-]
 * of 1..SESSION_ID_MAX bytes (a file name in the sandbox, never a path). */
static bool session_id_valid(const char *s)
{
        size_t n = strlen(s);

        if (n == 0 || n > SESSION_ID_MAX)
                return false;
        for (; *s; s++)
                if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
                      *s == '-' || *s == '_'))
                        return false;
        return true;
}

static int session_id_arg(struct request *req, const char **ret)
{
        if (!session_id_valid(req->path_arg2)) {
                reply_error(req, API_INVALID_REQUEST,
                            "session id must be 1 to %d characters of [A-Za-z0-9_-]", SESSION_ID_MAX);
                return -1;
        }
        *ret = req->path_arg2;
        return 0;
}

/* An optional string field that is a path, normalised into out ("" when
 * absent). -1 after replying. */
static int opt_path(struct request *req, struct json_object *body, const char *name, char *out, size_t size)
{
        struct json_object *v = NULL;
        int r;

        out[0] = '\0';
        if (!body || !json_object_object_get_ex(body, name, &v) || json_object_is_type(v, json_type_null))
                return 0;
        if (!json_object_is_type(v, json_type_string) ||
            strlen(json_object_get_string(v)) != (size_t)json_object_get_string_len(v))
                r = -EINVAL;
        else
                r = execd_path_normalize(json_object_get_string(v), out, size);
        if (r < 0) {
                reply_error(req, API_INVALID_REQUEST, "%s: %s", name, execd_path_strerror(r));
                return -1;
        }
        return 0;
}

/* ---- POST /session ---- */

void h_execd_session_create(struct request *req)
{
        const char *cl = FCGX_GetParam("CONTENT_LENGTH", req->fcgx->envp);
        struct json_object *body = NULL, *o = NULL;
        struct exec_result res = { 0 };
        char id[33], cwd[EXECD_PATH_MAX], max[16];
        struct execd x;

        if (execd_open(req, &x, true) < 0)
                goto out;
        /* the body is optional (the SDKs send none without a cwd) */
        if (cl && *cl && strcmp(cl, "0") != 0 && request_json_body(req, &body) < 0)
                goto out;
        if (opt_path(req, body, "cwd", cwd, sizeof(cwd)) < 0)
                goto out;
        if (timeutil_random_id(id, sizeof(id)) < 0) {
                reply_error(req, API_INTERNAL, "no randomness for a session id");
                goto out;
        }
        snprintf(max, sizeof(max), "%d", SESSION_MAX);
        const char *argv[] = { "sh", "-c", EXECD_SH_SESSION_CREATE, "sh", id,
                               cwd[0] ? cwd : EXECD_DEFAULT_CWD, cwd[0] ? "1" : "0", max, NULL };
        if (execd_run(req, &x, argv, NULL, 0, 4096, &res) < 0)
                goto out;
        if (res.exit_code == EXECD_X_NO_CWD) {
                reply_error(req, API_INVALID_REQUEST, "cwd %s is not a directory", cwd);
                goto out;
        }
        if (res.exit_code == EXECD_X_TOO_MANY) {
                reply_error(req, API_TOO_MANY_REQUESTS, "sandbox %s already has %d sessions; delete one",
                            x.sandbox_id, SESSION_MAX);
                goto out;
        }
        if (res.exit_code != 0) {
                reply_error(req, API_SANDBOX_FAILED, "cannot make the session: %.200s", res.err ? res.err : "");
                goto out;
        }
        o = json_object_new_object();
        if (!o || json_add_str(o, "session_id", id) < 0) {
                reply_error(req, API_INTERNAL, "out of memory");
                goto out;
        }
        log_info(execd_kv(req, &x), "session %s created", id);
        reply_json(req, 200, o);
out:
        json_put(o);
        json_put(body);
        exec_result_free(&res);
}

/* ---- DELETE /session/{id} ---- */

void h_execd_session_delete(struct request *req)
{
        struct exec_result res = { 0 };
        struct execd x;
        const char *sid;

        if (execd_open(req, &x, true) < 0 || session_id_arg(req, &sid) < 0)
                return;
        const char *argv[] = { "sh", "-c", EXECD_SH_SESSION_DELETE, "sh", sid, NULL };
        if (execd_run(req, &x, argv, NULL, 0, 4096, &res) < 0)
                goto out;
        if (res.exit_code == EXECD_X_NOT_FOUND) {
                reply_error(req, API_NOT_FOUND, "no session %s", sid);
                goto out;
        }
        if (res.exit_code != 0) {
                reply_error(req, API_SANDBOX_FAILED, "cannot delete session %s: %.200s", sid,
                            res.err ? res.err : "");
                goto out;
        }
        log_info(execd_kv(req, &x), "session %s deleted", sid);
        reply_empty(req, 200);
out:
        exec_result_free(&res);
}

/* ---- POST /session/{id}/run ---- */

struct run_req {
        const char *command;
        char cwd[EXECD_PATH_MAX]; /* "" : the session's */
        int64_t timeout_ms;       /* 0: none given */
};

/* RunInSessionRequest; -1 after replying. */
static int run_parse(struct request *req, struct json_object *body, struct run_req *r)
{
        struct json_object *v = NULL;

        memset(r, 0, sizeof(*r));
        if (!json_object_object_get_ex(body, "command", &v) || !json_object_is_type(v, json_type_string) ||
            json_object_get_string_len(v) == 0 ||
            strlen(json_object_get_string(v)) != (size_t)json_object_get_string_len(v)) {
                reply_error(req, API_INVALID_REQUEST, "command (a non-empty string) is required");
                return -1;
        }
        r->command = json_object_get_string(v);
        if (opt_path(req, body, "cwd", r->cwd, sizeof(r->cwd)) < 0)
                return -1;
        if (json_object_object_get_ex(body, "timeout", &v) && !json_object_is_type(v, json_type_null)) {
                int64_t t = json_object_get_int64(v);
                if (!json_object_is_type(v, json_type_int) || t < 0 || t > 86400LL * 1000 * 365) {
                        reply_error(req, API_INVALID_REQUEST,
                                    "timeout must be a non-negative integer (milliseconds)");
                        return -1;
                }
                r->timeout_ms = t;
        }
        return 0;
}

/* The run, streamed as SSE events like a foreground command. */
static void run_stream(struct request *req, const struct execd *x, const char *sid, const struct run_req *rr,
                       const char *id)
{
        int64_t to_ms = rr->timeout_ms > 0 && rr->timeout_ms < SESSION_RUN_MAX_MS ? rr->timeout_ms
                                                                                  : SESSION_RUN_MAX_MS;
        char to[32], dir[sizeof(EXECD_SESSION_DIR) + SESSION_ID_MAX + 2], start[24], what[96];

        snprintf(to, sizeof(to), "%lld.%03lld", (long long)(to_ms / 1000), (long long)(to_ms % 1000));
        snprintf(dir, sizeof(dir), "%s/%s", EXECD_SESSION_DIR, sid);
        snprintf(start, sizeof(start), "%lld", (long long)timeutil_now_ms());
        snprintf(what, sizeof(what), "session %s command", sid);
        /* the runner (kind argv) runs: sh -c SHELL sh BODY DIR CWD COMMAND */
        const char *argv[] = { "sh", "-c", EXECD_SH_RUN, "sh", id, to, "/", "argv", "0", start,
                               "sh", "-c", EXECD_SH_SESSION_SHELL, "sh", EXECD_SH_SESSION_BODY,
                               dir, rr->cwd, rr->command, NULL };
        struct exec_spec spec = { .argv = argv, .env = x->env, .user = "root", .cwd = "/",
                                  .timeout_ms = (int)(to_ms + SESSION_WRAPPER_SLACK_MS),
                                  .max_output = (size_t)req->w->cfg->exec_max_output,
                                  .env_file = true };

        execd_stream_command(req, x, id, &spec, to_ms, what, false);
}

void h_execd_session_run(struct request *req)
{
        struct json_object *body = NULL;
        struct exec_result res = { 0 };
        struct run_req rr;
        struct execd x;
        const char *sid;
        char id[33];

        if (execd_open(req, &x, true) < 0 || session_id_arg(req, &sid) < 0 ||
            request_json_body(req, &body) < 0 || run_parse(req, body, &rr) < 0)
                goto out;
        if (timeutil_random_id(id, sizeof(id)) < 0) {
                reply_error(req, API_INTERNAL, "no randomness for a command id");
                goto out;
        }
        /* answers that are not a stream: no session, no such cwd */
        const char *pre[] = { "sh", "-c", EXECD_SH_SESSION_PRE, "sh", sid, id, rr.cwd, rr.command, NULL };
        if (execd_run(req, &x, pre, NULL, 0, 4096, &res) < 0)
                goto out;
        if (res.exit_code == EXECD_X_NOT_FOUND) {
                reply_error(req, API_NOT_FOUND, "no session %s", sid);
                goto out;
        }
        if (res.exit_code == EXECD_X_NO_CWD) {
                reply_error(req, API_INVALID_REQUEST, "cwd %s is not a directory", rr.cwd);
                goto out;
        }
        if (res.exit_code != 0) {
                reply_error(req, API_SANDBOX_FAILED, "cannot prepare the run: %.200s", res.err ? res.err : "");
                goto out;
        }
        run_stream(req, &x, sid, &rr, id);
out:
        exec_result_free(&res);
        json_put(body);
}

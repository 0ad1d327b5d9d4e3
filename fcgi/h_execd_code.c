/* h_execd_code: the code interpreter of the execd contract (execd-api.yaml,
 * "CodeInterpreting"; what PyPI's opensandbox-code-interpreter 1.1.1 sends
 * and parses where the spec is vague):
 *   POST   /code/context            create a context {language} -> {id, language}
 *   GET    /code/contexts?language= list them (all without a language)
 *   DELETE /code/contexts?language= delete every context of a language
 *   GET    /code/contexts/{id}      one context; DELETE: delete it
 *   POST   /code                    run {code, context: {id?, language?}}: SSE
 *   DELETE /code?id=                interrupt the execution id (init's text)
 *
 * Design. The work is done inside the sandbox by its image's kernel-runner
 * (snapshots/code-interpreter/kernel-runner.py; the code-interpreter image,
 * docs/IMAGES.md): a context is a Jupyter kernel (ipykernel) of its own,
 * started detached, its connection file and ipc sockets in a root-only
 * directory. Every call here is one exec of kernel-runner through the
 * provider (EXECD_SH_CODE, execd_scripts.h), as root. A run is a foreground
 * command of h_execd_command.c's stream (execd_stream_command: the same
 * slot bounds, hang-up kill, ping, output cap), whose runner prints its own
 * events, one JSON object per line (sse.h, events mode): init (the
 * execution id), execution_count, stdout/stderr, result (the mime bundle,
 * plus "text" = text/plain, which the SDKs read), then error {ename,
 * evalue, traceback} or execution_complete. A pre-check answers 404 (no
 * such context), 400 (language) or 429 (contexts) before the stream.
 * Without a context id a run uses the language's default context
 * ("default-<language>"), made on first use, as execd does.
 *
 * An image without kernel-runner answers 501 at once, naming the image to
 * use. Interrupt is SIGINT to the context's kernel (a KeyboardInterrupt in
 * the cell: the context and its state live on); a run is interrupted the
 * same way at CODE_RUN_MAX_MS, and killed CODE_WRAPPER_SLACK_MS later if
 * it does not stop, and when its client goes away mid-run (the runner is
 * killed then, the cell interrupted). Bounds: the code is the body (MAX_BODY_BYTES),
 * CODE_CONTEXTS_MAX contexts per sandbox, output as a command's
 * (SSE_OUTPUT_MAX, one event at most SSE_EVENT_LINE_MAX). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "execd.h"
#include "execd_scripts.h"
#include "core/json_input.h"
#include "core/log.h"
#include "routes.h"
#include "core/timeutil.h"

#define CODE_CONTEXTS_MAX 16             /* contexts per sandbox, default ones included */
#define CODE_RUN_MAX_MS (3600 * 1000)    /* a run: interrupted then (TimeoutError) */
#define CODE_WRAPPER_SLACK_MS 10000      /* killed this much later if still running */
#define CODE_LANG_MAX 32
#define CODE_ID_MAX 63
#define CODE_OUT_MAX (256 * 1024)        /* a call's answer (a list of contexts) */

static bool lang_valid(const char *s)
{
        size_t n = strlen(s);

        if (n == 0 || n > CODE_LANG_MAX)
                return false;
        for (; *s; s++)
                if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_' || *s == '-' ||
                      *s == '+'))
                        return false;
        return true;
}

/* What kernel-runner makes (32 hex, "default-<language>"): [A-Za-z0-9_-]. */
static bool id_valid(const char *s)
{
        size_t n = strlen(s);

        if (n == 0 || n > CODE_ID_MAX)
                return false;
        for (; *s; s++)
                if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
                      *s == '-' || *s == '_'))
                        return false;
        return true;
}

/* One kernel-runner call (args after the program), as root, with the
 * sandbox's env (the kernels a create starts see it, and set_env's file).
 * 0 with *res, or the provider's negative errno with err set. */
static int code_exec(struct request *req, const struct execd *x, const char *const *args,
                     struct exec_result *res, char *err)
{
        const char *argv[16] = { "sh", "-c", EXECD_SH_CODE, "sh" };
        int n = 4;

        for (int i = 0; args[i] && n < 15; i++)
                argv[n++] = args[i];
        argv[n] = NULL;
        struct exec_spec spec = { .argv = argv, .env = x->env, .user = "root", .cwd = "/",
                                  .timeout_ms = req->w->cfg->exec_timeout_ms,
                                  .max_output = CODE_OUT_MAX, .env_file = true };
        return provider_exec(req->w->provider, x->ref, &spec, res, err);
}

/* code_exec, replying to a provider failure: 0 with *res, or -1. */
static int code_call(struct request *req, const struct execd *x, const char *const *args,
                     struct exec_result *res)
{
        char err[PROVIDER_ERR_MAX] = "";
        int r = code_exec(req, x, args, res, err);

        if (r < 0) {
                execd_reply_provider(req, x, r, "code interpreter", err);
                return -1;
        }
        return 0;
}

/* kernel-runner's exit code as an answer: 0 for a success, else replies
 * and returns -1. what names the context (or execution) asked about. */
static int code_status(struct request *req, const struct execd *x, const struct exec_result *res,
                       const char *what)
{
        const char *e = res->err ? res->err : "";
        int el = (int)strcspn(e, "\n");

        switch (res->exit_code) {
        case 0:
                return 0;
        case EXECD_X_NO_INTERPRETER:
                reply_error(req, API_NOT_IMPLEMENTED,
                            "the code interpreter is not served in sandbox %s: its image has no "
                            "code interpreter (no %s); create the sandbox from "
                            "sandbox-broker/code-interpreter:latest with entrypoint "
                            "[\"/opt/code-interpreter/code-interpreter.sh\"] (docs/EXECD.md, \"Code "
                            "interpreter\")",
                            x->sandbox_id, EXECD_CODE_RUNNER);
                return -1;
        case EXECD_X_LANGUAGE:
        case EXECD_X_MISMATCH:
                reply_error(req, API_INVALID_REQUEST, "%.*s", el > 300 ? 300 : el, e);
                return -1;
        case EXECD_X_NOT_FOUND:
                reply_error(req, API_NOT_FOUND, "no %s in sandbox %s", what, x->sandbox_id);
                return -1;
        case EXECD_X_TOO_MANY:
                reply_error(req, API_TOO_MANY_REQUESTS,
                            "sandbox %s has %d code contexts already; delete one", x->sandbox_id,
                            CODE_CONTEXTS_MAX);
                return -1;
        default:
                log_err(execd_kv(req, x), "kernel-runner exited %d: %.300s", res->exit_code, e);
                reply_error(req, API_SANDBOX_FAILED, "the code interpreter failed (exit %d): %.300s",
                            res->exit_code, e);
                return -1;
        }
}

/* {"id","language"} rebuilt from kernel-runner's object o (its output is
 * the sandbox's: only the two checked strings are passed on). NULL if o is
 * not one. */
static struct json_object *context_json(struct json_object *o)
{
        const char *id = json_get_str(o, "id"), *lang = json_get_str(o, "language");
        struct json_object *c;

        if (!id || !lang || !id_valid(id) || !lang_valid(lang))
                return NULL;
        c = json_object_new_object();
        if (c && (json_add_str(c, "id", id) < 0 || json_add_str(c, "language", lang) < 0)) {
                json_put(c);
                return NULL;
        }
        return c;
}

/* Answer 200 with kernel-runner's context (list: its array of them). */
static void reply_contexts(struct request *req, const struct execd *x, const struct exec_result *res,
                           bool list)
{
        struct json_object *in = json_parse_or_null(res->out), *out = NULL;

        if (in && list && json_object_is_type(in, json_type_array)) {
                out = json_object_new_array();
                for (size_t i = 0; out && i < json_object_array_length(in); i++) {
                        struct json_object *c = context_json(json_object_array_get_idx(in, i));
                        if (!c || json_object_array_add(out, c) < 0) {
                                json_put(c);
                                json_put(out);
                                out = NULL;
                        }
                }
        } else if (in && !list) {
                out = context_json(in);
        }
        if (!out) {
                log_err(execd_kv(req, x), "kernel-runner answered %.200s", res->out ? res->out : "");
                reply_error(req, API_SANDBOX_FAILED, "the code interpreter answered something else");
        } else {
                reply_json(req, 200, out);
        }
        json_put(in);
        json_put(out);
}

/* The optional query parameter `language` into buf ("" when absent); -1
 * after replying. */
static int query_language(struct request *req, char *buf, size_t size)
{
        char qbuf[256];
        const char *v[1];
        int n = execd_query_values(req, "language", v, 1, qbuf, sizeof(qbuf));

        buf[0] = '\0';
        if (n < 0 || (n == 1 && !lang_valid(v[0]))) {
                reply_error(req, API_INVALID_REQUEST, "language must be 1 to %d characters of [a-z0-9_+-]",
                            CODE_LANG_MAX);
                return -1;
        }
        if (n == 1)
                snprintf(buf, size, "%s", v[0]);
        return 0;
}

/* ---- contexts ---- */

void h_execd_code_context_create(struct request *req)
{
        struct json_object *body = NULL, *v = NULL;
        struct exec_result res = { 0 };
        const char *lang = "python";
        char max[16];
        struct execd x;

        if (execd_open(req, &x, true) < 0 || request_json_body(req, &body) < 0)
                goto out;
        if (json_object_object_get_ex(body, "language", &v) && !json_object_is_type(v, json_type_null)) {
                lang = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
                if (!lang_valid(lang)) {
                        reply_error(req, API_INVALID_REQUEST,
                                    "language must be a string of 1 to %d characters of [a-z0-9_+-]",
                                    CODE_LANG_MAX);
                        goto out;
                }
        }
        snprintf(max, sizeof(max), "%d", CODE_CONTEXTS_MAX);
        if (code_call(req, &x, (const char *const[]){ "create", lang, max, NULL }, &res) < 0 ||
            code_status(req, &x, &res, "context") < 0)
                goto out;
        log_info(execd_kv(req, &x), "code context created (%s)", lang);
        reply_contexts(req, &x, &res, false);
out:
        exec_result_free(&res);
        json_put(body);
}

void h_execd_code_contexts_list(struct request *req)
{
        struct exec_result res = { 0 };
        char lang[CODE_LANG_MAX + 1];
        struct execd x;

        if (execd_open(req, &x, true) < 0 || query_language(req, lang, sizeof(lang)) < 0 ||
            code_call(req, &x, (const char *const[]){ "list", lang, NULL }, &res) < 0 ||
            code_status(req, &x, &res, "context") < 0)
                goto out;
        reply_contexts(req, &x, &res, true);
out:
        exec_result_free(&res);
}

void h_execd_code_contexts_delete(struct request *req)
{
        struct exec_result res = { 0 };
        char lang[CODE_LANG_MAX + 1];
        struct execd x;

        if (execd_open(req, &x, true) < 0 || query_language(req, lang, sizeof(lang)) < 0)
                goto out;
        if (!lang[0]) {
                reply_error(req, API_INVALID_REQUEST, "language (a query parameter) is required");
                goto out;
        }
        if (code_call(req, &x, (const char *const[]){ "delete-lang", lang, NULL }, &res) < 0 ||
            code_status(req, &x, &res, "context") < 0)
                goto out;
        log_info(execd_kv(req, &x), "code contexts of %s deleted", lang);
        reply_empty(req, 200);
out:
        exec_result_free(&res);
}

/* GET and DELETE /code/contexts/{id} */
static void context_one(struct request *req, bool del)
{
        struct exec_result res = { 0 };
        const char *id = req->path_arg2;
        char what[CODE_ID_MAX + 16];
        struct execd x;

        if (execd_open(req, &x, true) < 0)
                goto out;
        if (!id_valid(id)) {
                reply_error(req, API_NOT_FOUND, "no context %.80s: ids are 1 to %d characters of "
                            "[A-Za-z0-9_-]", id, CODE_ID_MAX);
                goto out;
        }
        snprintf(what, sizeof(what), "context %s", id);
        if (code_call(req, &x, (const char *const[]){ del ? "delete" : "get", id, NULL }, &res) < 0 ||
            code_status(req, &x, &res, what) < 0)
                goto out;
        if (del) {
                log_info(execd_kv(req, &x), "code context %s deleted", id);
                reply_empty(req, 200);
        } else {
                reply_contexts(req, &x, &res, false);
        }
out:
        exec_result_free(&res);
}

void h_execd_code_context_get(struct request *req)
{
        context_one(req, false);
}

void h_execd_code_context_delete(struct request *req)
{
        context_one(req, true);
}

/* ---- runs ---- */

/* RunCodeRequest: code (a non-empty string without NUL), context {id,
 * language} (both optional). -1 after replying. */
static int run_parse(struct request *req, struct json_object *body, const char **code, size_t *len,
                     const char **id, const char **lang)
{
        struct json_object *v = NULL, *c = NULL;

        *id = "";
        *lang = "";
        if (!json_object_object_get_ex(body, "code", &v) || !json_object_is_type(v, json_type_string) ||
            json_object_get_string_len(v) == 0 ||
            strlen(json_object_get_string(v)) != (size_t)json_object_get_string_len(v)) {
                reply_error(req, API_INVALID_REQUEST, "code (a non-empty string) is required");
                return -1;
        }
        *code = json_object_get_string(v);
        *len = (size_t)json_object_get_string_len(v);
        if (!json_object_object_get_ex(body, "context", &c) || json_object_is_type(c, json_type_null))
                return 0;
        if (!json_object_is_type(c, json_type_object)) {
                reply_error(req, API_INVALID_REQUEST, "context must be an object {id, language}");
                return -1;
        }
        if (json_object_object_get_ex(c, "id", &v) && !json_object_is_type(v, json_type_null)) {
                *id = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
                if (!id_valid(*id)) {
                        reply_error(req, API_INVALID_REQUEST,
                                    "context.id must be 1 to %d characters of [A-Za-z0-9_-]", CODE_ID_MAX);
                        return -1;
                }
        }
        if (json_object_object_get_ex(c, "language", &v) && !json_object_is_type(v, json_type_null)) {
                *lang = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
                if (!lang_valid(*lang)) {
                        reply_error(req, API_INVALID_REQUEST,
                                    "context.language must be 1 to %d characters of [a-z0-9_+-]",
                                    CODE_LANG_MAX);
                        return -1;
                }
        }
        return 0;
}

void h_execd_code_run(struct request *req)
{
        struct json_object *body = NULL, *pre = NULL;
        struct exec_result res = { 0 };
        const char *code, *id, *lang, *ctx;
        char eid[33], max[16], to[24], rto[32], start[24], what[96], ctxbuf[CODE_ID_MAX + 1];
        char path[sizeof(EXECD_CMD_DIR) + 40];
        const int64_t to_ms = CODE_RUN_MAX_MS;
        size_t len;
        struct execd x;

        if (execd_open(req, &x, true) < 0 || request_json_body(req, &body) < 0 ||
            run_parse(req, body, &code, &len, &id, &lang) < 0)
                goto out;
        if (timeutil_random_id(eid, sizeof(eid)) < 0) {
                reply_error(req, API_INTERNAL, "no randomness for an execution id");
                goto out;
        }
        /* answers that are not a stream: no image support, no context, language, too many */
        snprintf(max, sizeof(max), "%d", CODE_CONTEXTS_MAX);
        snprintf(what, sizeof(what), "context %s", id);
        if (code_call(req, &x, (const char *const[]){ "pre", id, lang, eid, max, NULL }, &res) < 0 ||
            code_status(req, &x, &res, what) < 0)
                goto out;
        pre = json_parse_or_null(res.out);
        ctx = json_get_str(pre, "id");
        if (!ctx || !id_valid(ctx)) {
                reply_error(req, API_SANDBOX_FAILED, "the code interpreter answered something else");
                goto out;
        }
        snprintf(ctxbuf, sizeof(ctxbuf), "%s", ctx);
        snprintf(rto, sizeof(rto), "%lld", (long long)to_ms);
        snprintf(to, sizeof(to), "%lld", (long long)((to_ms + CODE_WRAPPER_SLACK_MS) / 1000));
        snprintf(start, sizeof(start), "%lld", (long long)timeutil_now_ms());
        snprintf(path, sizeof(path), "%s/%s", EXECD_CMD_DIR, eid);
        snprintf(what, sizeof(what), "code run in context %s", ctxbuf);
        /* the runner (EXECD_SH_RUN, kind argv) keeps the execution's state
         * files as a command's; the agent keeps them itself (record) */
        const char *run[] = { "sh", "-c", EXECD_SH_CODE, "sh", "run", ctxbuf, eid, rto, NULL };
        const char *argv[] = { "sh", "-c", EXECD_SH_RUN, "sh", eid, to, "/", "argv", "0", start,
                               "sh", "-c", EXECD_SH_CODE, "sh", "run", ctxbuf, eid, rto, NULL };
        struct exec_record rec = { .path = path, .argv = run, .cwd = "/",
                                   .timeout_ms = (int)(to_ms + CODE_WRAPPER_SLACK_MS) };
        struct exec_spec spec = { .argv = argv, .env = x.env, .user = "root", .cwd = "/",
                                  .timeout_ms = (int)(to_ms + 2 * CODE_WRAPPER_SLACK_MS),
                                  .max_output = (size_t)req->w->cfg->exec_max_output,
                                  .stdin_data = code, .stdin_len = len, .record = &rec };

        if (execd_stream_command(req, &x, eid, &spec, to_ms + CODE_WRAPPER_SLACK_MS, what, true) ==
            -EPIPE) {
                /* the client went away: its runner was killed, not the cell,
                 * which would keep the kernel (and every later run of the
                 * context) busy; interrupt it (the answer is over: nothing
                 * more is said, whatever this gives) */
                char err[PROVIDER_ERR_MAX] = "";
                struct exec_result ir = { 0 };

                if (code_exec(req, &x, (const char *const[]){ "interrupt", eid, NULL }, &ir, err) == 0 &&
                    ir.exit_code == 0)
                        log_info(execd_kv(req, &x), "code execution %s interrupted: its client went away",
                                 eid);
                exec_result_free(&ir);
        }
out:
        json_put(pre);
        exec_result_free(&res);
        json_put(body);
}

void h_execd_code_interrupt(struct request *req)
{
        struct exec_result res = { 0 };
        char qbuf[256], what[CODE_ID_MAX + 16];
        const char *v[1];
        struct execd x;
        int n;

        if (execd_open(req, &x, true) < 0)
                return;
        n = execd_query_values(req, "id", v, 1, qbuf, sizeof(qbuf));
        if (n != 1 || !id_valid(v[0])) {
                reply_error(req, API_INVALID_REQUEST, "id (the execution id, a query parameter) is required");
                return;
        }
        snprintf(what, sizeof(what), "execution %s", v[0]);
        if (code_call(req, &x, (const char *const[]){ "interrupt", v[0], NULL }, &res) < 0 ||
            code_status(req, &x, &res, what) < 0)
                goto out;
        log_info(execd_kv(req, &x), "code execution %s interrupted", v[0]);
        reply_empty(req, 200);
out:
        exec_result_free(&res);
}

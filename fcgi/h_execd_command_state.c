/* h_execd_command_state: what can be asked of a command POST /command
 * started (h_execd_command.c), from any thread or process of the broker:
 * GET /command/status/{id}, GET /command/{id}/logs (background commands,
 * with a line cursor), DELETE /command?id= (interrupt). Each reads or
 * kills the state the runner keeps in the sandbox (execd_scripts.h); a
 * foreground command of this process whose runner has not started yet is
 * known from execd_streams.h. */
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
#include "core/timeutil.h"
#include "codec/utf8.h"

static bool cmd_id_valid(const char *s)
{
        size_t n = strlen(s);

        if (n == 0 || n > 64)
                return false;
        for (; *s; s++)
                if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
                        return false;
        return true;
}

/* value of "key=" line in text, copied into out */
static void kv_get(const char *text, const char *key, char *out, size_t size)
{
        size_t kl = strlen(key);

        out[0] = '\0';
        for (const char *p = text; p && *p;) {
                const char *nl = strchr(p, '\n');
                size_t len = nl ? (size_t)(nl - p) : strlen(p);
                if (len > kl && strncmp(p, key, kl) == 0 && p[kl] == '=') {
                        size_t n = len - kl - 1 < size - 1 ? len - kl - 1 : size - 1;
                        memcpy(out, p + kl + 1, n);
                        out[n] = '\0';
                        return;
                }
                p = nl ? nl + 1 : NULL;
        }
}

static void add_time(struct json_object *o, const char *name, const char *ms)
{
        char iso[40];
        char *end;
        long long v = strtoll(ms, &end, 10);

        if (!*ms || *end || timeutil_format_iso(v, iso, sizeof(iso)) < 0)
                json_object_object_add(o, name, NULL);
        else
                json_object_object_add(o, name, json_object_new_string(iso));
}

void h_execd_command_status(struct request *req)
{
        const char *id = req->path_arg2;
        struct exec_result res = { 0 };
        struct json_object *o;
        char start[32], pid[32], rc[16], end[32], alive[4];
        const char *content;
        struct execd x;
        bool running;

        if (execd_open(req, &x, true) < 0)
                return;
        if (!cmd_id_valid(id)) {
                reply_error(req, API_NOT_FOUND, "no command %.64s", id);
                return;
        }
        const char *argv[] = { "sh", "-c", EXECD_SH_STATUS, "sh", id, NULL };
        if (execd_run(req, &x, argv, NULL, 0, 256 * 1024, &res) < 0)
                return;
        if (res.exit_code == EXECD_X_NOT_FOUND && execd_streams_find(x.sandbox_id, id, false)) {
                /* a foreground command of ours whose runner has not started yet */
                o = json_object_new_object();
                json_object_object_add(o, "id", json_object_new_string(id));
                json_object_object_add(o, "running", json_object_new_boolean(true));
                json_object_object_add(o, "exit_code", NULL);
                json_object_object_add(o, "finished_at", NULL);
                reply_json(req, 200, o);
                json_put(o);
                goto out;
        }
        if (res.exit_code != 0) {
                reply_error(req, API_NOT_FOUND, "no command %s in sandbox %s", id, x.sandbox_id);
                goto out;
        }
        kv_get(res.out, "start", start, sizeof(start));
        kv_get(res.out, "pid", pid, sizeof(pid));
        kv_get(res.out, "rc", rc, sizeof(rc));
        kv_get(res.out, "end", end, sizeof(end));
        kv_get(res.out, "alive", alive, sizeof(alive));
        /* the command text follows the six key=value lines */
        content = res.out;
        for (int i = 0; i < 6 && content; i++) {
                content = strchr(content, '\n');
                content = content ? content + 1 : NULL;
        }
        running = !rc[0] && (alive[0] == '1' || !pid[0]);
        o = json_object_new_object();
        json_object_object_add(o, "id", json_object_new_string(id));
        if (content) {
                char *clean = NULL;
                size_t n = 0;
                if (utf8_sanitize(content, strlen(content), &clean, &n) == 0)
                        json_object_object_add(o, "content", json_object_new_string_len(clean, (int)n));
                free(clean);
        }
        json_object_object_add(o, "running", json_object_new_boolean(running));
        json_object_object_add(o, "exit_code", rc[0] ? json_object_new_int(atoi(rc)) : NULL);
        if (!running && !rc[0])
                json_object_object_add(o, "error", json_object_new_string("the command's process vanished"));
        else if (rc[0] && atoi(rc) != 0)
                json_object_object_add(o, "error", json_object_new_string(
                        atoi(rc) == 137 ? "killed (SIGKILL: timeout or interrupt)" : "non-zero exit status"));
        add_time(o, "started_at", start);
        add_time(o, "finished_at", running ? "" : end);
        reply_json(req, 200, o);
        json_put(o);
out:
        exec_result_free(&res);
}

void h_execd_command_logs(struct request *req)
{
        const char *id = req->path_arg2;
        struct exec_result res = { 0 };
        char cur[32] = "0", hdr[96], *end;
        long long cursor = 0, done = 0, nl_total = 0, next;
        const char *body;
        size_t len, keep;
        struct execd x;
        int r;

        if (execd_open(req, &x, true) < 0)
                return;
        if (!cmd_id_valid(id)) {
                reply_error(req, API_NOT_FOUND, "no command %.64s", id);
                return;
        }
        r = request_query_param(req, "cursor", cur, sizeof(cur));
        if (r == 0) {
                cursor = strtoll(cur, &end, 10);
                if (!cur[0] || *end || cursor < 0) {
                        reply_error(req, API_INVALID_REQUEST, "cursor must be a non-negative integer");
                        return;
                }
        } else if (r != -ENOENT) {
                reply_error(req, API_INVALID_REQUEST, "cursor must be a non-negative integer");
                return;
        }
        snprintf(cur, sizeof(cur), "%lld", cursor);
        const char *argv[] = { "sh", "-c", EXECD_SH_LOGS, "sh", id, cur, NULL };
        if (execd_run(req, &x, argv, NULL, 0, (size_t)req->w->cfg->exec_max_output, &res) < 0)
                return;
        if (res.exit_code == EXECD_X_NOT_FOUND) {
                reply_error(req, API_NOT_FOUND, "no command %s in sandbox %s", id, x.sandbox_id);
                goto out;
        }
        if (res.exit_code == EXECD_X_NOT_BACKGROUND) {
                reply_error(req, API_INVALID_REQUEST,
                            "command %s is not a background command: its output was streamed", id);
                goto out;
        }
        if (res.exit_code != 0 || !res.out || sscanf(res.out, "%lld %lld", &done, &nl_total) != 2) {
                reply_error(req, API_SANDBOX_FAILED, "cannot read the logs of command %s", id);
                goto out;
        }
        body = strchr(res.out, '\n');
        body = body ? body + 1 : res.out + res.out_len;
        len = res.out_len - (size_t)(body - res.out);
        /* Only complete lines while it runs (a partial last line would be
         * counted twice); everything once it ended, unless cut by the cap. */
        keep = len;
        if (!done || res.out_truncated) {
                while (keep > 0 && body[keep - 1] != '\n')
                        keep--;
        }
        /* cursor = lines already read; the next one = lines read after this */
        next = cursor < nl_total ? cursor : nl_total;
        for (size_t i = 0; i < keep; i++)
                next += body[i] == '\n';
        if (keep > 0 && body[keep - 1] != '\n')
                next++; /* the unterminated last line of an ended command */
        if (cursor > nl_total)
                next = done ? (cursor < nl_total + 1 ? cursor : nl_total + 1) : nl_total;
        snprintf(hdr, sizeof(hdr), "EXECD-COMMANDS-TAIL-CURSOR: %lld\r\n", next);
        execd_reply_headers(req, 200, "text/plain; charset=utf-8", hdr);
        FCGX_PutStr(body, (int)keep, req->fcgx->out);
out:
        exec_result_free(&res);
}

void h_execd_command_interrupt(struct request *req)
{
        struct exec_result res = { 0 };
        char id[72], err[PROVIDER_ERR_MAX] = "";
        struct execd x;
        bool known;
        int r;

        if (execd_open(req, &x, true) < 0)
                return;
        if (request_query_param(req, "id", id, sizeof(id)) < 0 || !cmd_id_valid(id)) {
                reply_error(req, API_INVALID_REQUEST, "the id query parameter must name a command");
                return;
        }
        known = execd_streams_find(x.sandbox_id, id, true);
        r = execd_command_kill(req, &x, id, known, &res, err);
        if (r < 0) {
                execd_reply_provider(req, &x, r, "interrupt", err);
                goto out;
        }
        if (res.exit_code == EXECD_X_NOT_FOUND) {
                reply_error(req, API_NOT_FOUND, "no running command %s in sandbox %s", id, x.sandbox_id);
                goto out;
        }
        log_info(execd_kv(req, &x), "command %s interrupted", id);
        reply_empty(req, 200);
out:
        exec_result_free(&res);
}

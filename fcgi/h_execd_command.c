/* h_execd_command: the command part of the execd contract, served by the
 * broker (execd-api.yaml: POST /command, DELETE /command?id=,
 * GET /command/status/{id}, GET /command/{id}/logs).
 *
 * Design. The broker has no daemon inside the sandbox; every command runs
 * through the provider's exec under a small runner script (RUN_SCRIPT) that
 * keeps the command's state in files of the sandbox, EXECD_CMD_DIR/<id>.*:
 *   cmd    the command text          start/end  epoch ms
 *   pid    the command's process group (it runs in its own session, setsid)
 *   rc     the exit code, written by the runner when the command ended
 *   bg     marker of a background command; out: its stdout+stderr (as execd)
 * So status, logs and interrupt work from any broker thread or process, and
 * survive a restart of the broker: they read (or kill) what the files name.
 *
 * - Foreground: the runner is exec'ed with its output streamed
 *   (provider exec_stream) and turned into SSE events as it arrives: `init`
 *   (text = command id), one `stdout`/`stderr` event per line, `ping` every
 *   EXECD_PING_MS of silence, then `execution_complete` (exit 0) or `error`
 *   (ename CommandExecError, evalue = exit code, as execd does). Each event
 *   is one `data: <json>\n\n` frame, flushed at once.
 * - Background: a synchronous pre-check (cwd exists, fewer than
 *   EXECD_MAX_COMMANDS live commands), then the runner started detached with
 *   its output appended to <id>.out; the answer is `init` +
 *   `execution_complete` at once, as execd answers.
 * - Timeouts: the runner runs the command under `timeout -s KILL` inside
 *   its session (so the whole group dies); interrupt kills the group.
 * Bounds: EXECD_STREAM_OUTPUT_MAX bytes of output events per stream (the
 * rest is drained and counted), lines cut at EXECD_LINE_MAX bytes,
 * EXECD_STREAMS_PER_SANDBOX foreground streams per sandbox and all but
 * EXECD_THREADS_RESERVED of the handler's threads (so status and interrupt
 * stay servable), a foreground command at most EXECD_FOREGROUND_MAX_MS. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "execd.h"
#include "linebuf.h"
#include "json_input.h"
#include "log.h"
#include "routes.h"
#include "timeutil.h"
#include "utf8.h"

#define EXECD_PING_MS 3000
#define EXECD_LINE_MAX (64 * 1024)
#define EXECD_STREAM_OUTPUT_MAX (64 * 1024 * 1024)
#define EXECD_STREAMS_PER_SANDBOX 8
#define EXECD_STREAMS_MAX 256
#define EXECD_THREADS_RESERVED 4
#define EXECD_MAX_COMMANDS 32 /* live commands per sandbox (background launch) */
#define EXECD_FOREGROUND_MAX_MS (3600 * 1000)
#define EXECD_WRAPPER_SLACK_MS 10000 /* the provider's own timeout, past the runner's */
#define EXECD_MAX_ARGS 256
#define EXECD_MAX_ENV 64

/* ID TIMEOUT CWD KIND(sh|argv) BG(0|1) CMD... */
static const char RUN_SCRIPT[] =
        "D=" EXECD_CMD_DIR "; f=\"$D/$1\"; to=$2; cwd=$3; kind=$4; bg=$5; shift 5\n"
        "mkdir -p -m 1777 \"$D\" 2>/dev/null; umask 077\n"
        "[ -e \"$f.cmd\" ] || printf '%s' \"$*\" >\"$f.cmd\"\n"
        "[ -e \"$f.start\" ] || date +%s%3N >\"$f.start\"\n"
        "[ \"$bg\" = 1 ] && exec >>\"$f.out\" 2>&1 </dev/null\n"
        "if ! cd -- \"$cwd\" 2>/dev/null; then\n"
        "  echo \"cwd $cwd: no such directory\" >&2; echo 1 >\"$f.rc\"; date +%s%3N >\"$f.end\"; exit 1\n"
        "fi\n"
        "sh=sh; command -v bash >/dev/null 2>&1 && sh=bash\n"
        "[ \"$kind\" = sh ] && set -- \"$sh\" -c \"$1\"\n"
        "[ \"$to\" = 0 ] || set -- timeout -s KILL \"$to\" \"$@\"\n"
        "setsid -w sh -c 'echo $$ >\"$0.pid\"; exec \"$@\"' \"$f\" \"$@\"\n"
        "rc=$?\n"
        "echo $rc >\"$f.rc\"; date +%s%3N >\"$f.end\"\n"
        "exit $rc\n";

/* ID CWD MAX CONTENT: exit 76 no cwd, 75 too many live commands. */
static const char BG_PRECHECK_SCRIPT[] =
        "D=" EXECD_CMD_DIR "; f=\"$D/$1\"\n"
        "mkdir -p -m 1777 \"$D\" || exit 70; umask 077\n"
        "[ -d \"$2\" ] || exit 76\n"
        "n=0; for p in \"$D\"/*.pid; do [ -e \"$p\" ] || continue; [ -e \"${p%.pid}.rc\" ] && continue\n"
        "  q=$(cat \"$p\" 2>/dev/null); [ -n \"$q\" ] && [ -d \"/proc/$q\" ] && n=$((n+1)); done\n"
        "[ \"$n\" -lt \"$3\" ] || exit 75\n"
        "printf '%s' \"$4\" >\"$f.cmd\"; date +%s%3N >\"$f.start\"; : >\"$f.bg\"\n";

/* ID: key=value lines, then the command text. exit 44: unknown. */
static const char STATUS_SCRIPT[] =
        "f=" EXECD_CMD_DIR "/$1\n"
        "[ -e \"$f.start\" ] || exit 44\n"
        "s=$(cat \"$f.start\" 2>/dev/null); p=$(cat \"$f.pid\" 2>/dev/null)\n"
        "rc=$(cat \"$f.rc\" 2>/dev/null); e=$(cat \"$f.end\" 2>/dev/null)\n"
        "alive=0; [ -n \"$p\" ] && [ -d \"/proc/$p\" ] && alive=1\n"
        "if [ -z \"$rc\" ] && [ $alive = 0 ] && [ -n \"$p\" ]; then sleep 0.2\n"
        "  rc=$(cat \"$f.rc\" 2>/dev/null); e=$(cat \"$f.end\" 2>/dev/null); fi\n"
        "bg=0; [ -e \"$f.bg\" ] && bg=1\n"
        "printf 'start=%s\\npid=%s\\nrc=%s\\nend=%s\\nalive=%s\\nbg=%s\\n' \"$s\" \"$p\" \"$rc\" \"$e\" $alive $bg\n"
        "cat \"$f.cmd\" 2>/dev/null\n";

/* ID CURSOR: "done newlines size", then the output from line CURSOR on.
 * exit 44: unknown, 45: not a background command. */
static const char LOGS_SCRIPT[] =
        "f=" EXECD_CMD_DIR "/$1\n"
        "[ -e \"$f.start\" ] || exit 44\n"
        "[ -e \"$f.bg\" ] || exit 45\n"
        "d=0; [ -e \"$f.rc\" ] && d=1\n"
        "sz=$(stat -c %s \"$f.out\" 2>/dev/null || echo 0)\n"
        "n=$(head -c \"$sz\" \"$f.out\" 2>/dev/null | wc -l)\n"
        "echo \"$d $n $sz\"\n"
        "head -c \"$sz\" \"$f.out\" 2>/dev/null | tail -n +\"$(($2 + 1))\"\n";

/* ID KNOWN: kill the command's process group. exit 44: unknown. KNOWN=1
 * (a foreground command of this process) waits for its pid file. */
static const char INTERRUPT_SCRIPT[] =
        "f=" EXECD_CMD_DIR "/$1\n"
        "[ -e \"$f.start\" ] || [ \"$2\" = 1 ] || exit 44\n"
        "i=0; while [ ! -s \"$f.pid\" ] && [ ! -e \"$f.rc\" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done\n"
        "[ -e \"$f.rc\" ] && exit 0\n"
        "[ -s \"$f.pid\" ] || exit 44\n"
        "kill -s KILL -- \"-$(cat \"$f.pid\")\" 2>/dev/null\n"
        "exit 0\n";

/* ---- foreground streams of this process ---- */

struct stream_slot {
        bool used, interrupted;
        char sid[64];
        char cmd_id[33];
};

static struct {
        pthread_mutex_t lock;
        struct stream_slot slot[EXECD_STREAMS_MAX];
} streams = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* Take a slot for (sid, id); -EAGAIN over a cap. */
static int stream_take(const struct request *req, const char *sid, const char *id, int *ret_slot)
{
        int per = 0, total = 0, free_i = -1;
        int cap = req->w->cfg->fcgi_threads - EXECD_THREADS_RESERVED;

        if (cap < 1)
                cap = 1;
        pthread_mutex_lock(&streams.lock);
        for (int i = 0; i < EXECD_STREAMS_MAX; i++) {
                if (!streams.slot[i].used) {
                        if (free_i < 0)
                                free_i = i;
                        continue;
                }
                total++;
                if (strcmp(streams.slot[i].sid, sid) == 0)
                        per++;
        }
        if (free_i >= 0 && per < EXECD_STREAMS_PER_SANDBOX && total < cap) {
                struct stream_slot *s = &streams.slot[free_i];
                *s = (struct stream_slot){ .used = true };
                snprintf(s->sid, sizeof(s->sid), "%s", sid);
                snprintf(s->cmd_id, sizeof(s->cmd_id), "%s", id);
        }
        pthread_mutex_unlock(&streams.lock);
        *ret_slot = free_i;
        return free_i >= 0 && per < EXECD_STREAMS_PER_SANDBOX && total < cap ? 0 : -EAGAIN;
}

static void stream_put(int i)
{
        pthread_mutex_lock(&streams.lock);
        streams.slot[i].used = false;
        pthread_mutex_unlock(&streams.lock);
}

/* Is (sid, id) a foreground stream of this process? With mark, flags it
 * interrupted. */
static bool stream_find(const char *sid, const char *id, bool mark)
{
        bool found = false;

        pthread_mutex_lock(&streams.lock);
        for (int i = 0; i < EXECD_STREAMS_MAX; i++) {
                struct stream_slot *s = &streams.slot[i];
                if (s->used && strcmp(s->sid, sid) == 0 && strcmp(s->cmd_id, id) == 0) {
                        found = true;
                        s->interrupted |= mark;
                        break;
                }
        }
        pthread_mutex_unlock(&streams.lock);
        return found;
}

static bool stream_interrupted(int i)
{
        bool v;

        pthread_mutex_lock(&streams.lock);
        v = streams.slot[i].interrupted;
        pthread_mutex_unlock(&streams.lock);
        return v;
}

/* ---- the request ---- */

struct cmd_req {
        const char *command;          /* shell text, or NULL with argv */
        const char *argv[EXECD_MAX_ARGS + 1];
        int argc;
        char cwd[EXECD_PATH_MAX];
        char *env[EXECD_MAX_ENV + 1]; /* owned */
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

/* RunCommandRequest (execd-api.yaml; `argv` as newer SDKs send it).
 * Replies and returns -1 on error. */
static int cmd_parse(struct request *req, struct json_object *body, struct cmd_req *c)
{
        struct json_object *v, *uid = NULL, *gid = NULL;
        int n = 0;

        memset(c, 0, sizeof(*c));
        snprintf(c->cwd, sizeof(c->cwd), "%s", EXECD_DEFAULT_CWD);
        snprintf(c->user, sizeof(c->user), "root");
        if (json_object_object_get_ex(body, "command", &v) && !json_object_is_type(v, json_type_null)) {
                if (!json_str_clean(v) || json_object_get_string_len(v) == 0) {
                        reply_error(req, API_INVALID_REQUEST, "command must be a non-empty string");
                        return -1;
                }
                c->command = json_object_get_string(v);
        } else if (json_object_object_get_ex(body, "argv", &v) &&
                   json_object_is_type(v, json_type_array) && json_object_array_length(v) > 0 &&
                   json_object_array_length(v) <= EXECD_MAX_ARGS) {
                for (size_t i = 0; i < json_object_array_length(v); i++) {
                        struct json_object *a = json_object_array_get_idx(v, i);
                        if (!json_str_clean(a) || (i == 0 && json_object_get_string_len(a) == 0)) {
                                reply_error(req, API_INVALID_REQUEST,
                                            "argv must be strings without NUL, argv[0] non-empty");
                                return -1;
                        }
                        c->argv[c->argc++] = json_object_get_string(a);
                }
        } else {
                reply_error(req, API_INVALID_REQUEST,
                            "command (a string) or argv (1 to %d strings) is required", EXECD_MAX_ARGS);
                return -1;
        }
        if (json_object_object_get_ex(body, "cwd", &v) && !json_object_is_type(v, json_type_null)) {
                if (!json_str_clean(v) ||
                    execd_path_normalize(json_object_get_string(v), c->cwd, sizeof(c->cwd)) < 0) {
                        reply_error(req, API_INVALID_REQUEST, "cwd must be a path");
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

/* ---- SSE ---- */

struct sse {
        struct request *req;
        int64_t last_ms;     /* when the last event went out (monotonic) */
        bool broken;         /* the client is gone */
        size_t out_bytes;    /* output sent as events */
        size_t dropped;      /* output over EXECD_STREAM_OUTPUT_MAX */
        struct linebuf lb[2];
};

static void sse_begin(struct sse *s, struct request *req)
{
        memset(s, 0, sizeof(*s));
        s->req = req;
        s->last_ms = timeutil_mono_ms();
        s->lb[0].max = s->lb[1].max = EXECD_LINE_MAX;
        /* X-Accel-Buffering: nginx passes each event on at once. */
        execd_reply_headers(req, 200, "text/event-stream",
                            "X-Accel-Buffering: no\r\n");
        FCGX_FFlush(req->fcgx->out);
}

/* Send one event; o (borrowed) gets type and timestamp added. */
static int sse_send(struct sse *s, const char *type, struct json_object *o)
{
        const char *js;

        if (s->broken)
                return -EPIPE;
        json_object_object_add(o, "type", json_object_new_string(type));
        json_object_object_add(o, "timestamp", json_object_new_int64(timeutil_now_ms()));
        js = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        if (!js || FCGX_PutS("data: ", s->req->fcgx->out) < 0 ||
            FCGX_PutS(js, s->req->fcgx->out) < 0 || FCGX_PutS("\n\n", s->req->fcgx->out) < 0 ||
            FCGX_FFlush(s->req->fcgx->out) < 0) {
                s->broken = true;
                return -EPIPE;
        }
        s->last_ms = timeutil_mono_ms();
        return 0;
}

static int sse_text(struct sse *s, const char *type, const char *text, size_t len)
{
        struct json_object *o = json_object_new_object();
        char *clean = NULL;
        size_t n = 0;
        int r = -ENOMEM;

        if (o && utf8_sanitize(text, len, &clean, &n) == 0) {
                json_object_object_add(o, "text", json_object_new_string_len(clean, (int)n));
                r = sse_send(s, type, o);
        }
        free(clean);
        json_put(o);
        return r;
}

struct line_ctx {
        struct sse *s;
        const char *type;
};

/* One line of output: an event, unless over the cap (then only counted).
 * An empty line is "\n", as execd's tail reports it. */
static int on_line(void *ud, const char *line, size_t len)
{
        struct line_ctx *lc = ud;
        struct sse *s = lc->s;

        if (s->out_bytes + len > EXECD_STREAM_OUTPUT_MAX) {
                s->dropped += len + 1;
                return 0;
        }
        s->out_bytes += len + 1;
        return len ? sse_text(s, lc->type, line, len) : sse_text(s, lc->type, "\n", 1);
}

static int on_output(void *ud, int stream, const char *data, size_t len)
{
        struct sse *s = ud;
        struct line_ctx lc = { s, stream == 2 ? "stderr" : "stdout" };

        return linebuf_feed(&s->lb[stream == 2], data, len, on_line, &lc);
}

static int on_tick(void *ud)
{
        struct sse *s = ud;
        struct json_object *o;
        int r;

        if (timeutil_mono_ms() - s->last_ms < EXECD_PING_MS)
                return 0;
        o = json_object_new_object();
        if (!o)
                return -ENOMEM;
        json_object_object_add(o, "text", json_object_new_string("pong"));
        r = sse_send(s, "ping", o);
        json_put(o);
        return r;
}

static int sse_flush_lines(struct sse *s)
{
        struct line_ctx out = { s, "stdout" }, err = { s, "stderr" };
        int r = linebuf_flush(&s->lb[0], on_line, &out);

        if (r == 0)
                r = linebuf_flush(&s->lb[1], on_line, &err);
        return r;
}

static void sse_end(struct sse *s)
{
        linebuf_release(&s->lb[0]);
        linebuf_release(&s->lb[1]);
}

static void sse_complete(struct sse *s, int64_t ms)
{
        struct json_object *o = json_object_new_object();

        if (!o)
                return;
        json_object_object_add(o, "execution_time", json_object_new_int64(ms));
        sse_send(s, "execution_complete", o);
        json_put(o);
}

/* The `error` event: execd's ename/evalue/traceback. */
static void sse_error(struct sse *s, const char *evalue, const char *why)
{
        struct json_object *o = json_object_new_object(), *e = json_object_new_object(),
                           *tb = json_object_new_array();

        if (!o || !e || !tb) {
                json_put(o);
                json_put(e);
                json_put(tb);
                return;
        }
        json_object_array_add(tb, json_object_new_string(why));
        json_object_object_add(e, "ename", json_object_new_string("CommandExecError"));
        json_object_object_add(e, "evalue", json_object_new_string(evalue));
        json_object_object_add(e, "traceback", tb);
        json_object_object_add(o, "error", e);
        sse_send(s, "error", o);
        json_put(o);
}

/* ---- POST /command ---- */

/* The runner's argv for c with id; storage in to. */
static const char **runner_argv(const struct cmd_req *c, const char *id, int64_t to_ms, bool bg,
                                char *to, size_t to_size, const char **argv)
{
        int i = 0;

        if (to_ms > 0)
                snprintf(to, to_size, "%lld.%03lld", (long long)(to_ms / 1000), (long long)(to_ms % 1000));
        else
                snprintf(to, to_size, "0");
        argv[i++] = "sh";
        argv[i++] = "-c";
        argv[i++] = RUN_SCRIPT;
        argv[i++] = "sh";
        argv[i++] = id;
        argv[i++] = to;
        argv[i++] = c->cwd;
        argv[i++] = c->command ? "sh" : "argv";
        argv[i++] = bg ? "1" : "0";
        if (c->command)
                argv[i++] = c->command;
        for (int k = 0; k < c->argc; k++)
                argv[i++] = c->argv[k];
        argv[i] = NULL;
        return argv;
}

/* Kill a command of x (best effort): the interrupt script. */
static int cmd_kill(struct request *req, const struct execd *x, const char *id, bool known,
                    struct exec_result *res, char *err)
{
        const char *argv[] = { "sh", "-c", INTERRUPT_SCRIPT, "sh", id, known ? "1" : "0", NULL };
        struct exec_spec spec = { .argv = argv, .user = "root", .cwd = "/",
                                  .timeout_ms = req->w->cfg->exec_timeout_ms, .max_output = 4096 };

        return req->w->provider->ops->exec(req->w->provider, x->ref, &spec, res, err);
}

static void cmd_background(struct request *req, const struct execd *x, const struct cmd_req *c,
                           const char *id)
{
        const char *argv[EXECD_MAX_ARGS + 16];
        char max[16], to[32], err[PROVIDER_ERR_MAX] = "", *content = NULL;
        struct exec_result res = { 0 };
        struct exec_spec spec = { 0 };
        struct sse s;
        int64_t t0 = timeutil_mono_ms();
        int r;

        /* the text status reports: the command, or argv joined */
        if (c->command) {
                content = strdup(c->command);
        } else {
                size_t n = 0, o = 0;
                for (int k = 0; k < c->argc; k++)
                        n += strlen(c->argv[k]) + 1;
                content = malloc(n + 1);
                for (int k = 0; content && k < c->argc; k++)
                        o += (size_t)sprintf(content + o, "%s%s", k ? " " : "", c->argv[k]);
        }
        if (!content) {
                reply_error(req, API_INTERNAL, "out of memory");
                return;
        }
        snprintf(max, sizeof(max), "%d", EXECD_MAX_COMMANDS);
        const char *pre[] = { "sh", "-c", BG_PRECHECK_SCRIPT, "sh", id, c->cwd, max, content, NULL };
        if (execd_run(req, x, pre, NULL, 0, 4096, &res) < 0)
                goto out;
        if (res.exit_code == 76) {
                reply_error(req, API_INVALID_REQUEST, "cwd %s is not a directory", c->cwd);
                goto out;
        }
        if (res.exit_code == 75) {
                reply_error(req, API_TOO_MANY_REQUESTS, "sandbox %s already runs %d commands",
                            x->sandbox_id, EXECD_MAX_COMMANDS);
                goto out;
        }
        if (res.exit_code != 0) {
                reply_error(req, API_SANDBOX_FAILED, "cannot prepare the command: %.200s",
                            res.err ? res.err : "");
                goto out;
        }
        spec = (struct exec_spec){ .argv = runner_argv(c, id, c->timeout_ms, true, to, sizeof(to), argv),
                                   .env = (const char *const *)c->env, .user = c->user, .cwd = "/",
                                   .timeout_ms = req->w->cfg->exec_timeout_ms, .detach = true };
        exec_result_free(&res);
        r = req->w->provider->ops->exec(req->w->provider, x->ref, &spec, &res, err);
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

static void cmd_foreground(struct request *req, const struct execd *x, const struct cmd_req *c,
                           const char *id)
{
        const char *argv[EXECD_MAX_ARGS + 16];
        char to[32], err[PROVIDER_ERR_MAX] = "", why[160], ev[16];
        struct exec_result res = { 0 };
        int64_t to_ms = c->timeout_ms > 0 && c->timeout_ms < EXECD_FOREGROUND_MAX_MS
                                ? c->timeout_ms : EXECD_FOREGROUND_MAX_MS;
        struct exec_spec spec = {
                .argv = runner_argv(c, id, to_ms, false, to, sizeof(to), argv),
                .env = (const char *const *)c->env, .user = c->user, .cwd = "/",
                .timeout_ms = (int)(to_ms + EXECD_WRAPPER_SLACK_MS),
                .max_output = (size_t)req->w->cfg->exec_max_output,
        };
        struct sse s;
        struct exec_stream_cb cb = { .on_output = on_output, .on_tick = on_tick, .ud = &s };
        int64_t t0;
        int slot, r;

        if (stream_take(req, x->sandbox_id, id, &slot) < 0) {
                reply_error(req, API_TOO_MANY_REQUESTS,
                            "too many commands streaming (at most %d per sandbox); retry later",
                            EXECD_STREAMS_PER_SANDBOX);
                return;
        }
        sse_begin(&s, req);
        sse_text(&s, "init", id, strlen(id));
        t0 = timeutil_mono_ms();
        if (req->w->provider->ops->exec_stream) {
                r = req->w->provider->ops->exec_stream(req->w->provider, x->ref, &spec, &cb, &res, err);
        } else {
                /* a backend without streaming: the output at the end, stdout first */
                r = req->w->provider->ops->exec(req->w->provider, x->ref, &spec, &res, err);
                if (r == 0 && res.out_len)
                        r = on_output(&s, 1, res.out, res.out_len);
                if (r == 0 && res.err_len)
                        r = on_output(&s, 2, res.err, res.err_len);
        }
        if (r == 0)
                r = sse_flush_lines(&s);
        if (r < 0 && s.broken) {
                /* the client went away: the command must not outlive its stream */
                struct exec_result kr = { 0 };
                char kerr[PROVIDER_ERR_MAX] = "";
                log_info(execd_kv(req, x), "command %s: client gone, killing it", id);
                cmd_kill(req, x, id, true, &kr, kerr);
                exec_result_free(&kr);
                goto out;
        }
        if (r < 0) {
                log_err(execd_kv(req, x), "command %s failed: %s (%s)", id, err, strerror(-r));
                snprintf(why, sizeof(why), "%s", err[0] ? err : strerror(-r));
                sse_error(&s, why, why);
                goto out;
        }
        if (s.dropped) {
                char note[128];
                int n = snprintf(note, sizeof(note), "[output truncated: %zu bytes over the %d-byte limit]",
                                 s.dropped, EXECD_STREAM_OUTPUT_MAX);
                sse_text(&s, "stderr", note, (size_t)n);
        }
        if (res.exit_code == 0 && !res.timed_out) {
                sse_complete(&s, timeutil_mono_ms() - t0);
                goto out;
        }
        snprintf(ev, sizeof(ev), "%d", res.exit_code);
        if (stream_interrupted(slot))
                snprintf(why, sizeof(why), "interrupted (killed)");
        else if (res.exit_code == 137 && timeutil_mono_ms() - t0 >= to_ms - 1000)
                snprintf(why, sizeof(why), "timed out after %lld ms (killed)", (long long)to_ms);
        else
                snprintf(why, sizeof(why), "exit status %d", res.exit_code);
        sse_error(&s, ev, why);
out:
        sse_end(&s);
        exec_result_free(&res);
        stream_put(slot);
}

void h_execd_run_command(struct request *req)
{
        struct json_object *body = NULL;
        struct cmd_req c;
        struct execd x;
        char id[33];

        memset(&c, 0, sizeof(c));
        if (execd_open(req, &x, true) < 0 || request_json_body(req, &body) < 0 ||
            cmd_parse(req, body, &c) < 0)
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

/* ---- status, logs, interrupt ---- */

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
        const char *argv[] = { "sh", "-c", STATUS_SCRIPT, "sh", id, NULL };
        if (execd_run(req, &x, argv, NULL, 0, 256 * 1024, &res) < 0)
                return;
        if (res.exit_code == 44 && stream_find(x.sandbox_id, id, false)) {
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
        const char *argv[] = { "sh", "-c", LOGS_SCRIPT, "sh", id, cur, NULL };
        if (execd_run(req, &x, argv, NULL, 0, (size_t)req->w->cfg->exec_max_output, &res) < 0)
                return;
        if (res.exit_code == 44) {
                reply_error(req, API_NOT_FOUND, "no command %s in sandbox %s", id, x.sandbox_id);
                goto out;
        }
        if (res.exit_code == 45) {
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
        known = stream_find(x.sandbox_id, id, true);
        r = cmd_kill(req, &x, id, known, &res, err);
        if (r < 0) {
                execd_reply_provider(req, &x, r, "interrupt", err);
                goto out;
        }
        if (res.exit_code == 44) {
                reply_error(req, API_NOT_FOUND, "no running command %s in sandbox %s", id, x.sandbox_id);
                goto out;
        }
        log_info(execd_kv(req, &x), "command %s interrupted", id);
        reply_empty(req, 200);
out:
        exec_result_free(&res);
}

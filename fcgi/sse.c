/* sse: see sse.h. */
#include "sse.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "execd.h"
#include "core/json_input.h"
#include "core/timeutil.h"
#include "codec/utf8.h"

void sse_begin(struct sse *s, struct request *req)
{
        memset(s, 0, sizeof(*s));
        s->req = req;
        s->last_ms = timeutil_mono_ms();
        s->lb[0].max = s->lb[1].max = SSE_LINE_MAX;
        /* X-Accel-Buffering: nginx passes each event on at once. */
        execd_reply_headers(req, 200, "text/event-stream",
                            "X-Accel-Buffering: no\r\n");
        FCGX_FFlush(req->fcgx->out);
}

void sse_begin_events(struct sse *s, struct request *req)
{
        sse_begin(s, req);
        s->events = true;
        s->lb[0].max = SSE_EVENT_LINE_MAX;
}

/* Send one event; o (borrowed) gets type and timestamp added. */
static int sse_send(struct sse *s, const char *type, struct json_object *o)
{
        if (s->broken)
                return -EPIPE;
        json_object_object_add(o, "type", json_object_new_string(type));
        json_object_object_add(o, "timestamp", json_object_new_int64(timeutil_now_ms()));
        return sse_data(s, o);
}

int sse_data(struct sse *s, struct json_object *o)
{
        const char *js;

        if (s->broken)
                return -EPIPE;
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

int sse_text(struct sse *s, const char *type, const char *text, size_t len)
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
        const struct linebuf *lb; /* whose `ended` says if the line had a terminator */
};

/* One line of output: an event, unless over the cap (then only counted).
 * A line that ended carries "\n" (whatever its terminator was: "\r\n" and
 * "\r" too), as execd-api.yaml's example event does ("Hello, World!\n"), so
 * a client that writes the texts as they come (osb's raw output) or joins
 * them prints the output as it was; an empty line is "\n". A piece of a
 * longer line, and an unterminated last line, carry none. */
static int on_line(void *ud, const char *line, size_t len)
{
        struct line_ctx *lc = ud;
        struct sse *s = lc->s;
        char *text;
        int r;

        if (s->out_bytes + len > SSE_OUTPUT_MAX) {
                s->dropped += len + 1;
                return 0;
        }
        s->out_bytes += len + 1;
        if (!lc->lb->ended)
                return sse_text(s, lc->type, line, len);
        text = malloc(len + 1);
        if (!text)
                return -ENOMEM;
        memcpy(text, line, len);
        text[len] = '\n';
        r = sse_text(s, lc->type, text, len + 1);
        free(text);
        return r;
}

/* Events mode: one stdout line, a JSON event of the command's own. */
static int on_event(void *ud, const char *line, size_t len)
{
        static const char *const types[] = { SSE_EVENT_TYPES };
        struct line_ctx *lc = ud;
        struct sse *s = lc->s;
        struct json_object *o = NULL;
        const char *type;
        char *clean = NULL, err[96];
        size_t n = 0;
        int r = 0;

        if (!lc->lb->ended || s->out_bytes + len > SSE_OUTPUT_MAX) {
                s->dropped += len + 1; /* a piece of an over-long line, or over the cap */
                return 0;
        }
        s->out_bytes += len + 1;
        if (utf8_sanitize(line, len, &clean, &n) < 0)
                return -ENOMEM;
        if (json_input_parse_object(clean, n, JSON_INPUT_MAX_DEPTH, &o, err, sizeof(err)) < 0 ||
            !(type = json_get_str(o, "type"))) {
                s->dropped += len + 1;
                goto out;
        }
        for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
                if (strcmp(type, types[i]) == 0) {
                        json_object_object_add(o, "timestamp", json_object_new_int64(timeutil_now_ms()));
                        r = sse_data(s, o);
                        goto out;
                }
        s->dropped += len + 1;
out:
        json_put(o);
        free(clean);
        return r;
}

int sse_on_output(void *ud, int stream, const char *data, size_t len)
{
        struct sse *s = ud;
        struct line_ctx lc = { s, stream == 2 ? "stderr" : "stdout", &s->lb[stream == 2] };

        return linebuf_feed(&s->lb[stream == 2], data, len,
                            s->events && stream != 2 ? on_event : on_line, &lc);
}

int sse_on_tick(void *ud)
{
        struct sse *s = ud;
        struct json_object *o;
        int r;

        if (timeutil_mono_ms() - s->last_ms < SSE_PING_MS)
                return 0;
        o = json_object_new_object();
        if (!o)
                return -ENOMEM;
        json_object_object_add(o, "text", json_object_new_string("pong"));
        r = sse_send(s, "ping", o);
        json_put(o);
        return r;
}

int sse_flush_lines(struct sse *s)
{
        struct line_ctx out = { s, "stdout", &s->lb[0] }, err = { s, "stderr", &s->lb[1] };
        int r = linebuf_flush(&s->lb[0], s->events ? on_event : on_line, &out);

        if (r == 0)
                r = linebuf_flush(&s->lb[1], on_line, &err);
        return r;
}

void sse_end(struct sse *s)
{
        linebuf_release(&s->lb[0]);
        linebuf_release(&s->lb[1]);
}

void sse_complete(struct sse *s, int64_t ms)
{
        struct json_object *o = json_object_new_object();

        if (!o)
                return;
        json_object_object_add(o, "execution_time", json_object_new_int64(ms));
        sse_send(s, "execution_complete", o);
        json_put(o);
}

void sse_error(struct sse *s, const char *evalue, const char *why)
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

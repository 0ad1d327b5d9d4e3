/* sse: execd's command output as Server-Sent Events (the OpenSandbox
 * execd contract, docs/EXECD.md): each event is one `data: <json>\n\n`
 * frame, flushed at once, with "type" and "timestamp" (epoch ms) added:
 *   init                 {text: command id}
 *   stdout / stderr      {text: one line with "\n" at its end (for any of
 *                        "\n", "\r\n", "\r"), as execd-api.yaml's example;
 *                        none on a piece of a longer line or on an
 *                        unterminated last line; invalid UTF-8 replaced}
 *   ping                 {text: "pong"} after SSE_PING_MS of silence
 *   execution_complete   {execution_time: ms}
 *   error                {error: {ename: CommandExecError, evalue, traceback}}
 *
 * Output is cut into lines as it arrives (lines longer than SSE_LINE_MAX
 * are split); at most SSE_OUTPUT_MAX bytes of it become events, the rest
 * is counted in `dropped`. Once a write fails the client is gone: `broken`
 * is set and every later call returns -EPIPE.
 *
 * Events mode (sse_begin_events; the code interpreter, h_execd_code.c): the
 * command prints its own events, one JSON object per stdout line, as
 * kernel-runner does; each becomes an event as it is (re-serialised, so
 * nothing it prints can break the framing) with "timestamp" added, if its
 * "type" is one of SSE_EVENT_TYPES; other lines, and lines over
 * SSE_EVENT_LINE_MAX, are dropped (counted in `dropped` with the output
 * over SSE_OUTPUT_MAX). stderr lines are stderr events as in the plain mode.
 *
 * One struct sse per answer, on the handler's stack; not thread-safe. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codec/linebuf.h"
#include "request.h"

#define SSE_PING_MS 3000
#define SSE_LINE_MAX (64 * 1024)
#define SSE_OUTPUT_MAX (64 * 1024 * 1024)
#define SSE_EVENT_LINE_MAX (2 * 1024 * 1024) /* one event of events mode, as printed */
/* the types an events-mode command may print (init is the broker's) */
#define SSE_EVENT_TYPES "stdout", "stderr", "result", "error", "execution_count", \
                        "execution_complete", "status"

struct sse {
        struct request *req;
        int64_t last_ms;     /* when the last event went out (monotonic) */
        bool broken;         /* the client is gone */
        size_t out_bytes;    /* output sent as events */
        size_t dropped;      /* output over SSE_OUTPUT_MAX (and bad event lines) */
        bool events;         /* events mode: stdout lines are JSON events */
        struct linebuf lb[2];
};

/* Start the answer: 200 with text/event-stream (nginx told not to buffer),
 * flushed. Marks req answered; end with sse_end. */
void sse_begin(struct sse *s, struct request *req);

/* sse_begin, in events mode (above). */
void sse_begin_events(struct sse *s, struct request *req);

/* One event whose data is o (borrowed) as it is, flushed (metrics/watch:
 * the spec's Metrics object). 0 or -EPIPE. */
struct json_object;
int sse_data(struct sse *s, struct json_object *o);

/* One event of type with {"text": text (len bytes)}. 0, -EPIPE, -ENOMEM. */
int sse_text(struct sse *s, const char *type, const char *text, size_t len);

/* struct exec_stream_cb's callbacks, ud = the struct sse: output of stream
 * (1 stdout, 2 stderr) as line events; a ping when silent too long.
 * 0 or -EPIPE / -ENOMEM (the transfer stops). */
int sse_on_output(void *ud, int stream, const char *data, size_t len);
int sse_on_tick(void *ud);

/* Send what is left of unterminated lines, stdout first. */
int sse_flush_lines(struct sse *s);

/* The last event: execution_complete after ms, or error with evalue (the
 * exit code as text, or a reason) and why (its traceback line). Errors
 * are ignored: nothing more can be said to a client that is gone. */
void sse_complete(struct sse *s, int64_t ms);
void sse_error(struct sse *s, const char *evalue, const char *why);

/* Release the line buffers (the answer itself ends with the request). */
void sse_end(struct sse *s);

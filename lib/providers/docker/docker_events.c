/* docker_events: the Docker provider's event stream (watch_events):
 * GET /events filtered to our containers' die, pause, unpause and oom,
 * one JSON object a line, handed on as sandbox events. */
#include "providers/docker/docker_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "providers/docker/docker_json.h"
#include "codec/linebuf.h"

#define EVENT_LINE_MAX (64 * 1024)    /* one event; Docker's are < 2 KiB */
#define EVENT_STREAM_MS (3600 * 1000) /* one request; then the caller follows again */

struct watch {
        struct linebuf lb;
        const char *prefix;
        void (*on_event)(void *ud, const struct sandbox_event *ev);
        bool (*stop)(void *ud);
        void *ud;
};

static int watch_line(void *ud, const char *line, size_t len)
{
        struct watch *w = ud;
        struct sandbox_event ev;

        /* a piece of an over-long line (linebuf cuts them) parses as
         * garbage and is skipped like any other non-event */
        if (docker_json_parse_event(line, len, &ev) == 1 && ev.info.sandbox_id[0] &&
            !strcmp(ev.info.prefix, w->prefix))
                w->on_event(w->ud, &ev);
        return 0;
}

static int watch_sink(void *ud, const void *data, size_t len)
{
        struct watch *w = ud;

        return linebuf_feed(&w->lb, data, len, watch_line, w);
}

static int watch_tick(void *ud)
{
        struct watch *w = ud;

        return w->stop(w->ud) ? -ECANCELED : 0;
}

/* GET /events, filtered by Docker to our containers' "die", "pause",
 * "unpause" and "oom": one JSON object per line, streamed for as long as the
 * request lives. */
int docker_watch_events(struct provider *p, const char *prefix,
                        void (*on_event)(void *ud, const struct sandbox_event *ev),
                        bool (*stop)(void *ud), void *ud, char *ret_err)
{
        struct docker *d = impl(p);
        struct watch w = { .lb.max = EVENT_LINE_MAX, .prefix = prefix, .on_event = on_event,
                           .stop = stop, .ud = ud };
        struct http_buf resp = { 0 };
        char filters[512], *path = NULL;
        long status = 0;
        int r;

        snprintf(filters, sizeof(filters),
                 "{\"type\":[\"container\"],\"event\":[\"die\",\"pause\",\"unpause\",\"oom\"],"
                 "\"label\":[\"%s=1\"]}",
                 PROVIDER_LABEL_MANAGED);
        path = docker_path_fmt("/events?filters=%s", filters, NULL);
        struct docker_request req = {
                .method = "GET",
                .path = path,
                .timeout_ms = EVENT_STREAM_MS,
                .max_resp = DOCKER_RESP_MAX,
                .sink = watch_sink,
                .sink_ud = &w,
                .tick = watch_tick,
                .tick_ud = &w,
        };
        r = path ? docker_api_request(d->api, &req, &status, &resp, ret_err) : -ENOMEM;
        if (r == -ECANCELED) {
                r = 0; /* stop() said so */
        } else if (r == 0 && (r = docker_api_status_errno(status)) < 0) {
                docker_json_error_message("events", status, resp.data, ret_err);
        } else if (r == 0) {
                provider_errf(ret_err, "docker: events: the stream ended");
                r = -EPIPE; /* follow again */
        }
        linebuf_release(&w.lb);
        http_buf_release(&resp);
        free(path);
        return r;
}
